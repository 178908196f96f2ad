// `geomx bench comm`: prints push+pull throughput of the parameter server next to a raw ZeroMQ ping-pong measured
// in the same run (bench/comm_bench.h does the measuring), with the ratio. No thresholds: reported, never asserted.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_commands.h"
#include "bench/comm_bench.h"
#include "comm/customer.h"
#include "cli/json_writer.h"

namespace geomx::bench {
using cli::JsonObject;

namespace {

// "4 KiB", "4 MiB", or "1000 B".
std::string SizeLabel(size_t n) {
  if (n >= (size_t{1} << 20) && n % (size_t{1} << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " B";
}

Status WriteJson(const std::string& path, const CommBenchOptions& o,
                 const std::vector<CommBenchRow>& rows) {
  std::string json_rows;
  for (const CommBenchRow& r : rows) {
    JsonObject row;
    row.Add("bytes", static_cast<uint64_t>(r.bytes))
        .Add("iterations", r.iterations)
        .Add("raw_zmq_mb_s", r.raw_zmq_mb_s)
        .Add("raw_poll_mb_s", r.raw_poll_mb_s)
        .Add("kv_mb_s", r.kv_mb_s)
        .Add("ratio", r.ratio)
        .Add("ratio_min", r.ratio_min)
        .Add("ratio_max", r.ratio_max)
        .Add("ratio_blocking", r.ratio_blocking)
        .Add("raw_us_per_roundtrip", r.raw_us_per_roundtrip)
        .Add("raw_poll_us_per_roundtrip", r.raw_poll_us_per_roundtrip)
        .Add("kv_us_per_roundtrip", r.kv_us_per_roundtrip);
    if (!json_rows.empty()) json_rows += ", ";
    json_rows += row.str();
  }
  JsonObject json;
  json.Add("benchmark", "comm").Add("transport", "tcp://127.0.0.1").Add("repeats", o.repeats);
  json.AddRaw("rows", "[" + json_rows + "]");
  std::ofstream out(path);
  out << json.str() << "\n";
  if (!out) return Status::InvalidArgument("--json " + path + ": cannot write");
  return Status::Ok();
}

}  // namespace

Status RunBenchCommCommand(const BenchCommFlags& f) {
  CommBenchOptions o;
  o.sizes = f.sizes;
  o.iterations = f.iterations;
  o.warmup = f.warmup;
  o.repeats = f.repeats;
  std::printf(
      "geomx bench comm: PushPull of one key (KvWorker -> KvServer + SyncAggregator over ZmqVan) against a "
      "raw ZeroMQ PUSH/PULL ping-pong,\ntcp://127.0.0.1, one process, one ZeroMQ I/O thread; MB/s = 2 x "
      "size per round trip / time (10^6 B); medians of %d alternating timings.\nraw: the client blocks in its "
      "receive; raw poll: it waits as KvWorker does (polls up to %d us, then blocks); ratio: KV / raw poll\n",
      f.repeats, comm::Customer::kDefaultSpinUs);
  std::fflush(stdout);
  Result<std::vector<CommBenchRow>> rows = RunCommBench(o);
  if (!rows.ok()) return rows.status().WithContext("bench comm");
  std::printf("\n%8s %10s %9s %10s %9s %7s %12s %11s %9s %11s %9s\n", "size", "iterations", "raw MB/s",
              "poll MB/s", "KV MB/s", "ratio", "ratio range", "vs raw", "raw us/rt", "poll us/rt", "KV us/rt");
  for (const CommBenchRow& r : *rows) {
    char range[32];
    std::snprintf(range, sizeof(range), "%.2f-%.2f", r.ratio_min, r.ratio_max);
    std::printf("%8s %10d %9.1f %10.1f %9.1f %6.2fx %12s %10.2fx %9.1f %11.1f %9.1f\n", SizeLabel(r.bytes).c_str(),
                r.iterations, r.raw_zmq_mb_s, r.raw_poll_mb_s, r.kv_mb_s, r.ratio, range, r.ratio_blocking,
                r.raw_us_per_roundtrip, r.raw_poll_us_per_roundtrip, r.kv_us_per_roundtrip);
  }
  if (!f.json_out.empty()) GEOMX_RETURN_IF_ERROR(WriteJson(f.json_out, o, *rows));
  return Status::Ok();
}

}  // namespace geomx::bench
