// Soak: a long, bounded run of the real two-tier parameter-server path with every role a thread of this process
// over inproc ZeroMQ (`geomx bench soak`, issue 18 item 8): no deadlock, right values every round, resident memory
// flat after warm-up.
//
// The job: `datacentres` data centres of `workers_per_dc` workers and one local server each, one global server,
// the global and the data centres' schedulers and the master worker, all started with the roles of
// algorithms/cluster/roles.h (RunGlobalScheduler, RunScheduler, RunGlobalServer, RunLocalServer, RunMasterWorker)
// over comm::ZmqVan on one shared comm::ZmqContext, at inproc:// endpoints. The workers train no model: each joins
// its data centre with cluster::WorkerSession::Join and runs `rounds` synchronous rounds (sync.mode fsa) of
// link()->PushPull on `keys` dense parameter keys of key_bytes in total, through the real tiers (worker -> local
// server -> global server -> back). The global server's optimizer is plain SGD with lr 1, so after each round it
// answers w <- w - mean(pushed values).
//
// Values (SoakGradient, SoakExpectedWeight): element j (numbered over all keys in key order) starts at
// w0[j] = 0.25 * (j mod 11). In round r worker w of W pushes
//     g = d7(r, j) + d11(r, j) + (w - (W - 1) / 2),   d7 = ((r + j) mod 7) - 3,   d11 = ((r + 3j) mod 11) - 5,
// so the mean over the workers is d7 + d11 (the worker terms sum to zero), every value changes from one round to
// the next, and each d sums to zero over its period: the weights stay within a few units of w0 (exact in f32
// but for the server's 1/W scaling), repeating only every 77 rounds. After n rounds the closed form is
//     w_n[j] = w0[j] - sum_{s<n} d7(s, j) - sum_{s<n} d11(s, j)
// where each sum reduces to its last (n mod period) terms. Every worker checks every element it pulls (the initial
// pull, then every round's answer) against it within kSoakTolerance; a mismatch is counted, the first one kept.
//
// Memory: the process's resident set (/proc/self/statm) is sampled by worker 0 after its initial pull, every
// `sample_every` rounds (at most rounds / 20 apart, at least 1), at the end of the warm-up (the first
// warmup_fraction of the rounds) and after the last round. Drift = (largest sample after the warm-up / the sample
// at its end - 1) in percent.
//
// Deadlock: when no round completes for deadline_ms (every worker's count of finished rounds stays where it is),
// the soak names the round and the workers that did not finish it, stops the workers (they leave their tiers) and
// reports a deadlock; the tiers' rendezvous and request timeouts are 2 x deadline_ms, so the stuck round is named
// first and the blocked requests fail after it, which ends the roles (a worker that fails leaves its tier). If the
// role threads still do not end within 2 x deadline_ms + 10 s after that, they cannot be joined: RunSoak
// prints the report to stderr and ends the process with std::_Exit(1) rather than hang.
//
// Thread-safety: RunSoak blocks its caller and starts and joins its own threads; two soaks may run at once (each
// has its own ZmqContext, so the inproc names do not collide).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::bench {

// Largest |pulled - expected| accepted: the weights are sums of small integers and halves, exact in f32 but for
// the global server's mean (sum x f32(1/W)), whose rounding is far below this; a missing or stale contribution is
// at least 0.5 / W (0.016 for 32 workers) away.
inline constexpr double kSoakTolerance = 1e-3;

// What SoakOptions::on_pull sees.
struct SoakPull {
  int worker = 0;                // global worker index
  int64_t round = 0;             // -1: the initial pull
  std::span<float> pulled;       // all keys, element order; may be changed
  const std::atomic<bool>* stopping = nullptr;  // set once the soak stops its workers (deadlock, Ctrl-C)
};

struct SoakOptions {
  int64_t rounds = 10000;     // synchronous rounds; >= 1
  int datacentres = 4;        // [1, 64]
  int workers_per_dc = 8;     // [1, 256]
  uint64_t key_bytes = 64 << 10;  // f32 bytes pushed (and pulled) per worker and round over all keys; multiple of 4
  int keys = 4;               // dense keys the bytes are spread over (fewer when there are fewer floats); >= 1
  int sample_every = 500;     // rounds between RSS samples (capped at rounds / 20, at least 1)
  double warmup_fraction = 0.1;  // the first this much of the rounds is warm-up; [0, 1)
  double max_drift_percent = 5;  // SoakResult::passed() needs drift_percent <= this
  int deadline_ms = 60000;    // no round completed for this long = deadlock (tiers' timeouts: twice it); >= 1000
  // Test seam: called on every worker's pulled values before they are checked. May be empty. Called concurrently
  // from the workers' threads.
  std::function<void(const SoakPull&)> on_pull;
};

struct SoakMismatch {
  int worker = 0;         // global worker index
  int64_t round = 0;      // -1: the initial pull
  uint64_t element = 0;   // over all keys, in key order
  float got = 0;
  double expected = 0;
};

struct SoakRssSample {
  int64_t round = 0;       // rounds worker 0 had completed
  uint64_t rss_bytes = 0;
};

struct SoakResult {
  int workers = 0;
  int keys = 0;                 // dense keys actually used
  int64_t rounds = 0;           // the rounds asked for
  int64_t rounds_completed = 0;  // rounds every worker completed
  double seconds = 0;           // worker 0: from the end of its initial pull to the end of its last round
  double rounds_per_s = 0;
  uint64_t values_checked = 0;  // elements compared, all workers, the initial pull included
  uint64_t wrong_values = 0;
  std::optional<SoakMismatch> first_wrong;
  std::vector<SoakRssSample> rss;   // in round order
  int64_t warmup_rounds = 0;
  uint64_t rss_warmup_bytes = 0;    // the sample at the end of the warm-up
  uint64_t rss_max_after_bytes = 0;  // the largest sample after it
  double drift_percent = 0;          // rss_max_after_bytes / rss_warmup_bytes - 1, in percent (0 without samples)
  bool deadlock = false;
  int64_t deadlock_round = -1;       // the round that did not complete
  std::string deadlock_report;       // "round N did not complete within S s (workers stuck: ...)"
  bool cancelled = false;            // `interrupted` was set
  std::string role_error;            // the first role that ended with an error: "dc0/worker3: ..." ("" = none)
  double max_drift_percent = 5;      // the limit it was judged against

  // Every round done, no wrong value, no deadlock or role error, drift within the limit.
  bool passed() const;
};

// kInvalidArgument naming the option (the flag) that is out of range; OK otherwise. RunSoak calls it first.
Status ValidateSoakOptions(const SoakOptions& options);

// kInvalidArgument for options out of range (ValidateSoakOptions). Everything else (deadlock, role errors, wrong
// values, drift) is in the result. `interrupted` (may be null): set by Ctrl-C; the workers stop after their
// current round and the result says cancelled.
Result<SoakResult> RunSoak(const SoakOptions& options, const std::atomic<bool>* interrupted);

// The value formulas of the header comment, for the workers and for tests.
float SoakInitialWeight(uint64_t element);
float SoakGradient(int64_t round, int worker, int workers, uint64_t element);
// The weight of `element` after `rounds_applied` rounds (0: the initial weight), in closed form.
double SoakExpectedWeight(int64_t rounds_applied, uint64_t element);

// Compares `pulled` (elements first_element, first_element + 1, ...) with SoakExpectedWeight(rounds_applied, .)
// and returns how many differ by more than kSoakTolerance (NaN counts as wrong). The first one goes to *first
// (with round = rounds_applied - 1 and worker = `worker`) when first is non-null and had no value yet.
uint64_t CountWrongSoakValues(int64_t rounds_applied, uint64_t first_element, std::span<const float> pulled,
                              int worker, std::optional<SoakMismatch>* first);

}  // namespace geomx::bench
