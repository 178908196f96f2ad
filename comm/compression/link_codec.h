// LinkEncoder: what one node sends over one link direction (worker->local server, local->global server, global
// ->local server, local server->worker), per wire key, with the state each key needs (compressor.h).
//
// Schemes (recipe accelerators.links.*, resolved in cli/sync_rules.h):
//   none  kRaw frames (dense f32 inside a compressed tier)
//   fp16  kFp16 for every slice
//   bsc   push links: "bsc" for slices of >= size_lower_bound elements, kRaw below;
//         pull links: "sparse" (lossless non-zeros) for slices >= size_lower_bound, kRaw below
//   mpq   slices < size_lower_bound: kFp16; larger: as bsc on a WAN link, kRaw on a LAN link
//
// Thread-safe: Encode may run concurrently for different wire keys (and is serialised per key).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "comm/compression/compressor.h"

namespace geomx::comm {

enum class LinkScheme : uint8_t { kNone, kFp16, kBsc, kMpq };
// "none" | "fp16" | "bsc" | "mpq"; kInvalidArgument otherwise.
Result<LinkScheme> ParseLinkScheme(std::string_view name);

struct LinkCodecConfig {
  LinkScheme scheme = LinkScheme::kNone;
  bool push = true;   // push links carry gradients/deltas (error feedback); pull links carry aggregates/values
  bool wan = false;   // mpq: large slices sparse only on the WAN
  uint64_t size_lower_bound = 1000;
  CompressorConfig bsc;
};

class LinkEncoder {
 public:
  static Result<std::unique_ptr<LinkEncoder>> Create(const LinkCodecConfig& config);
  ~LinkEncoder();

  // One frame for `values`, the current value of `wire_key` on this link.
  Result<Bytes> Encode(uint64_t wire_key, std::span<const float> values);
  const LinkCodecConfig& config() const { return config_; }

 private:
  struct KeyState;
  explicit LinkEncoder(LinkCodecConfig config);
  const Compressor& For(uint64_t length) const;

  const LinkCodecConfig config_;
  std::unique_ptr<Compressor> raw_, fp16_, large_;
  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<KeyState>> keys_;  // GUARDED_BY(mu_)
};

}  // namespace geomx::comm
