#include "comm/dgt/dgt_assembler.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace geomx::comm {

Status DgtAssembler::Add(int sender, uint64_t key, int64_t round, size_t block, std::span<const float> values,
                         size_t elements, double now_s) {
  const auto sk = std::make_pair(sender, key);
  auto [len, fresh] = elements_.emplace(sk, elements);
  if (!fresh && len->second != elements) {
    return Status::InvalidArgument("dgt: key " + std::to_string(key) + " of node " + std::to_string(sender) +
                                   " had " + std::to_string(len->second) + " values, now " + std::to_string(elements));
  }
  const size_t blocks = (elements + block_elements_ - 1) / block_elements_;
  const size_t begin = block * block_elements_;
  if (block >= blocks || values.size() != std::min(block_elements_, elements - begin)) {
    return Status::InvalidArgument("dgt: block " + std::to_string(block) + " of " + std::to_string(values.size()) +
                                   " values does not fit key " + std::to_string(key) + " of " +
                                   std::to_string(elements) + " values");
  }
  auto closed = closed_through_.find(sk);
  if (closed != closed_through_.end() && round <= closed->second) {  // late: into the next round
    ++late_blocks_;
    if (!carry_late_) return Status::Ok();
    std::vector<float>& c = carry_[sk];
    c.resize(elements, 0.0f);
    for (size_t i = 0; i < values.size(); ++i) c[begin + i] += values[i];
    return Status::Ok();
  }
  // The open round of (sender, key), if any: the first entry of open_ at or after (sender, key, lowest round).
  auto open = open_.lower_bound(Id{sender, key, INT64_MIN});
  if (open != open_.end() && std::get<0>(open->first) == sender && std::get<1>(open->first) == key &&
      std::get<2>(open->first) != round) {
    return Status::OutOfRange("dgt: block of round " + std::to_string(round) + " of key " + std::to_string(key) +
                              " while round " + std::to_string(std::get<2>(open->first)) + " is open");
  }
  Open& o = open_[Id{sender, key, round}];
  if (o.present.empty()) {
    o.values.assign(elements, 0.0f);
    o.present.assign(blocks, false);
  }
  if (o.present[block]) return Status::Ok();  // a duplicate
  std::copy(values.begin(), values.end(), o.values.begin() + static_cast<std::ptrdiff_t>(begin));
  o.present[block] = true;
  ++o.received;
  if (block == blocks - 1) o.end_marker_at = now_s;
  return Status::Ok();
}

std::optional<double> DgtAssembler::DeadlineOf(int sender, uint64_t key, int64_t round) const {
  auto it = open_.find(Id{sender, key, round});
  if (it == open_.end() || it->second.end_marker_at < 0) return std::nullopt;
  return it->second.end_marker_at + deadline_s_;
}

std::optional<std::vector<float>> DgtAssembler::TakeIfReady(int sender, uint64_t key, int64_t round,
                                                            double now_s, std::vector<bool>* delivered) {
  auto it = open_.find(Id{sender, key, round});
  if (it == open_.end()) return std::nullopt;
  Open& o = it->second;
  const bool complete = o.received == o.present.size();
  if (!complete && !(o.end_marker_at >= 0 && now_s - o.end_marker_at >= deadline_s_)) return std::nullopt;
  missing_blocks_ += o.present.size() - o.received;
  if (delivered != nullptr) *delivered = o.present;
  std::vector<float> out = std::move(o.values);
  const auto sk = std::make_pair(sender, key);
  if (auto c = carry_.find(sk); c != carry_.end()) {
    for (size_t i = 0; i < out.size() && i < c->second.size(); ++i) out[i] += c->second[i];
    carry_.erase(c);
  }
  open_.erase(it);
  auto [through, first] = closed_through_.emplace(sk, round);
  if (!first) through->second = std::max(through->second, round);
  return out;
}

}  // namespace geomx::comm
