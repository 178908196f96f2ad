#include "comm/key_layout.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace geomx::comm {

Result<KeyLayout> KeyLayout::Build(const std::vector<KeySpec>& keys, int num_servers, int64_t split_bytes) {
  if (num_servers < 1) return Status::InvalidArgument("key layout: num_servers must be >= 1, got " +
                                                      std::to_string(num_servers));
  if (split_bytes < 4) return Status::InvalidArgument("key layout: split_bytes must be >= 4, got " +
                                                      std::to_string(split_bytes));
  KeyLayout layout;
  layout.num_servers_ = num_servers;
  layout.bytes_per_server_.assign(num_servers, 0);
  const uint64_t split_elems = static_cast<uint64_t>(split_bytes) / 4;

  // Cut keys into slices (independent of the server count).
  std::vector<KeySlice*> all;
  for (const KeySpec& spec : keys) {
    if (spec.key > kMaxKey) {
      return Status::InvalidArgument("key layout: key " + std::to_string(spec.key) + " is >= 2^48");
    }
    auto [it, inserted] = layout.keys_.emplace(spec.key, std::vector<KeySlice>());
    if (!inserted) return Status::InvalidArgument("key layout: duplicate key " + std::to_string(spec.key));
    uint64_t n = 1;
    if (spec.splittable && spec.elems > split_elems) n = (spec.elems + split_elems - 1) / split_elems;
    if (n > (uint64_t{1} << kWireKeySliceBits)) {
      return Status::InvalidArgument("key layout: key " + std::to_string(spec.key) + " (" +
                                     std::to_string(spec.elems) + " elements) needs " + std::to_string(n) +
                                     " slices of split_bytes " + std::to_string(split_bytes) +
                                     "; at most 65536 are addressable");
    }
    // Slice i covers [floor(i * elems / n), floor((i + 1) * elems / n)): lengths differ by at most one.
    std::vector<KeySlice>& slices = it->second;
    slices.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      const auto begin = static_cast<uint64_t>((static_cast<unsigned __int128>(spec.elems) * i) / n);
      const auto end = static_cast<uint64_t>((static_cast<unsigned __int128>(spec.elems) * (i + 1)) / n);
      KeySlice& s = slices[i];
      s.key = spec.key;
      s.slice = static_cast<uint32_t>(i);
      s.wire_key = WireKey(spec.key, s.slice);
      s.offset = begin;
      s.length = end - begin;
    }
  }
  for (auto& [key, slices] : layout.keys_) {
    for (auto& s : slices) all.push_back(&s);
  }

  // Largest first onto the least-loaded server (LPT); ties broken by key and slice for determinism.
  std::sort(all.begin(), all.end(), [](const KeySlice* a, const KeySlice* b) {
    return std::make_tuple(b->length, a->key, a->slice) < std::make_tuple(a->length, b->key, b->slice);
  });
  for (KeySlice* s : all) {
    int best = 0;
    for (int r = 1; r < num_servers; ++r) {
      if (layout.bytes_per_server_[r] < layout.bytes_per_server_[best]) best = r;
    }
    s->server_rank = best;
    layout.bytes_per_server_[best] += s->length * 4;
  }
  return layout;
}

uint64_t KeyLayout::length(uint64_t key) const {
  auto it = keys_.find(key);
  if (it == keys_.end() || it->second.empty()) return 0;
  return it->second.back().offset + it->second.back().length;
}

const std::vector<KeySlice>& KeyLayout::slices(uint64_t key) const {
  static const std::vector<KeySlice> kNone;
  auto it = keys_.find(key);
  return it == keys_.end() ? kNone : it->second;
}

const KeySlice* KeyLayout::FindWireKey(uint64_t wire_key) const {
  auto it = keys_.find(KeyOfWireKey(wire_key));
  if (it == keys_.end()) return nullptr;
  const uint32_t slice = SliceOfWireKey(wire_key);
  return slice < it->second.size() ? &it->second[slice] : nullptr;
}

std::vector<uint64_t> KeyLayout::keys() const {
  std::vector<uint64_t> out;
  out.reserve(keys_.size());
  for (const auto& [k, v] : keys_) out.push_back(k);
  return out;
}

}  // namespace geomx::comm
