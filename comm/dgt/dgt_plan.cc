#include "comm/dgt/dgt_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/base/check.h"

namespace geomx::comm {

Status ValidateDgtOptions(const DgtOptions& o) {
  const std::string p = "accelerators.dgt.";
  if (o.block_elements == 0) return Status::InvalidArgument(p + "block_bytes: must hold at least one float");
  if (!(o.alpha >= 0 && o.alpha < 1)) {
    return Status::InvalidArgument(p + "alpha: must be in [0, 1), got " + std::to_string(o.alpha));
  }
  if (!(o.k0 >= 0 && o.k0 <= 1)) {
    return Status::InvalidArgument(p + "k: must be in [0, 1], got " + std::to_string(o.k0));
  }
  if (!(o.k_min >= 0 && o.k_min <= o.k0)) {
    return Status::InvalidArgument(p + "k_min: must be in [0, k], got " + std::to_string(o.k_min));
  }
  if (o.channels < 1 || o.channels > 7) {
    return Status::InvalidArgument(p + "channels: must be in 1..7, got " + std::to_string(o.channels));
  }
  return Status::Ok();
}

DgtPlanner::DgtPlanner(DgtOptions options) : options_(options), k_(options.k0) {
  GEOMX_CHECK(ValidateDgtOptions(options_).ok()) << ValidateDgtOptions(options_).ToString();
}

void DgtPlanner::SetLoss(double loss) {
  if (!std::isfinite(loss) || loss <= 0) return;
  if (first_loss_ <= 0) first_loss_ = loss;
  if (options_.adaptive_k) k_ = std::max(options_.k0 * loss / first_loss_, static_cast<double>(options_.k_min));
}

size_t DgtPlanner::NumBlocks(size_t elements) const {
  return (elements + options_.block_elements - 1) / options_.block_elements;
}

Result<std::vector<int>> DgtPlanner::Plan(uint64_t key, std::span<const float> values) {
  KeyState& s = keys_[key];
  const size_t blocks = NumBlocks(values.size());
  if (s.contribution.empty()) {
    s.elements = values.size();
    s.contribution.assign(blocks, 0.0f);
  } else if (s.elements != values.size()) {
    return Status::InvalidArgument("dgt: key " + std::to_string(key) + " had " + std::to_string(s.elements) +
                                   " values, now " + std::to_string(values.size()));
  }
  std::vector<int> channel(blocks, kNotSent);
  if (blocks == 0) return channel;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t begin = b * options_.block_elements, end = std::min(values.size(), begin + options_.block_elements);
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += std::fabs(values[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(end - begin));
    s.contribution[b] = options_.alpha * s.contribution[b] + (1 - options_.alpha) * mean;
  }
  const size_t last = blocks - 1;
  channel[last] = 0;
  std::vector<size_t> ranked;
  for (size_t b = 0; b < last; ++b) {
    if (s.contribution[b] > 0) ranked.push_back(b);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return s.contribution[a] > s.contribution[b]; });
  const size_t n = ranked.size();
  const size_t reliable = std::min(n, static_cast<size_t>(std::llround(k_ * static_cast<double>(n))));
  const size_t rest = n - reliable;
  for (size_t j = 0; j < n; ++j) {
    if (j < reliable) {
      channel[ranked[j]] = 0;
    } else {
      const size_t r = j - reliable;  // rank among the unreliable ones, 0..rest-1
      channel[ranked[j]] = 1 + static_cast<int>(r * static_cast<size_t>(options_.channels) / rest);
    }
  }
  return channel;
}

std::vector<float> DgtPlanner::Contributions(uint64_t key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? std::vector<float>() : it->second.contribution;
}

std::vector<float> DgtResidual::Compose(uint64_t key, std::span<const float> values) {
  std::vector<float> out(values.begin(), values.end());
  auto it = residual_.find(key);
  if (it != residual_.end() && it->second.size() == out.size()) {
    for (size_t i = 0; i < out.size(); ++i) out[i] += it->second[i];
    std::fill(it->second.begin(), it->second.end(), 0.0f);
  }
  return out;
}

void DgtResidual::Settle(uint64_t key, std::span<const float> pushed, const std::vector<bool>& delivered,
                         std::span<const float> arrived) {
  std::vector<float>& r = residual_[key];
  r.assign(pushed.size(), 0.0f);
  const bool exact = arrived.size() != pushed.size();
  for (size_t i = 0; i < pushed.size(); ++i) {
    const size_t b = i / block_elements_;
    const bool got = b < delivered.size() && delivered[b];
    r[i] = got ? (exact ? 0.0f : pushed[i] - arrived[i]) : pushed[i];
  }
}

std::span<const float> DgtResidual::residual(uint64_t key) const {
  auto it = residual_.find(key);
  return it == residual_.end() ? std::span<const float>() : std::span<const float>(it->second);
}

}  // namespace geomx::comm
