// ServerOptimizer: a global server's master copy of the model slices it serves and the job's update rule
// (nn::Optimizer::StepKey), shared by the modes whose global server updates weights (fsa with optimizer.where:
// global-server, mixed) and, with an outer rule, by hfa/diloco/esync (averaging.h).
//
// The rule comes from the job description (the master worker's optimizer settings) or is set directly
// (SetRule). Keys get their initial weights once (InitKey); Step() then applies one gradient: the learning rate
// follows the schedule at `round` (per_epoch rounds per epoch, total_rounds planned), and the optimizer's step
// counter (Adam's bias correction) is the largest round + 1 seen.
// Thread-safe (one mutex; steps of different keys are serialised, which the servers' throughput allows).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "algorithms/ps/server_state.h"
#include "engine/base/bytes.h"
#include "engine/base/status.h"
#include "engine/tensor.h"
#include "nn/optim/optimizer.h"

namespace geomx::sync {

class ServerOptimizer final : public ps::ServerState {
 public:
  // `schedule`/`per_epoch`/`total_rounds` drive the learning rate; a constant schedule ignores them.
  ServerOptimizer(nn::LrScheduleConfig schedule, int64_t per_epoch, int64_t total_rounds);

  // Installs the update rule (replacing any earlier one).
  Status SetRule(const nn::OptimizerConfig& config);
  bool has_rule() const;

  // The key's initial weights; ignored when the key already has weights. False when it had some.
  bool InitKey(uint64_t wire_key, std::span<const float> weights);
  bool HasKey(uint64_t wire_key) const;
  // A copy of the key's current weights (kFailedPrecondition when it has none).
  Result<std::vector<float>> Weights(uint64_t wire_key) const;

  // One update of `wire_key` with `grad` (its length must match the key's weights) at `round`, with the scheduled
  // learning rate times `lr_scale`; returns the new weights as dense f32 bytes. kFailedPrecondition without a rule
  // or initial weights.
  Result<Bytes> Step(uint64_t wire_key, std::span<const float> grad, int64_t round, float lr_scale = 1.0f);

  // From now on, once `keys` distinct keys have stepped at a round, the Step of the last of them calls
  // `fn(round)` before it returns (without the lock held): the weights then are those after exactly that round
  // as long as no key steps the next round before the round's answers are out (fsa). Call before any Step.
  void OnRoundComplete(size_t keys, std::function<void(int64_t round)> fn);

  // ps::ServerState: the weights of every key ("<prefix>w/<wire key>"), the rule's per-key state
  // ("<prefix>opt/<name>") and its step counter ("<prefix>step"). Restore needs the same rule installed.
  Status SaveState(const std::string& prefix, ps::StateTensors* out) const override;
  Status RestoreState(const std::string& prefix, const ps::StateTensors& in) override;

 private:
  Result<Bytes> StepLocked(uint64_t wire_key, std::span<const float> grad, int64_t round, float lr_scale,
                           bool* round_complete);

  const nn::LrScheduleConfig schedule_;
  const int64_t per_epoch_;
  const int64_t total_;
  mutable std::mutex mu_;
  std::unique_ptr<nn::Optimizer> optimizer_;  // GUARDED_BY(mu_)
  float base_lr_ = 0;                          // GUARDED_BY(mu_)
  std::map<uint64_t, Tensor> weights_;         // GUARDED_BY(mu_)
  size_t round_keys_ = 0;                      // OnRoundComplete
  std::function<void(int64_t)> round_done_;
  std::map<int64_t, size_t> stepped_;          // GUARDED_BY(mu_): keys stepped per round not yet complete
};

}  // namespace geomx::sync
