// The model-averaging machinery shared by sync.mode hfa, diloco (hfa.cc) and esync (esync.cc)
// (docs/synchronization.md). The round:
//
//   worker      steps its own optimizer (the job's) every iteration; after the round's local steps it
//               PushPulls its parameters (round = its sync index) to its local servers and adopts the answer
//   local srv   SyncAggregator over its workers -> AveragingLocalSink: the mean of the workers' models; on every
//               K2-th sync index (decided from the round number of each key, never from key 0's arrival) it
//               sends (mean - milestone) x workers (num_merged = workers) up to the global servers, adds the
//               global update they answer to its milestone, and answers its workers with the milestone
//   global srv  SyncAggregator over the data centres -> OuterSink: mean delta over all workers, then the outer
//               optimizer on the global model (pseudo-gradient = -mean delta); answers with the update
//               (new global weights - old), which every local server adds to its milestone
//
// diloco's answer with a sparsifying global_to_local link (bsc, mpq's large slices) and exact pushes (none,
// fp16): the outer step with momentum moves every coordinate, so the global server compresses AFTER it with its
// own error feedback: the answer is the top-k of (outer update + the global server's residual) and the rest
// stays in the residual (AnswerSparsifier). The global model then equals every milestone + that residual. hfa
// and esync answer the update whole: without momentum it has the support of the pushes (the union of the data
// centres' selections).
//
// diloco with a sparsifying local_to_global link (SparseLoCo, MomentumInPush): each local server's push encoder
// keeps the error feedback e = momentum x e + delta and sends the top-k of e (bsc with residual_decay =
// sync.outer.momentum, set by the mode's SyncMode::UpperCodec), so the decaying residual plays the outer
// momentum, and the global server steps plain SGD at sync.outer.lr on the mean of the pushes, answering the
// update whole (the union of the selections, as hfa). Slices sent whole (below the link's size_lower_bound)
// have no residual, hence no momentum.
//
// hfa: K1 local steps, K2 local averages per WAN sync, outer SGD with lr 1 (w_g += mean delta). diloco: the same
// with outer Nesterov (sync.outer.lr, sync.outer.momentum). esync: K2 = 1, outer SGD with lr
// sync.esync.global_lr, and each worker's local steps per round decided by the state server.
//
// Initial weights: every worker pulls round kInitRound through its local server, which fetches the global model
// (the master worker's init push) and keeps it as the first milestone: all replicas start from the global
// initial weights. Compression: the local servers' KvLink encodes the deltas (its error feedback keeps what a
// sparse push left out for the next sync); the global aggregator encodes the updates (comm/kv_link.h,
// compression/link_plan.h). Observers: SyncObserver::OnLocalAverage / OnGlobalAverage per (wire key, round).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "algorithms/sync/param_exchange.h"
#include "algorithms/sync/server_optimizer.h"
#include "algorithms/sync/sync_mode.h"
#include "comm/compression/compressor.h"

namespace geomx::sync {

// The global server's outer rule: SGD (momentum 0) or Nesterov, with a constant learning rate.
struct OuterRule {
  float lr = 1.0f;
  float momentum = 0.0f;  // > 0: Nesterov (v = mu v + g; w -= lr (g + mu v))
  // Compress the answer after the outer step with the global server's error feedback when the global tier's
  // answer link sparsifies (diloco); false: the update is answered whole and the link encodes it (hfa, esync).
  bool sparse_answer = false;
  // When the global tier's push sparsifies, the momentum moves into the push's error feedback and the global
  // server steps plain SGD (diloco: SparseLoCo, MomentumInPush).
  bool momentum_in_push = false;
};

// Whether a global tier with `tier`'s codec runs `rule` as SparseLoCo: rule.momentum_in_push and a compressed
// tier whose push sparsifies large slices.
bool MomentumInPush(const OuterRule& rule, const comm::TierCodec& tier);

// The global server's top-k of its answers: for a slice of at least `size_lower_bound` elements, the answer is the
// k = max(1, floor(bsc.ratio x length)) entries of largest |update + residual| (bsc.selection: exact or sampled,
// as the bsc compressor selects, comm/compression/compressor.h), and what is not sent stays in the residual.
// Invariant: the answers sent + the residual == the outer updates. Smaller slices are answered whole.
struct AnswerSparsifier {
  bool enabled = false;
  uint64_t size_lower_bound = 1000;
  comm::CompressorConfig bsc;  // ratio and selection; its momentum is not used
};
// The sparsifier a global server answering on `tier` uses with `rule`: enabled when rule.sparse_answer and the
// tier's answer link sparsifies large slices (bsc; mpq on the WAN), with that link's ratio, selection and bound.
AnswerSparsifier AnswerSparsifierOf(const OuterRule& rule, const comm::TierCodec& tier);

// The global model of the wire keys one global server holds, and the outer optimizer over it. Thread-safe.
class OuterOptimizer final : public ps::ServerState {
 public:
  static Result<std::unique_ptr<OuterOptimizer>> Create(const OuterRule& rule, const AnswerSparsifier& sparsifier = {});
  // The key's initial (global) weights; ignored when it has some.
  void InitKey(uint64_t wire_key, std::span<const float> weights) { opt_.InitKey(wire_key, weights); }
  bool HasKey(uint64_t wire_key) const { return opt_.HasKey(wire_key); }
  Result<std::vector<float>> Weights(uint64_t wire_key) const { return opt_.Weights(wire_key); }
  // One outer step of `wire_key` with the mean model delta of the workers (pseudo-gradient -mean_delta) at sync
  // `round`; returns the answer for the data centres: the update applied to the global weights (new - old), or,
  // with the sparsifier enabled and a slice of at least its bound, the top-k of (update + residual).
  Result<std::vector<float>> Apply(uint64_t wire_key, std::span<const float> mean_delta, int64_t round);
  // What the sparsifier kept back of `wire_key` (zeros of the key's length before its first sparse answer; empty
  // for a key without weights).
  std::vector<float> Residual(uint64_t wire_key) const;

  // ps::ServerState: the global model and the outer optimizer's momentum (ServerOptimizer's entries), and the
  // sparsifier's residual of every key ("<prefix>residual/<wire key>").
  Status SaveState(const std::string& prefix, ps::StateTensors* out) const override;
  Status RestoreState(const std::string& prefix, const ps::StateTensors& in) override;

 private:
  explicit OuterOptimizer(const AnswerSparsifier& sparsifier);
  mutable std::mutex mu_;  // serialises Weights + Step of one Apply
  ServerOptimizer opt_;
  const AnswerSparsifier sparsifier_;
  std::unique_ptr<comm::Compressor> topk_;                // the bsc compressor (momentum 0) when enabled
  std::map<uint64_t, comm::CompressorState> residual_;    // GUARDED_BY(mu_)
};

// The policies of the averaging modes. `k2`: local averages per WAN sync (esync: 1). `overlap` (sync.overlap,
// 0..k2): local averages a WAN sync may take; 0 = the workers wait for the global model at every WAN sync.
// With D > 0 the workers go on from the data-centre mean m_r of WAN sync round r, and the local average of round
// r + D answers its mean + (global model of that sync - m_r): the global update lands D averages late, under the
// workers' progress since (at most one WAN sync per key in flight: D <= k2).
Result<std::unique_ptr<ServerPolicy>> MakeAveragingGlobalServer(const ServerArgs& args, const OuterRule& rule);
Result<std::unique_ptr<ServerPolicy>> MakeAveragingLocalServer(const LocalServerArgs& args, int k2, int overlap = 0);

// The worker side: local steps, then a parameter PushPull per round. Subclasses decide the steps of a round.
// Reports its model after every sync to args.observer when it WantsWorkerModels().
class AveragingWorker : public WorkerSync {
 public:
  explicit AveragingWorker(const WorkerArgs& args)
      : exchange_(args.link, args.model),
        optimizer_(args.optimizer),
        observer_(args.observer),
        worker_index_(args.worker_index) {}
  Status PullInitial(const std::vector<nn::Parameter*>& params) override { return exchange_.PullInitial(params); }
  Status Apply(const std::vector<nn::Parameter*>& params, int64_t iteration) override;
  Status Flush() override { return exchange_.Flush(); }
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
  ParamExchange exchange_;
  nn::Optimizer* optimizer_;
  SyncObserver* const observer_;
  const int worker_index_;
  int64_t sync_index_ = 0;
  int steps_in_round_ = 0;
};

}  // namespace geomx::sync
