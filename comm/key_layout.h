// KeyLayout: which server holds which part of which key (MultiGPS, done right: balanced by bytes).
//
// Input: the application's keys with their sizes in f32 elements. A key larger than `split_bytes` is cut into
// ceil(bytes / split_bytes) contiguous slices of (nearly) equal length; the other keys are one slice. Slice
// boundaries depend only on the key's size and split_bytes, never on the number of servers, so two tiers built
// from the same keys and options cut keys identically (a local server can forward a slice 1:1 to the global tier
// even when the tiers have different server counts). All slices are then placed largest-first onto the
// least-loaded server (ties: lower rank; order ties: lower key, lower slice), which is deterministic.
//
// On the wire a slice is addressed by its wire key: (key << 16) | slice. Keys must be < 2^48.
//
// Immutable value type after Build(); thread-safe to share by const reference.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/base/status.h"

namespace geomx::comm {

inline constexpr int kWireKeySliceBits = 16;
inline constexpr uint64_t kMaxKey = (uint64_t{1} << (64 - kWireKeySliceBits)) - 1;
inline uint64_t WireKey(uint64_t key, uint32_t slice) { return (key << kWireKeySliceBits) | slice; }
inline uint64_t KeyOfWireKey(uint64_t wire_key) { return wire_key >> kWireKeySliceBits; }
inline uint32_t SliceOfWireKey(uint64_t wire_key) {
  return static_cast<uint32_t>(wire_key & ((uint64_t{1} << kWireKeySliceBits) - 1));
}

struct KeySpec {
  uint64_t key = 0;
  uint64_t elems = 0;       // size in f32 elements (for variable-size payloads: an estimate, used for balance)
  bool splittable = true;   // false: never split (row-sparse, concat and other non-dense payloads)
};

struct KeySlice {
  uint64_t key = 0;
  uint32_t slice = 0;
  uint64_t wire_key = 0;
  int server_rank = 0;
  uint64_t offset = 0;      // first element of the key in this slice
  uint64_t length = 0;      // elements in this slice
};

class KeyLayout {
 public:
  KeyLayout() = default;  // empty: no keys, one server

  // kInvalidArgument for: num_servers < 1, split_bytes < 4, a duplicate key, a key >= 2^48, or a key needing
  // more than 65536 slices.
  static Result<KeyLayout> Build(const std::vector<KeySpec>& keys, int num_servers, int64_t split_bytes);

  int num_servers() const { return num_servers_; }
  bool contains(uint64_t key) const { return keys_.count(key) > 0; }
  // Elements of `key` (0 for an unknown key).
  uint64_t length(uint64_t key) const;
  // The slices of `key` in offset order; empty for an unknown key.
  const std::vector<KeySlice>& slices(uint64_t key) const;
  // The slice with this wire key, or null.
  const KeySlice* FindWireKey(uint64_t wire_key) const;
  // Bytes assigned to each server (index = rank).
  const std::vector<uint64_t>& bytes_per_server() const { return bytes_per_server_; }
  // Every key, ascending.
  std::vector<uint64_t> keys() const;

 private:
  int num_servers_ = 1;
  std::map<uint64_t, std::vector<KeySlice>> keys_;
  std::vector<uint64_t> bytes_per_server_ = std::vector<uint64_t>(1, 0);
};

}  // namespace geomx::comm
