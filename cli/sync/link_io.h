// Compressed links for the sync modes (recipe `accelerators`, docs/accelerators.md): what every mode needs to send
// values over a link direction with the scheme ClusterContext::links gives it, and to read what comes back.
//
// Tiers and codecs: a tier's requests carry Meta.codec == comm::kCompressedCodec ("gx") when either of its two
// directions is compressed (ClusterContext::LocalTierCodec / GlobalTierCodec); then EVERY payload of that tier, in
// both directions, is a self-describing frame (comm/compression/compressor.h), even on a direction whose scheme
// is "none" (kRaw frames). A tier with codec "" carries dense f32 exactly as without compression.
//
// Contract for a mode:
//   * sender side of a link: MakeLinkEncoder(ctx, direction). nullptr when that direction's tier is dense
//     (send dense f32 as before). One encoder per sending node and direction; it keeps the per-wire-key state
//     (error-feedback residuals) that push links need, so never share one between two logical senders and never
//     re-create it between rounds.
//   * servers: a tier with codec "gx" aggregates with SyncAggregatorOptions::reducer = "gx_sum" (GxReducerName):
//     it validates every frame and hands the sink the DENSE f32 sum (not a frame). The answer a sink returns
//     (done(OK, value)) must be a frame when the tier is compressed: EncodeAnswer(encoder, wire_key, values).
//     Values stored by a kInitRound push on a "gx" tier are frames: read them with DecodeValue.
//   * workers / upward senders: EncodedKv below wraps a KvWorker for whole-key calls; answers are decoded into
//     dense f32 whatever the tier.
// Thread-safety: LinkEncoder is thread-safe; EncodedKv calls are thread-safe for distinct keys (one call per key
// at a time, as a worker does).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/sync/sync_mode.h"
#include "comm/compression/compressor.h"
#include "comm/compression/link_codec.h"
#include "comm/kv_worker.h"

namespace geomx::cli {

enum class LinkDirection { kWorkerToLocal, kLocalToGlobal, kGlobalToLocal, kLocalToWorker };
const char* LinkDirectionName(LinkDirection d);  // "worker_to_local", ...

// The scheme name of the direction ("none" | "fp16" | "bsc" | "mpq") and whether its tier carries frames.
const std::string& LinkSchemeName(const ClusterContext& ctx, LinkDirection d);
bool LinkTierCompressed(const ClusterContext& ctx, LinkDirection d);
// The encoder config of a direction from recipe.accelerators (ratio, momentum, selection, size_lower_bound;
// push = worker_to_local / local_to_global; wan = local_to_global / global_to_local).
comm::LinkCodecConfig LinkConfig(const ClusterContext& ctx, LinkDirection d);
// nullptr when the direction's tier is dense; else a new encoder for it.
Result<std::unique_ptr<comm::LinkEncoder>> MakeLinkEncoder(const ClusterContext& ctx, LinkDirection d);

// "gx_sum" when `tier_codec` is comm::kCompressedCodec, else `dense_reducer` ("sum").
std::string GxReducerName(const std::string& tier_codec, const std::string& dense_reducer = "sum");

// A server's answer for `wire_key`: dense f32 bytes when `encoder` is null, else the encoder's frame.
Result<Bytes> EncodeAnswer(comm::LinkEncoder* encoder, uint64_t wire_key, std::span<const float> values);
// A received value (answer or stored value) into `out`: dense f32 (exactly out.size() floats) when `compressed`
// is false, else a frame describing out.size() elements. kDataLoss for anything malformed; `out` untouched then.
Status DecodeValue(const Bytes& value, bool compressed, std::span<float> out);
// A received value of unknown length, as dense floats (frame when `compressed`, else f32 bytes).
Result<std::vector<float>> DecodeValue(const Bytes& value, bool compressed);

// Whole-key Push / Pull / PushPull over a KvWorker whose tier may be compressed. With `up` == nullptr (dense
// tier) these are the KvWorker's dense calls; otherwise every slice is encoded with `up` (per wire key), sent
// with codec "gx", and the answers (frames) are decoded into `outs` at the slices' offsets. Example (a worker):
//   GEOMX_ASSIGN_OR_RETURN(auto io, EncodedKv::Create(ctx, args.kv, LinkDirection::kWorkerToLocal));
//   GEOMX_RETURN_IF_ERROR(io->PushPull(keys, grads, outs, round));
// values[i] / outs[i] hold layout().length(keys[i]) floats. Blocking; errors as KvWorker::Wait, plus kDataLoss
// for a malformed answer. `num_merged` is carried as in RawRequest.
class EncodedKv {
 public:
  // `up` == nullptr: the tier is dense. Otherwise requests and answers are frames.
  EncodedKv(comm::KvWorker* kv, std::unique_ptr<comm::LinkEncoder> up);
  // From the context: the encoder of `up_direction` and whether its tier answers in frames.
  static Result<std::unique_ptr<EncodedKv>> Create(const ClusterContext& ctx, comm::KvWorker* kv,
                                                  LinkDirection up_direction);

  Status PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                  std::span<float* const> outs, int64_t round, int num_merged = 1);
  Status Push(std::span<const uint64_t> keys, std::span<const float* const> values, int64_t round,
              int num_merged = 1);
  // Pulls are never encoded (nothing is sent); answers are decoded as for PushPull.
  Status Pull(std::span<const uint64_t> keys, std::span<float* const> outs, int64_t round);

  bool compressed() const { return compressed_; }
  comm::KvWorker* kv() const { return kv_; }
  comm::LinkEncoder* encoder() const { return up_.get(); }

 private:
  Status Raw(comm::Command command, std::span<const uint64_t> keys, std::span<const float* const> values,
             std::span<float* const> outs, int64_t round, int num_merged);

  comm::KvWorker* const kv_;
  const std::unique_ptr<comm::LinkEncoder> up_;
  const bool compressed_;
};

}  // namespace geomx::cli
