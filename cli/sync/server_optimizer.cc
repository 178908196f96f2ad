#include "cli/sync/server_optimizer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "comm/codec.h"

namespace geomx::cli {

std::map<std::string, std::string> OptimizerFields(const nn::OptimizerConfig& c) {
  auto f = [](float v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    return std::string(buf);
  };
  return {{"command", "set-optimizer"}, {"name", c.name},      {"lr", f(c.lr)},       {"weight_decay", f(c.weight_decay)},
          {"momentum", f(c.momentum)},  {"beta1", f(c.beta1)}, {"beta2", f(c.beta2)}, {"rho", f(c.rho)},
          {"eps", f(c.eps)}};
}

Result<nn::OptimizerConfig> OptimizerFromFields(const std::map<std::string, std::string>& f) {
  nn::OptimizerConfig c;
  auto num = [&](const char* k, float* out) -> Status {
    auto it = f.find(k);
    if (it == f.end()) return Status::InvalidArgument(std::string("optimizer settings: missing field ") + k);
    char* end = nullptr;
    *out = std::strtof(it->second.c_str(), &end);
    if (end == it->second.c_str()) return Status::InvalidArgument(std::string("optimizer settings: bad ") + k);
    return Status::Ok();
  };
  auto name = f.find("name");
  if (name == f.end()) return Status::InvalidArgument("optimizer settings: missing field name");
  c.name = name->second;
  GEOMX_RETURN_IF_ERROR(num("lr", &c.lr));
  GEOMX_RETURN_IF_ERROR(num("weight_decay", &c.weight_decay));
  GEOMX_RETURN_IF_ERROR(num("momentum", &c.momentum));
  GEOMX_RETURN_IF_ERROR(num("beta1", &c.beta1));
  GEOMX_RETURN_IF_ERROR(num("beta2", &c.beta2));
  GEOMX_RETURN_IF_ERROR(num("rho", &c.rho));
  GEOMX_RETURN_IF_ERROR(num("eps", &c.eps));
  GEOMX_RETURN_IF_ERROR(nn::ValidateOptimizerConfig(c));
  return c;
}

ServerOptimizer::ServerOptimizer(nn::LrScheduleConfig schedule, int64_t per_epoch, int64_t total_rounds)
    : schedule_(std::move(schedule)), per_epoch_(per_epoch), total_(total_rounds) {}

Status ServerOptimizer::SetRule(const nn::OptimizerConfig& config) {
  GEOMX_ASSIGN_OR_RETURN(auto opt, nn::CreateOptimizer(config));
  std::lock_guard<std::mutex> lock(mu_);
  base_lr_ = config.lr;
  optimizer_ = std::move(opt);
  return Status::Ok();
}

Status ServerOptimizer::OnControl(const comm::KvRequest& req) {
  std::map<std::string, std::string> fields;
  GEOMX_RETURN_IF_ERROR(comm::DecodeFields(req.meta.body, &fields));
  if (fields["command"] != "set-optimizer") {
    return Status::InvalidArgument("unknown control command '" + fields["command"] + "'");
  }
  GEOMX_ASSIGN_OR_RETURN(nn::OptimizerConfig config, OptimizerFromFields(fields));
  return SetRule(config);
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

Result<Bytes> ServerOptimizer::Step(uint64_t wire_key, std::span<const float> grad, int64_t round) {
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
  optimizer_->SetLr(nn::ScheduledLr(schedule_, base_lr_, round, epoch, total_));
  Tensor g = Tensor::Empty(Shape({static_cast<int64_t>(n)}));
  std::memcpy(g.raw_data(), grad.data(), grad.size_bytes());
  optimizer_->StepKey(std::to_string(wire_key), g, &it->second);
  return Bytes::Copy(it->second.raw_data(), n * sizeof(float));
}

}  // namespace geomx::cli
