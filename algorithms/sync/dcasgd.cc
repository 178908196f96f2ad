#include "algorithms/sync/dcasgd.h"

#include <cmath>
#include <string>

namespace geomx::sync {

DcAsgd::DcAsgd(DcAsgdOptions options, int num_senders)
    : options_(options), backup_(static_cast<size_t>(num_senders)) {}

void DcAsgd::InitKey(uint64_t key, std::span<const float> weights) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& per_sender : backup_) per_sender.try_emplace(key, weights.begin(), weights.end());
}

void DcAsgd::Compensate(int sender, uint64_t key, std::span<float> grad, std::span<const float> w_now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sender < 0 || static_cast<size_t>(sender) >= backup_.size()) return;
  auto it = backup_[sender].find(key);
  if (it == backup_[sender].end() || it->second.size() != grad.size() || w_now.size() != grad.size()) return;
  const std::vector<float>& bak = it->second;
  const size_t n = grad.size();
  if (!options_.adaptive) {
    for (size_t i = 0; i < n; ++i) grad[i] += options_.lambda * grad[i] * grad[i] * (w_now[i] - bak[i]);
    return;
  }
  std::vector<float>& ms = mean_square_[key];
  if (ms.size() != n) ms.assign(n, 0.0f);
  const float m = options_.decay;
  for (size_t i = 0; i < n; ++i) {
    const float g = grad[i];
    ms[i] = m * ms[i] + (1.0f - m) * g * g;
    const float lambda_t = options_.lambda / std::sqrt(ms[i] + options_.eps);
    grad[i] = g + lambda_t * g * g * (w_now[i] - bak[i]);
  }
}

void DcAsgd::Record(int sender, uint64_t key, std::span<const float> weights) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sender < 0 || static_cast<size_t>(sender) >= backup_.size()) return;
  backup_[sender][key].assign(weights.begin(), weights.end());
}

std::optional<std::vector<float>> DcAsgd::BackupForTesting(int sender, uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (sender < 0 || static_cast<size_t>(sender) >= backup_.size()) return std::nullopt;
  auto it = backup_[sender].find(key);
  if (it == backup_[sender].end()) return std::nullopt;
  return it->second;
}

Status DcAsgd::SaveState(const std::string& prefix, ps::StateTensors* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t d = 0; d < backup_.size(); ++d) {
    for (const auto& [key, w] : backup_[d]) {
      (*out)[prefix + "bak/" + std::to_string(d) + "/" + std::to_string(key)] = ps::StateVector(w);
    }
  }
  for (const auto& [key, ms] : mean_square_) (*out)[prefix + "ms/" + std::to_string(key)] = ps::StateVector(ms);
  return Status::Ok();
}

Status DcAsgd::RestoreState(const std::string& prefix, const ps::StateTensors& in) {
  std::vector<std::map<uint64_t, std::vector<float>>> backup(backup_.size());
  std::map<uint64_t, std::vector<float>> mean_square;
  for (const auto& [name, t] : in) {
    if (t.dtype() != DType::kF32) continue;
    if (auto key = ps::StateIndexAfter(name, prefix + "ms/")) {
      mean_square[*key] = t.ToFloatVector();
      continue;
    }
    for (size_t d = 0; d < backup.size(); ++d) {
      const std::string head = prefix + "bak/" + std::to_string(d) + "/";
      if (auto key = ps::StateIndexAfter(name, head)) backup[d][*key] = t.ToFloatVector();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  backup_ = std::move(backup);
  mean_square_ = std::move(mean_square);
  return Status::Ok();
}

}  // namespace geomx::sync
