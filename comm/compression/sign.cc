#include "comm/compression/sign.h"

#include <cmath>
#include <memory>

#include "comm/compression/block_frame.h"
#include "comm/compression/codecs.h"
#include "comm/compression/link_codec.h"

namespace geomx::comm {
namespace {

uint64_t BitBytes(uint64_t n) { return block_frame::CeilDiv(n, 8); }

class SignCompressor final : public Compressor {
 public:
  explicit SignCompressor(uint32_t block) : block_(block) {}
  std::string_view name() const override { return "sign"; }

  Result<Bytes> Encode(std::span<const float> g, CompressorState& state) const override {
    const uint64_t n = g.size();
    GEOMX_RETURN_IF_ERROR(block_frame::PrepareResidual("sign", n, state));
    ++state.calls;
    block_frame::Out out = block_frame::Make(FrameKind::kSign, n, block_, BitBytes(n));
    std::vector<float>& v = state.residual;
    for (uint64_t i = 0; i < n; ++i) v[i] += g[i];
    for (uint64_t b0 = 0, b = 0; b0 < n; b0 += block_, ++b) {
      const uint64_t b1 = std::min<uint64_t>(n, b0 + block_);
      double sum = 0;
      for (uint64_t i = b0; i < b1; ++i) sum += std::fabs(static_cast<double>(v[i]));
      const float scale = static_cast<float>(sum / static_cast<double>(b1 - b0));
      std::memcpy(out.scales + 4 * b, &scale, 4);
      for (uint64_t i = b0; i < b1; ++i) {
        const bool neg = std::signbit(v[i]);
        if (neg) out.payload[i / 8] = static_cast<uint8_t>(out.payload[i / 8] | (1u << (i % 8)));
        v[i] -= neg ? -scale : scale;  // error feedback
      }
    }
    return std::move(out.frame);
  }

 private:
  const uint32_t block_;
};

Status Check(const uint8_t* body, uint64_t body_size, uint64_t length) {
  GEOMX_ASSIGN_OR_RETURN(block_frame::View v, block_frame::Check(body, body_size, length, BitBytes));
  if (length % 8 != 0 && (v.payload[length / 8] >> (length % 8)) != 0) {
    return Status::DataLoss("unused bits of the last sign byte are not zero");
  }
  return Status::Ok();
}

void Decode(const uint8_t* body, uint64_t length, float* out) {
  const block_frame::View v = block_frame::Trusted(body, length);
  for (uint64_t b0 = 0, b = 0; b0 < length; b0 += v.block, ++b) {
    const uint64_t b1 = std::min<uint64_t>(length, b0 + v.block);
    const float scale = block_frame::Scale(v, b);
    for (uint64_t i = b0; i < b1; ++i) out[i] = ((v.payload[i / 8] >> (i % 8)) & 1u) ? -scale : scale;
  }
}

Result<std::unique_ptr<Compressor>> MakeSign(const CompressorConfig& c) {
  if (c.sign_block == 0) return Status::InvalidArgument("sign: block size must be at least 1");
  return std::unique_ptr<Compressor>(std::make_unique<SignCompressor>(c.sign_block));
}

const char* SignLinkCompressor(bool, bool, bool small) { return small ? "raw" : "sign"; }

}  // namespace

uint64_t SignFrameBytes(uint64_t elements, uint32_t block) {
  return block_frame::FrameBytes(elements, block, BitBytes(elements));
}

void LinkSignCodec() {}

GEOMX_REGISTER(CompressorRegistry, "sign", MakeSign, "EF-SignSGD: 1 bit per element + mean |v| per block");
static const bool kSignKind [[maybe_unused]] =
    RegisterFrameKind(FrameKindDef{.kind = FrameKind::kSign, .name = "kSign", .check = Check, .decode = Decode});
GEOMX_REGISTER_LINK_SCHEME((LinkSchemeDef{.id = LinkScheme::kSign,
                                          .name = "sign",
                                          .preset_wan = true,
                                          .feedback_answers = true,
                                          .compressor = SignLinkCompressor}));

}  // namespace geomx::comm
