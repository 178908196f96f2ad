#include "cli/sync/link_io.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace geomx::cli {

const char* LinkDirectionName(LinkDirection d) {
  switch (d) {
    case LinkDirection::kWorkerToLocal: return "worker_to_local";
    case LinkDirection::kLocalToGlobal: return "local_to_global";
    case LinkDirection::kGlobalToLocal: return "global_to_local";
    case LinkDirection::kLocalToWorker: return "local_to_worker";
  }
  return "?";
}

const std::string& LinkSchemeName(const ClusterContext& ctx, LinkDirection d) {
  switch (d) {
    case LinkDirection::kWorkerToLocal: return ctx.links.worker_to_local;
    case LinkDirection::kLocalToGlobal: return ctx.links.local_to_global;
    case LinkDirection::kGlobalToLocal: return ctx.links.global_to_local;
    case LinkDirection::kLocalToWorker: return ctx.links.local_to_worker;
  }
  return ctx.links.worker_to_local;
}

bool LinkTierCompressed(const ClusterContext& ctx, LinkDirection d) {
  const bool lan = d == LinkDirection::kWorkerToLocal || d == LinkDirection::kLocalToWorker;
  return !(lan ? ctx.LocalTierCodec() : ctx.GlobalTierCodec()).empty();
}

comm::LinkCodecConfig LinkConfig(const ClusterContext& ctx, LinkDirection d) {
  const AcceleratorsConfig& a = ctx.recipe->accelerators;
  comm::LinkCodecConfig c;
  Result<comm::LinkScheme> scheme = comm::ParseLinkScheme(LinkSchemeName(ctx, d));
  c.scheme = scheme.ok() ? *scheme : comm::LinkScheme::kNone;  // the schema admits only the four names
  c.push = d == LinkDirection::kWorkerToLocal || d == LinkDirection::kLocalToGlobal;
  c.wan = d == LinkDirection::kLocalToGlobal || d == LinkDirection::kGlobalToLocal;
  c.size_lower_bound = static_cast<uint64_t>(std::max<int64_t>(0, a.size_lower_bound));
  c.bsc.ratio = a.bsc_ratio;
  c.bsc.momentum = a.bsc_momentum;
  c.bsc.sampled = a.bsc_selection == "sampled";
  c.bsc.sample_fraction = a.bsc_sample_fraction;
  c.bsc.seed = ctx.recipe->seed;
  return c;
}

Result<std::unique_ptr<comm::LinkEncoder>> MakeLinkEncoder(const ClusterContext& ctx, LinkDirection d) {
  if (!LinkTierCompressed(ctx, d)) return std::unique_ptr<comm::LinkEncoder>();
  Result<std::unique_ptr<comm::LinkEncoder>> e = comm::LinkEncoder::Create(LinkConfig(ctx, d));
  if (!e.ok()) return e.status().WithContext(std::string("accelerators.links.") + LinkDirectionName(d));
  return e;
}

std::string GxReducerName(const std::string& tier_codec, const std::string& dense_reducer) {
  return tier_codec == comm::kCompressedCodec ? std::string("gx_sum") : dense_reducer;
}

Result<Bytes> EncodeAnswer(comm::LinkEncoder* encoder, uint64_t wire_key, std::span<const float> values) {
  if (encoder == nullptr) return Bytes::Copy(values.data(), values.size() * sizeof(float));
  return encoder->Encode(wire_key, values);
}

Status DecodeValue(const Bytes& value, bool compressed, std::span<float> out) {
  if (compressed) return comm::DecodeFrame(value, out);
  if (value.size() != out.size() * sizeof(float)) {
    return Status::DataLoss("dense value of " + std::to_string(value.size()) + " bytes, expected " +
                            std::to_string(out.size()) + " floats");
  }
  if (!out.empty()) std::memcpy(out.data(), value.data(), value.size());
  return Status::Ok();
}

Result<std::vector<float>> DecodeValue(const Bytes& value, bool compressed) {
  uint64_t n = value.size() / sizeof(float);
  if (compressed) {
    GEOMX_ASSIGN_OR_RETURN(n, comm::FrameLength(value));
  }
  std::vector<float> out(n);
  GEOMX_RETURN_IF_ERROR(DecodeValue(value, compressed, out));
  return out;
}

EncodedKv::EncodedKv(comm::KvWorker* kv, std::unique_ptr<comm::LinkEncoder> up)
    : kv_(kv), up_(std::move(up)), compressed_(up_ != nullptr) {}

Result<std::unique_ptr<EncodedKv>> EncodedKv::Create(const ClusterContext& ctx, comm::KvWorker* kv,
                                                     LinkDirection up_direction) {
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<comm::LinkEncoder> up, MakeLinkEncoder(ctx, up_direction));
  return std::make_unique<EncodedKv>(kv, std::move(up));
}

Status EncodedKv::PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                           std::span<float* const> outs, int64_t round, int num_merged) {
  if (!compressed_ && num_merged == 1) return kv_->Wait(kv_->PushPull(keys, values, outs, round));
  return Raw(comm::Command::kPushPull, keys, values, outs, round, num_merged);
}

Status EncodedKv::Push(std::span<const uint64_t> keys, std::span<const float* const> values, int64_t round,
                       int num_merged) {
  if (!compressed_ && num_merged == 1) return kv_->Wait(kv_->Push(keys, values, round));
  return Raw(comm::Command::kPush, keys, values, {}, round, num_merged);
}

Status EncodedKv::Pull(std::span<const uint64_t> keys, std::span<float* const> outs, int64_t round) {
  if (!compressed_) return kv_->Wait(kv_->Pull(keys, outs, round));
  return Raw(comm::Command::kPull, keys, {}, outs, round, 1);
}

Status EncodedKv::Raw(comm::Command command, std::span<const uint64_t> keys, std::span<const float* const> values,
                      std::span<float* const> outs, int64_t round, int num_merged) {
  const comm::KeyLayout& layout = kv_->layout();
  comm::RawRequest req;
  req.command = command;
  req.codec = compressed_ ? comm::kCompressedCodec : "";
  req.round = round;
  req.num_merged = num_merged;
  struct Target {
    float* out;
    uint64_t length;
  };
  std::vector<Target> targets;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!layout.contains(keys[i])) {
      return Status::InvalidArgument("key " + std::to_string(keys[i]) + " is not in the tier's layout");
    }
    for (const comm::KeySlice& s : layout.slices(keys[i])) {
      req.wire_keys.push_back(s.wire_key);
      if (command != comm::Command::kPull) {
        const std::span<const float> slice(values[i] + s.offset, s.length);
        if (compressed_) {
          GEOMX_ASSIGN_OR_RETURN(Bytes frame, up_->Encode(s.wire_key, slice));
          req.payloads.push_back(std::move(frame));
        } else {
          req.payloads.push_back(Bytes::Copy(slice.data(), slice.size() * sizeof(float)));
        }
      }
      if (command != comm::Command::kPush) targets.push_back({outs[i] + s.offset, s.length});
    }
  }
  GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> answers, kv_->RequestRaw(std::move(req)));
  if (command == comm::Command::kPush) return Status::Ok();
  if (answers.size() != targets.size()) {
    return Status::DataLoss("the tier answered " + std::to_string(answers.size()) + " values for " +
                            std::to_string(targets.size()) + " slices");
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    GEOMX_RETURN_IF_ERROR(DecodeValue(answers[i], compressed_, std::span<float>(targets[i].out, targets[i].length))
                              .WithContext("answer for slice " + std::to_string(i)));
  }
  return Status::Ok();
}

}  // namespace geomx::cli
