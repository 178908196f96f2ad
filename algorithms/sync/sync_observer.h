// SyncObserver: what a sync mode's policies report while they run, to whoever passed the observer in (tests count
// WAN synchronisations and ESync's plans with it; a monitor could chart them). One instance per job or test,
// handed down through the role arguments (algorithms/cluster/roles.h RoleEnv::observer), never a process-wide
// hook. Every method has an empty default. Implementations must be thread-safe: servers call them on their
// receive threads, workers on their training threads.
#pragma once

#include <cstdint>
#include <vector>

namespace geomx::sync {

// One round the ESync state server planned.
struct EsyncRoundTrace {
  int64_t round = 0;
  std::vector<double> seconds;  // what every worker reported (seconds per local step; 0 = not measured)
  std::vector<int> steps;       // what the state server answered
};

// A worker's ESync round as it ran: the steps it was told and the local steps it took before pushing.
struct EsyncWorkerTrace {
  int rank = 0;  // worker index over all data centres
  int64_t round = 0;
  int told = 0;
  int taken = 0;
};

class SyncObserver {
 public:
  virtual ~SyncObserver() = default;
  // Averaging modes (hfa, diloco, esync): a global server applied the outer step of `wire_key` for WAN sync
  // `round`; a local server completed the data-centre average of `wire_key` for sync index `round`.
  virtual void OnGlobalAverage(uint64_t wire_key, int64_t round) {
    (void)wire_key;
    (void)round;
  }
  virtual void OnLocalAverage(uint64_t wire_key, int64_t round) {
    (void)wire_key;
    (void)round;
  }
  // Averaging modes: worker `worker_index` (over all data centres) adopted the answer of its sync `sync_index` (its
  // data centre's average or, on a WAN sync, the global model); `weights` are its parameters then, one vector per
  // parameter in TrainableParameters() order (all of them unless model.freeze). Called only when
  // WantsWorkerModels() (copying the model costs a pass over it), after every answer was written into the
  // parameters (with P3 the worker then writes them at once).
  virtual bool WantsWorkerModels() const { return false; }
  virtual void OnWorkerModel(int worker_index, int64_t sync_index, const std::vector<std::vector<float>>& weights) {
    (void)worker_index;
    (void)sync_index;
    (void)weights;
  }
  // ESync: the state server planned a round; a worker finished one.
  virtual void OnEsyncRound(const EsyncRoundTrace& trace) { (void)trace; }
  virtual void OnEsyncWorkerRound(const EsyncWorkerTrace& trace) { (void)trace; }
};

}  // namespace geomx::sync
