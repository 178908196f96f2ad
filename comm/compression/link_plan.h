// LinkPlan: the compression of a whole job, decided once (cli/ builds it from the recipe's `accelerators`,
// docs/accelerators.md) and handed to every role. It says which scheme each of the four link directions uses
// and, per tier, what its senders encode their pushes with and what its servers encode their answers with.
//
// Compression is applied in exactly one place per link: a sender's KvLink (comm/kv_link.h) encodes what it sends
// and decodes what it is answered; a server's aggregator (handlers/sync_aggregator.h, async_aggregator.h) decodes
// what it receives and encodes its answers. Sync modes and algorithms see dense f32 values only.
//
//   worker_to_local   the local tier's push encoder        (workers -> their local servers)
//   local_to_worker   the local tier's answer encoder      (local servers -> their workers)
//   local_to_global   the global tier's push encoder       (local servers -> the global servers)
//   global_to_local   the global tier's answer encoder     (global servers -> the local servers)
//
// A tier is *compressed* (its requests carry Meta.codec kCompressedCodec, every dense payload a self-describing
// frame) when either of its directions uses a scheme other than none. Value types; thread-safe to share.
#pragma once

#include <string>
#include <string_view>

#include "comm/compression/link_codec.h"
#include "engine/base/status.h"

namespace geomx::comm {

// The registered name of `scheme` ("none", "fp16", "bsc", "mpq", "sign", "int8"); "?" when unregistered.
const char* LinkSchemeName(LinkScheme scheme);
// Whether `scheme` on a WAN (`wan`) or LAN link sends its slices of at least size_lower_bound elements as a
// top-k (bsc; mpq on the WAN only).
bool SparsifiesLargeSlices(LinkScheme scheme, bool wan);

struct LinkSchemes {
  LinkScheme worker_to_local = LinkScheme::kNone;
  LinkScheme local_to_global = LinkScheme::kNone;
  LinkScheme global_to_local = LinkScheme::kNone;
  LinkScheme local_to_worker = LinkScheme::kNone;

  bool any() const { return lan() || wan(); }
  bool lan() const { return worker_to_local != LinkScheme::kNone || local_to_worker != LinkScheme::kNone; }
  bool wan() const { return local_to_global != LinkScheme::kNone || global_to_local != LinkScheme::kNone; }
};

// GeoMX's presets (recipe accelerators.compression), each link then overridden by its own value unless "auto":
//   none  every link dense f32
//   bsc   Bi-Sparse between local and global servers (both directions); the LAN dense
//   fp16  FP16 on all four links
//   mpq   mpq on all four links (small tensors FP16; large ones Bi-Sparse on the WAN, f32 on the LAN)
//   sign  EF-SignSGD between local and global servers (both directions); the LAN dense
//   int8  int8 with per-block scales between local and global servers (both directions); the LAN dense
// (each scheme's LinkSchemeDef::preset_lan / preset_wan, link_codec.h).
// kInvalidArgument for an unknown preset or scheme (the recipe schema admits only the known names).
struct LinkOverrides {
  std::string worker_to_local = "auto";
  std::string local_to_global = "auto";
  std::string global_to_local = "auto";
  std::string local_to_worker = "auto";
};
Result<LinkSchemes> ResolveLinkSchemes(std::string_view preset, const LinkOverrides& overrides);

// The parameters every encoder of the job shares.
struct LinkParams {
  uint64_t size_lower_bound = 1000;  // slices below are never sparsified (mpq: FP16)
  CompressorConfig bsc;              // ratio, momentum, selection, seed; sign and int8 block sizes, rounding
};

// One tier's codec. `push` is used by the tier's senders (workers of the tier), `answer` by its servers.
struct TierCodec {
  bool compressed = false;  // Meta.codec kCompressedCodec; false: dense f32 exactly as without compression
  LinkCodecConfig push;
  LinkCodecConfig answer;
};

struct LinkPlan {
  TierCodec local;   // each data centre's tier
  TierCodec global;  // the global tier
};

LinkPlan MakeLinkPlan(const LinkSchemes& schemes, const LinkParams& params);

// The codec a sender uses when it must be lossless on `tier` (the master worker's initial weights): the same
// tier codec with a "none" push scheme (kRaw frames on a compressed tier).
TierCodec LosslessSender(const TierCodec& tier);

}  // namespace geomx::comm
