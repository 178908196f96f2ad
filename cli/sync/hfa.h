// The model-averaging modes (recipe sync.mode hfa, diloco, esync; docs/synchronization.md). They share one shape:
//
//   worker      steps its own optimizer (the recipe's) every iteration; after the round's local steps it
//               PushPulls its parameters (round = its sync index) to its local servers and adopts the answer
//   local srv   SyncAggregator over its workers -> AveragingLocalSink: the mean of the workers' models; on every
//               K2-th sync index (decided from the round number of each key, never from key 0's arrival) it
//               sends (mean - milestone) x workers (num_merged = workers) up to the global servers, adds the
//               global update they answer to its milestone, and answers its workers with the milestone
//   global srv  SyncAggregator over the data centres -> OuterSink: mean delta over all workers, then the outer
//               optimizer on the global model (pseudo-gradient = -mean delta); answers with the update
//               (new global weights - old), which every local server adds to its milestone
//
// hfa: K1 local steps, K2 local averages per WAN sync, outer SGD with lr 1 (w_g += mean delta). diloco: the same
// with outer Nesterov (sync.outer.lr, sync.outer.momentum). esync (cli/sync/esync.h): K2 = 1, outer SGD with lr
// sync.esync.global_lr, and each worker's local steps per round decided by the state server.
//
// Initial weights: every worker pulls round kInitRound through its local server, which fetches the global
// model (the master worker's init push) and keeps it as the first milestone: all replicas start from the
// global initial weights.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "cli/sync/server_optimizer.h"
#include "cli/sync/sync_mode.h"

namespace geomx::cli {

// The global server's outer rule: SGD (momentum 0) or Nesterov, with a constant learning rate.
struct OuterRule {
  float lr = 1.0f;
  float momentum = 0.0f;  // > 0: Nesterov (v = mu v + g; w -= lr (g + mu v))
};
// hfa: {1, 0}; diloco: {sync.outer.lr, sync.outer.momentum}; esync: {sync.esync.global_lr, 0}.
OuterRule OuterRuleOf(const Recipe& recipe);

// The global model of the wire keys one global server holds, and the outer optimizer over it. Thread-safe.
class OuterOptimizer {
 public:
  static Result<std::unique_ptr<OuterOptimizer>> Create(const OuterRule& rule);
  // The key's initial (global) weights; ignored when it has some.
  void InitKey(uint64_t wire_key, std::span<const float> weights) { opt_.InitKey(wire_key, weights); }
  bool HasKey(uint64_t wire_key) const { return opt_.HasKey(wire_key); }
  Result<std::vector<float>> Weights(uint64_t wire_key) const { return opt_.Weights(wire_key); }
  // One outer step of `wire_key` with the mean model delta of the workers (pseudo-gradient -mean_delta) at sync
  // `round`; returns the update applied to the global weights (new - old).
  Result<std::vector<float>> Apply(uint64_t wire_key, std::span<const float> mean_delta, int64_t round);

 private:
  OuterOptimizer();
  std::mutex mu_;  // serialises Weights + Step of one Apply
  ServerOptimizer opt_;
};

// Process-wide counters of the averaging global servers (tests count WAN synchronisations with them).
struct AveragingStats {
  std::atomic<int64_t> wan_syncs{0};      // rounds completed by the global server holding key 0, slice 0
  std::atomic<int64_t> key_syncs{0};      // (wire key, round) completions over all global servers
  std::atomic<int64_t> local_averages{0}; // (wire key, round) completions over all local servers
  void Reset() {
    wan_syncs = 0;
    key_syncs = 0;
    local_averages = 0;
  }
};
AveragingStats& AveragingStatsForTesting();

// The policies of the averaging modes. `k2`: local averages per WAN sync (esync: 1).
Result<std::unique_ptr<ServerPolicy>> MakeAveragingGlobalServer(const ClusterContext& ctx,
                                                                const comm::KeyLayout& layout, const OuterRule& rule);
Result<std::unique_ptr<ServerPolicy>> MakeAveragingLocalServer(const ClusterContext& ctx,
                                                               const comm::KeyLayout& layout,
                                                               const LocalServerArgs& args, int k2);

// The worker side: local steps, then a parameter PushPull per round. Subclasses decide the steps of a round.
class AveragingWorker : public WorkerSync {
 public:
  AveragingWorker(comm::KvWorker* kv, nn::Optimizer* optimizer) : kv_(kv), optimizer_(optimizer) {}
  Status PullInitial(const std::vector<nn::Parameter*>& params) override;
  Status Apply(const std::vector<nn::Parameter*>& params, int64_t iteration) override;
  int64_t syncs() const { return sync_index_; }

 protected:
  // Local steps of the current round (>= 1).
  virtual int StepsThisRound() const = 0;
  // After the round's PushPull (sync_index() already counts it).
  virtual Status AfterSync() { return Status::Ok(); }
  int64_t sync_index() const { return sync_index_; }
  int steps_in_round() const { return steps_in_round_; }
  nn::Optimizer* optimizer() const { return optimizer_; }

 private:
  Status Sync(const std::vector<nn::Parameter*>& params);
  void Prepare(const std::vector<nn::Parameter*>& params);

  comm::KvWorker* kv_;
  nn::Optimizer* optimizer_;
  int64_t sync_index_ = 0;
  int steps_in_round_ = 0;
  std::vector<uint64_t> keys_;
  std::vector<std::vector<float>> buffers_;
  std::vector<float*> outs_;
};

}  // namespace geomx::cli
