// `geomx bench soak`: runs the soak of bench/soak_bench.h and prints its figures (the RSS samples, rounds/s, the
// values checked, the memory drift), optionally as JSON. Exit 1 (a runtime failure) when the soak did not pass:
// a deadlock, a role error, a wrong value or a drift above the limit.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "bench/bench_commands.h"
#include "bench/soak_bench.h"
#include "cli/json_writer.h"

namespace geomx::bench {
using cli::JsonObject;

namespace {

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

Status WriteJson(const std::string& path, const SoakOptions& o, const SoakResult& r) {
  std::string samples;
  for (const SoakRssSample& s : r.rss) {
    JsonObject row;
    row.Add("round", s.round).Add("rss_bytes", s.rss_bytes);
    if (!samples.empty()) samples += ", ";
    samples += row.str();
  }
  JsonObject json;
  json.Add("benchmark", "soak").Add("transport", "inproc ZeroMQ").Add("sync_mode", "fsa");
  json.Add("rounds", o.rounds).Add("datacentres", o.datacentres).Add("workers_per_dc", o.workers_per_dc);
  json.Add("workers", r.workers).Add("keys", r.keys).Add("key_bytes", o.key_bytes);
  json.Add("rounds_completed", r.rounds_completed).Add("seconds", r.seconds).Add("rounds_per_s", r.rounds_per_s);
  json.Add("values_checked", r.values_checked).Add("wrong_values", r.wrong_values);
  if (r.first_wrong) {
    JsonObject w;
    w.Add("worker", r.first_wrong->worker).Add("round", r.first_wrong->round);
    w.Add("element", r.first_wrong->element).Add("got", static_cast<double>(r.first_wrong->got));
    w.Add("expected", r.first_wrong->expected);
    json.Add("first_wrong", w);
  } else {
    json.AddRaw("first_wrong", "null");
  }
  json.Add("warmup_rounds", r.warmup_rounds).Add("rss_warmup_bytes", r.rss_warmup_bytes);
  json.Add("rss_max_after_bytes", r.rss_max_after_bytes).Add("drift_percent", r.drift_percent);
  json.Add("max_drift_percent", r.max_drift_percent);
  json.AddRaw("rss_samples", "[" + samples + "]");
  json.Add("deadlock", r.deadlock).Add("deadlock_round", r.deadlock_round).Add("deadlock_report", r.deadlock_report);
  json.Add("cancelled", r.cancelled).Add("role_error", r.role_error).Add("passed", r.passed());
  std::ofstream out(path);
  out << json.str() << "\n";
  if (!out) return Status::InvalidArgument("--json " + path + ": cannot write");
  return Status::Ok();
}

}  // namespace

Status RunBenchSoakCommand(const BenchSoakFlags& f, const std::atomic<bool>* interrupted) {
  SoakOptions o;
  o.rounds = f.rounds;
  o.datacentres = f.datacentres;
  o.workers_per_dc = f.workers_per_dc;
  o.key_bytes = f.key_bytes;
  o.max_drift_percent = f.max_drift_percent;
  o.deadline_ms = f.deadline_s * 1000;
  // Refuse bad flags before the banner (exit 2, nothing started).
  GEOMX_RETURN_IF_ERROR(ValidateSoakOptions(o).WithContext("bench soak"));
  if (!f.json_out.empty()) {
    std::ofstream probe(f.json_out, std::ios::app);
    if (!probe) return Status::InvalidArgument("--json " + f.json_out + ": cannot write");
  }
  const int workers = f.datacentres * f.workers_per_dc;
  std::printf(
      "geomx bench soak: %d data centres x %d workers (%d workers, %d local servers, 1 global server, the "
      "schedulers and the master worker),\nevery role a thread of this process over inproc ZeroMQ; %lld FSA rounds "
      "of push+pull of %llu bytes per worker through both tiers (SGD lr 1 at the global server);\nevery pulled "
      "value checked; RSS sampled, warm-up = the first 10%% of the rounds; deadlock after %d s without a round\n",
      f.datacentres, f.workers_per_dc, workers, f.datacentres, static_cast<long long>(f.rounds),
      static_cast<unsigned long long>(f.key_bytes), f.deadline_s);
  std::fflush(stdout);
  Result<SoakResult> run = RunSoak(o, interrupted);
  if (!run.ok()) return run.status().WithContext("bench soak");
  const SoakResult& r = *run;

  std::printf("\n%10s %10s\n", "round", "RSS MiB");
  for (const SoakRssSample& s : r.rss) {
    std::printf("%10lld %10.1f%s\n", static_cast<long long>(s.round), MiB(s.rss_bytes),
                s.round == r.warmup_rounds ? "  (end of warm-up)" : "");
  }
  std::printf("\n");
  std::printf("%-16s %lld of %lld\n", "rounds", static_cast<long long>(r.rounds_completed),
              static_cast<long long>(r.rounds));
  std::printf("%-16s %d (%d keys, %llu bytes each way per round)\n", "workers", r.workers, r.keys,
              static_cast<unsigned long long>(o.key_bytes));
  std::printf("%-16s %.1f\n", "seconds", r.seconds);
  std::printf("%-16s %.1f\n", "rounds/s", r.rounds_per_s);
  const double mb_s = r.seconds > 0 ? 2.0 * static_cast<double>(o.key_bytes) * r.workers *
                                          static_cast<double>(r.rounds_completed) / r.seconds / 1e6
                                    : 0.0;
  std::printf("%-16s %.1f\n", "worker MB/s", mb_s);
  std::printf("%-16s %llu of %llu checked\n", "wrong values", static_cast<unsigned long long>(r.wrong_values),
              static_cast<unsigned long long>(r.values_checked));
  if (r.first_wrong) {
    std::printf("%-16s worker %d, round %lld, element %llu: got %.6g, expected %.6g\n", "first wrong",
                r.first_wrong->worker, static_cast<long long>(r.first_wrong->round),
                static_cast<unsigned long long>(r.first_wrong->element), static_cast<double>(r.first_wrong->got),
                r.first_wrong->expected);
  }
  std::printf("%-16s %.1f MiB (round %lld)\n", "RSS warm-up", MiB(r.rss_warmup_bytes),
              static_cast<long long>(r.warmup_rounds));
  std::printf("%-16s %.1f MiB\n", "RSS max after", MiB(r.rss_max_after_bytes));
  std::printf("%-16s %.2f %% (limit %.2f %%)\n", "RSS drift", r.drift_percent, r.max_drift_percent);
  std::printf("%-16s %s\n", "deadlock", r.deadlock ? r.deadlock_report.c_str() : "none");
  if (!r.role_error.empty()) std::printf("%-16s %s\n", "role error", r.role_error.c_str());
  std::printf("%-16s %s\n", "result", r.passed() ? "PASS" : r.cancelled ? "CANCELLED" : "FAIL");
  std::fflush(stdout);
  if (!f.json_out.empty()) GEOMX_RETURN_IF_ERROR(WriteJson(f.json_out, o, r));

  if (r.cancelled) return Status::Cancelled("bench soak: interrupted");
  if (r.deadlock) return Status::DeadlineExceeded("bench soak: deadlock: " + r.deadlock_report);
  if (!r.role_error.empty()) return Status::Internal("bench soak: " + r.role_error);
  if (r.wrong_values > 0) {
    return Status::Internal("bench soak: " + std::to_string(r.wrong_values) + " wrong values");
  }
  if (r.rounds_completed != r.rounds) return Status::Internal("bench soak: not every round completed");
  if (!r.passed()) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "bench soak: resident memory grew %.2f %% after the warm-up (limit %.2f %%)",
                  r.drift_percent, r.max_drift_percent);
    return Status::Internal(buf);
  }
  return Status::Ok();
}

}  // namespace geomx::bench
