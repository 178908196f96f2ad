// LinkEncoder: what one node sends over one link direction (worker->local server, local->global server, global
// ->local server, local server->worker), per wire key, with the state each key needs (compressor.h).
//
// Schemes (recipe accelerators.links.*, resolved in cli/sync_rules.h) are registered, one LinkSchemeDef each
// (GEOMX_REGISTER_LINK_SCHEME, from the scheme's own file), never chosen by a switch:
//   none  kRaw frames (dense f32 inside a compressed tier)
//   fp16  kFp16 for every slice
//   bsc   push links: "bsc" for slices of >= size_lower_bound elements, kRaw below;
//         pull links: "sparse" (lossless non-zeros) for slices >= size_lower_bound, kRaw below
//   mpq   slices < size_lower_bound: kFp16; larger: as bsc on a WAN link, kRaw on a LAN link
//   sign  slices >= size_lower_bound: "sign" (EF-SignSGD, both directions, error feedback kept by the sender);
//         kRaw below (sign.h)
//   int8  slices >= size_lower_bound: "int8" (per-block scales, error feedback); kRaw below (int8.h)
//   powersgd slices >= size_lower_bound: "powersgd" (rank-r factors, warm start, error feedback); kRaw below
//
// Thread-safe: Encode may run concurrently for different wire keys (and is serialised per key).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/compression/compressor.h"

namespace geomx::comm {

enum class LinkScheme : uint8_t { kNone, kFp16, kBsc, kMpq, kSign, kInt8, kPowerSgd };

// One link scheme: its name, what the preset `accelerators.compression: NAME` sets, and which registered
// compressor (compressor.h) encodes a slice. Registered once per scheme during static initialisation.
struct LinkSchemeDef {
  LinkScheme id = LinkScheme::kNone;
  const char* name = "";
  bool preset_lan = false;  // the preset sets worker_to_local and local_to_worker to this scheme
  bool preset_wan = false;  // the preset sets local_to_global and global_to_local to this scheme
  // Whether the sender keeps an error-feedback residual on pull (answer) links too: the answers must then be
  // increments (gradients, deltas, updates) that the receiver adds up, not absolute weights (cli/sync_rules.cc).
  bool feedback_answers = false;
  // The compressor registry name for a slice on a push/pull, WAN/LAN link, below size_lower_bound or not.
  const char* (*compressor)(bool push, bool wan, bool small) = nullptr;
};
// Adds `def` (false when its name or id was taken). Lookups are thread-safe after static initialisation.
bool RegisterLinkScheme(const LinkSchemeDef& def);
// The scheme called `name`, or nullptr.
const LinkSchemeDef* FindLinkScheme(std::string_view name);
// The scheme with `id`, or nullptr when none registered it.
const LinkSchemeDef* LinkSchemeOf(LinkScheme id);
// The registered names, sorted.
std::vector<std::string> LinkSchemeNames();
// A registered name; kInvalidArgument listing the registered ones otherwise.
Result<LinkScheme> ParseLinkScheme(std::string_view name);

struct LinkCodecConfig {
  LinkScheme scheme = LinkScheme::kNone;
  bool push = true;   // push links carry gradients/deltas (error feedback); pull links carry aggregates/values
  bool wan = false;   // mpq: large slices sparse only on the WAN
  uint64_t size_lower_bound = 1000;
  CompressorConfig bsc;  // every compressor's parameters (bsc, sign, int8), despite the name
  uint64_t sender = 0;   // mixed into seeded randomness (int8 stochastic rounding) with the wire key and round
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
  std::unique_ptr<Compressor> small_, large_;  // below / at or above size_lower_bound
  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<KeyState>> keys_;  // GUARDED_BY(mu_)
};

}  // namespace geomx::comm

#define GEOMX_LINK_SCHEME_CONCAT_INNER_(a, b) a##b
#define GEOMX_LINK_SCHEME_CONCAT_(a, b) GEOMX_LINK_SCHEME_CONCAT_INNER_(a, b)
// Registers a LinkSchemeDef during static initialisation (the file must be linked: compression/codecs.cc).
#define GEOMX_REGISTER_LINK_SCHEME(def)                                                                   \
  static const bool GEOMX_LINK_SCHEME_CONCAT_(geomx_link_scheme_, __LINE__) [[maybe_unused]] = \
      ::geomx::comm::RegisterLinkScheme(def)
