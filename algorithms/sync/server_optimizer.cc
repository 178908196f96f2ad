#include "algorithms/sync/server_optimizer.h"

#include <cstring>

namespace geomx::sync {

ServerOptimizer::ServerOptimizer(nn::LrScheduleConfig schedule, int64_t per_epoch, int64_t total_rounds)
    : schedule_(std::move(schedule)), per_epoch_(per_epoch), total_(total_rounds) {}

Status ServerOptimizer::SetRule(const nn::OptimizerConfig& config) {
  GEOMX_ASSIGN_OR_RETURN(auto opt, nn::CreateOptimizer(config));
  std::lock_guard<std::mutex> lock(mu_);
  base_lr_ = config.lr;
  optimizer_ = std::move(opt);
  return Status::Ok();
}

bool ServerOptimizer::has_rule() const {
  std::lock_guard<std::mutex> lock(mu_);
  return optimizer_ != nullptr;
}

bool ServerOptimizer::InitKey(uint64_t wire_key, std::span<const float> weights) {
  std::lock_guard<std::mutex> lock(mu_);
  if (weights_.count(wire_key)) return false;
  Tensor w = Tensor::Empty(Shape({static_cast<int64_t>(weights.size())}));
  std::memcpy(w.raw_data(), weights.data(), weights.size_bytes());
  weights_.emplace(wire_key, std::move(w));
  return true;
}

bool ServerOptimizer::HasKey(uint64_t wire_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return weights_.count(wire_key) > 0;
}

Result<std::vector<float>> ServerOptimizer::Weights(uint64_t wire_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = weights_.find(wire_key);
  if (it == weights_.end()) {
    return Status::FailedPrecondition("key " + std::to_string(wire_key) + " has no initial weights");
  }
  const float* p = it->second.data<float>();
  return std::vector<float>(p, p + it->second.numel());
}

void ServerOptimizer::OnRoundComplete(size_t keys, std::function<void(int64_t round)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  round_keys_ = keys;
  round_done_ = std::move(fn);
}

Result<Bytes> ServerOptimizer::Step(uint64_t wire_key, std::span<const float> grad, int64_t round, float lr_scale) {
  bool round_complete = false;
  Result<Bytes> value = StepLocked(wire_key, grad, round, lr_scale, &round_complete);
  if (round_complete) round_done_(round);
  return value;
}

Result<Bytes> ServerOptimizer::StepLocked(uint64_t wire_key, std::span<const float> grad, int64_t round,
                                          float lr_scale, bool* round_complete) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!optimizer_) return Status::FailedPrecondition("no optimizer settings from the master worker yet");
  auto it = weights_.find(wire_key);
  if (it == weights_.end()) {
    return Status::FailedPrecondition("key " + std::to_string(wire_key) + " has no initial weights");
  }
  const size_t n = static_cast<size_t>(it->second.numel());
  if (grad.size() != n) {
    return Status::InvalidArgument("key " + std::to_string(wire_key) + ": gradient of " +
                                   std::to_string(grad.size()) + " elements for " + std::to_string(n) + " weights");
  }
  while (optimizer_->step() < round + 1) optimizer_->AdvanceStep();  // Adam's bias correction counts rounds
  const int epoch = per_epoch_ > 0 ? static_cast<int>(round / per_epoch_) : 0;
  optimizer_->SetLr(lr_scale * nn::ScheduledLr(schedule_, base_lr_, round, epoch, total_));
  Tensor g = Tensor::Empty(Shape({static_cast<int64_t>(n)}));
  std::memcpy(g.raw_data(), grad.data(), grad.size_bytes());
  optimizer_->StepKey(std::to_string(wire_key), g, &it->second);
  if (round_done_ && ++stepped_[round] == round_keys_) {
    stepped_.erase(round);
    *round_complete = true;
  }
  return Bytes::Copy(it->second.raw_data(), n * sizeof(float));
}

Status ServerOptimizer::SaveState(const std::string& prefix, ps::StateTensors* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, w] : weights_) (*out)[prefix + "w/" + std::to_string(key)] = w.Clone();
  if (optimizer_) {
    for (const auto& [name, t] : optimizer_->StateDict()) (*out)[prefix + "opt/" + name] = t.Clone();
    (*out)[prefix + "step"] = ps::StateScalar(optimizer_->step());
  }
  return Status::Ok();
}

Status ServerOptimizer::RestoreState(const std::string& prefix, const ps::StateTensors& in) {
  std::map<uint64_t, Tensor> weights;
  std::map<std::string, Tensor> opt_state;
  const std::string w_prefix = prefix + "w/", o_prefix = prefix + "opt/";
  for (const auto& [name, t] : in) {
    if (name.rfind(w_prefix, 0) == 0) {
      const std::optional<uint64_t> key = ps::StateIndexAfter(name, w_prefix);
      if (!key || t.dtype() != DType::kF32) return Status::DataLoss("server state: bad weights entry " + name);
      weights[*key] = t.Clone();
    } else if (name.rfind(o_prefix, 0) == 0) {
      opt_state[name.substr(o_prefix.size())] = t.Clone();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (optimizer_) {
    GEOMX_ASSIGN_OR_RETURN(int64_t step, ps::StateScalarOf(in, prefix + "step"));
    GEOMX_RETURN_IF_ERROR(optimizer_->LoadState(opt_state, step));
  } else if (!opt_state.empty()) {
    return Status::FailedPrecondition("server state: optimizer state but no rule installed");
  }
  weights_ = std::move(weights);
  return Status::Ok();
}

}  // namespace geomx::sync
