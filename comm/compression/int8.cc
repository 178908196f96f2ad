#include "comm/compression/int8.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "comm/compression/block_frame.h"
#include "comm/compression/codecs.h"
#include "comm/compression/link_codec.h"

namespace geomx::comm {
namespace {

uint64_t CodeBytes(uint64_t n) { return n; }

class Int8Compressor final : public Compressor {
 public:
  explicit Int8Compressor(const CompressorConfig& c) : c_(c) {}
  std::string_view name() const override { return "int8"; }

  Result<Bytes> Encode(std::span<const float> g, CompressorState& state) const override {
    const uint64_t n = g.size();
    GEOMX_RETURN_IF_ERROR(block_frame::PrepareResidual("int8", n, state));
    const uint64_t round = state.calls++;
    const uint64_t base = MixBits(c_.seed ^ MixBits(state.stream ^ MixBits(round + 1)));
    const uint32_t block = c_.int8_block;
    block_frame::Out out = block_frame::Make(FrameKind::kInt8, n, block, CodeBytes(n));
    std::vector<float>& v = state.residual;
    for (uint64_t i = 0; i < n; ++i) v[i] += g[i];
    for (uint64_t b0 = 0, b = 0; b0 < n; b0 += block, ++b) {
      const uint64_t b1 = std::min<uint64_t>(n, b0 + block);
      float m = 0.0f;
      bool finite = true;
      for (uint64_t i = b0; i < b1; ++i) {
        finite = finite && std::isfinite(v[i]);
        m = std::max(m, std::fabs(v[i]));
      }
      const float scale = finite ? m / 127.0f : std::numeric_limits<float>::quiet_NaN();
      std::memcpy(out.scales + 4 * b, &scale, 4);
      if (!finite || scale == 0.0f) {
        if (!finite) {
          for (uint64_t i = b0; i < b1; ++i) v[i] = std::numeric_limits<float>::quiet_NaN();
        }
        continue;  // codes stay 0
      }
      for (uint64_t i = b0; i < b1; ++i) {
        const float x = v[i] / scale;
        float q;
        if (c_.int8_stochastic) {
          const float lo = std::floor(x);
          const float u = static_cast<float>(MixBits(base + i) >> 40) * 0x1.0p-24f;  // [0, 1), 24 bits
          q = lo + (u < x - lo ? 1.0f : 0.0f);
        } else {
          q = std::round(x);
        }
        q = std::clamp(q, -127.0f, 127.0f);
        const int8_t code = static_cast<int8_t>(q);
        out.payload[i] = static_cast<uint8_t>(code);
        v[i] -= static_cast<float>(code) * scale;  // error feedback
      }
    }
    return std::move(out.frame);
  }

 private:
  const CompressorConfig c_;
};

Status Check(const uint8_t* body, uint64_t body_size, uint64_t length) {
  GEOMX_ASSIGN_OR_RETURN(block_frame::View v, block_frame::Check(body, body_size, length, CodeBytes));
  for (uint64_t i = 0; i < length; ++i) {
    if (static_cast<int8_t>(v.payload[i]) == -128) {
      return Status::DataLoss("int8 code -128 at element " + std::to_string(i) + " (codes are in [-127, 127])");
    }
  }
  return Status::Ok();
}

void Decode(const uint8_t* body, uint64_t length, float* out) {
  const block_frame::View v = block_frame::Trusted(body, length);
  for (uint64_t b0 = 0, b = 0; b0 < length; b0 += v.block, ++b) {
    const uint64_t b1 = std::min<uint64_t>(length, b0 + v.block);
    const float scale = block_frame::Scale(v, b);
    for (uint64_t i = b0; i < b1; ++i) out[i] = static_cast<float>(static_cast<int8_t>(v.payload[i])) * scale;
  }
}

Result<std::unique_ptr<Compressor>> MakeInt8(const CompressorConfig& c) {
  if (c.int8_block == 0) return Status::InvalidArgument("int8: block size must be at least 1");
  return std::unique_ptr<Compressor>(std::make_unique<Int8Compressor>(c));
}

const char* Int8LinkCompressor(bool, bool, bool small) { return small ? "raw" : "int8"; }

}  // namespace

uint64_t Int8FrameBytes(uint64_t elements, uint32_t block) {
  return block_frame::FrameBytes(elements, block, CodeBytes(elements));
}

void LinkInt8Codec() {}

GEOMX_REGISTER(CompressorRegistry, "int8", MakeInt8, "int8 with per-block scales max|v|/127 and error feedback");
static const bool kInt8Kind [[maybe_unused]] =
    RegisterFrameKind(FrameKindDef{.kind = FrameKind::kInt8, .name = "kInt8", .check = Check, .decode = Decode});
GEOMX_REGISTER_LINK_SCHEME((LinkSchemeDef{.id = LinkScheme::kInt8,
                                          .name = "int8",
                                          .preset_wan = true,
                                          .feedback_answers = true,
                                          .compressor = Int8LinkCompressor}));

}  // namespace geomx::comm
