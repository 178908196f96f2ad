#include "comm/compression/link_codec.h"

#include <utility>

namespace geomx::comm {

Result<LinkScheme> ParseLinkScheme(std::string_view name) {
  if (name == "none") return LinkScheme::kNone;
  if (name == "fp16") return LinkScheme::kFp16;
  if (name == "bsc") return LinkScheme::kBsc;
  if (name == "mpq") return LinkScheme::kMpq;
  return Status::InvalidArgument("link scheme '" + std::string(name) + "' (expected none, fp16, bsc or mpq)");
}

struct LinkEncoder::KeyState {
  std::mutex mu;
  CompressorState state;  // GUARDED_BY(mu)
};

LinkEncoder::LinkEncoder(LinkCodecConfig config) : config_(std::move(config)) {}
LinkEncoder::~LinkEncoder() = default;

Result<std::unique_ptr<LinkEncoder>> LinkEncoder::Create(const LinkCodecConfig& config) {
  auto e = std::unique_ptr<LinkEncoder>(new LinkEncoder(config));
  GEOMX_ASSIGN_OR_RETURN(e->raw_, MakeCompressor("raw", config.bsc));
  GEOMX_ASSIGN_OR_RETURN(e->fp16_, MakeCompressor("fp16", config.bsc));
  // The compressor of large slices (bsc / mpq): sparsifying on pushes, lossless non-zeros on pulls.
  const bool sparse_large =
      config.scheme == LinkScheme::kBsc || (config.scheme == LinkScheme::kMpq && config.wan);
  if (sparse_large) {
    GEOMX_ASSIGN_OR_RETURN(e->large_, MakeCompressor(config.push ? "bsc" : "sparse", config.bsc));
  }
  return e;
}

const Compressor& LinkEncoder::For(uint64_t length) const {
  const bool small = length < config_.size_lower_bound;
  switch (config_.scheme) {
    case LinkScheme::kNone:
      return *raw_;
    case LinkScheme::kFp16:
      return *fp16_;
    case LinkScheme::kBsc:
      return small ? *raw_ : *large_;
    case LinkScheme::kMpq:
      if (small) return *fp16_;
      return large_ ? *large_ : *raw_;
  }
  return *raw_;
}

Result<Bytes> LinkEncoder::Encode(uint64_t wire_key, std::span<const float> values) {
  std::shared_ptr<KeyState> ks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<KeyState>& slot = keys_[wire_key];
    if (!slot) slot = std::make_shared<KeyState>();
    ks = slot;
  }
  std::lock_guard<std::mutex> lock(ks->mu);
  Result<Bytes> frame = For(values.size()).Encode(values, ks->state);
  if (!frame.ok()) return frame.status().WithContext("wire key " + std::to_string(wire_key));
  return frame;
}

}  // namespace geomx::comm
