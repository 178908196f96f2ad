#include "comm/compression/sign.h"

#include <bit>
#include <cmath>
#include <cstring>
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
    // The bits first (a set bit: the sign bit of v, so -0.0 and negative NaNs count as negative), eight values per
    // byte without branches: the signs of a gradient are random, and a branch per value mispredicts half the time.
    const uint64_t full = n / 8;
    for (uint64_t j = 0; j < full; ++j) {
      uint32_t byte = 0;
      for (uint32_t k = 0; k < 8; ++k) byte |= static_cast<uint32_t>(std::signbit(v[8 * j + k])) << k;
      out.payload[j] = static_cast<uint8_t>(byte);
    }
    for (uint64_t i = 8 * full; i < n; ++i) {
      out.payload[i / 8] = static_cast<uint8_t>(out.payload[i / 8] | (std::signbit(v[i]) ? 1u << (i % 8) : 0u));
    }
    for (uint64_t b0 = 0, b = 0; b0 < n; b0 += block_, ++b) {
      const uint64_t b1 = std::min<uint64_t>(n, b0 + block_);
      double sum = 0;
      for (uint64_t i = b0; i < b1; ++i) sum += std::fabs(static_cast<double>(v[i]));
      const float scale = static_cast<float>(sum / static_cast<double>(b1 - b0));
      std::memcpy(out.scales + 4 * b, &scale, 4);
      // Error feedback: v minus what was sent, +scale where the bit is clear and -scale where it is set.
      for (uint64_t i = b0; i < b1; ++i) v[i] -= std::copysign(scale, v[i]);
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
    // -scale where the bit is set: the sign bit flipped, without a branch (the bits are random).
    const uint32_t scale = std::bit_cast<uint32_t>(block_frame::Scale(v, b));
    for (uint64_t i = b0; i < b1; ++i) {
      const uint32_t bit = (static_cast<uint32_t>(v.payload[i / 8]) >> (i % 8)) & 1u;
      out[i] = std::bit_cast<float>(scale ^ (bit << 31));
    }
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
