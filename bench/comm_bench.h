// CommBench: push+pull throughput of the parameter server next to a raw ZeroMQ ping-pong, measured in the same
// run over tcp://127.0.0.1 with real sockets, every party a thread of this process (`geomx bench comm`, issue 3).
//
//   raw  one thread sends N bytes on a PUSH socket (zero-copy, as ZmqVan sends data frames); an echo thread
//        receives them on a PULL socket and sends the received message back (zero-copy) on its own PUSH socket.
//        Timed twice: the client blocks in its receive (ZeroMQ's plain use), and the client waits as KvWorker::Wait
//        does (polls for up to Customer::kDefaultSpinUs, then blocks). The ratio is against the second: the same
//        waiting on both sides, so it shows what the parameter server's own path costs.
//   kv   a one-tier parameter server over ZmqVan: a Scheduler, a server (KvServer + SyncAggregator, one expected
//        sender, IdentitySink: the answer is the pushed value) and a worker (KvWorker). Each round is one
//        PushPull of one key of N/4 floats (zero-copy Bytes overload) waited for with Wait: N bytes out, N back.
//
// All share one ZeroMQ context (the same I/O threads). Throughput = 2 * N bytes per round trip / time, in MB/s
// (10^6 bytes per second). Raw, raw polling and kv are timed alternately, back to back, `repeats` times per size:
// the throughputs are the medians of each path's timings and the ratios are medians of the per-repeat ratios, so
// a burst of load from other processes hits both sides of a comparison. Nothing is asserted: the numbers are
// reported (docs/benchmarks.md).
//
// Not thread-safe to run two at once on the same ports (each run binds its own free ports, so it is safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/base/status.h"

namespace geomx::bench {

struct CommBenchOptions {
  std::vector<size_t> sizes = {4096, 4u << 20};  // bytes sent (and received) per round trip; multiples of 4, >= 4
  int iterations = 0;  // timed round trips per size, path and repeat; 0 = by size: 200 MiB / size in [20, 2000]
  int warmup = -1;     // untimed round trips before each timing; -1 = iterations / 10, at least 2
  int repeats = 5;     // timings per size and path (alternating raw, kv); the medians are reported; >= 1
  int io_threads = 1;  // ZeroMQ I/O threads of the shared context (ZmqContext's default)
  // KeyLayout split_bytes of the kv tier. The default never splits the benchmark's key (one data frame per
  // message, like the raw side); 1 << 20 (CommOptions' default) measures MultiGPS slicing into 1 MiB frames.
  int64_t split_bytes = int64_t{1} << 30;
  int timeout_ms = 30000;  // bound on rendezvous, every request and every raw round trip; a hang becomes an error
};

struct CommBenchRow {
  size_t bytes = 0;          // N: bytes each way per round trip
  double raw_zmq_mb_s = 0;   // 2 * N * iterations / seconds / 1e6, raw ZeroMQ ping-pong, blocking receive (median)
  double raw_poll_mb_s = 0;  // the same, the client waiting as KvWorker::Wait does (polls, then blocks)
  double kv_mb_s = 0;        // the same for KvWorker::PushPull + Wait (median)
  // kv throughput / raw throughput with the same wait (raw_poll): the median over repeats of raw_seconds /
  // kv_seconds of each back-to-back pair of timings (robust to load that comes and goes; equal to kv_mb_s /
  // raw_poll_mb_s on a quiet machine).
  double ratio = 0;
  double ratio_min = 0;  // the spread of those per-repeat ratios
  double ratio_max = 0;
  double ratio_blocking = 0;  // the same median against the blocking raw client (raw_zmq_mb_s)
  double raw_us_per_roundtrip = 0;  // microseconds per round trip (median timing)
  double raw_poll_us_per_roundtrip = 0;
  double kv_us_per_roundtrip = 0;
  int iterations = 0;  // timed round trips per timing (after resolving the 0 default)
};

// One row per options.sizes entry, in order. kInvalidArgument for bad options (empty sizes, a size not a positive
// multiple of 4, repeats < 1, iterations < 0); otherwise the first transport or protocol error (a bind failure, a
// timeout naming what did not answer, a kv answer that differs from what was pushed). Shuts everything down
// (Finalize, scheduler joined, sockets closed) before returning, on success and on error, within about
// options.timeout_ms. Blocks the caller; starts and joins its own threads.
Result<std::vector<CommBenchRow>> RunCommBench(const CommBenchOptions& options);

}  // namespace geomx::bench
