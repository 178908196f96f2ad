#include "comm/compression/powersgd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "comm/compression/block_frame.h"
#include "comm/compression/codecs.h"
#include "comm/compression/link_codec.h"

namespace geomx::comm {
namespace {

constexpr uint64_t kPrefixBytes = 16;  // u32 rows, cols, rank, reserved

uint64_t Rank(uint64_t rank, uint64_t rows, uint64_t cols) { return std::min({rank, rows, cols}); }

void PutU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint32_t GetU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Orthonormalises the r columns of the rows x r row-major matrix `p` in place (modified Gram-Schmidt, in double);
// a column whose remainder is (numerically) zero becomes zero.
void Orthonormalise(std::vector<float>& p, uint64_t rows, uint64_t r) {
  std::vector<double> col(rows);
  for (uint64_t k = 0; k < r; ++k) {
    for (uint64_t i = 0; i < rows; ++i) col[i] = p[i * r + k];
    for (uint64_t j = 0; j < k; ++j) {
      double dot = 0;
      for (uint64_t i = 0; i < rows; ++i) dot += col[i] * p[i * r + j];
      for (uint64_t i = 0; i < rows; ++i) col[i] -= dot * p[i * r + j];
    }
    double norm = 0;
    for (double v : col) norm += v * v;
    norm = std::sqrt(norm);
    const double inv = norm > 1e-20 ? 1.0 / norm : 0.0;
    for (uint64_t i = 0; i < rows; ++i) p[i * r + k] = static_cast<float>(col[i] * inv);
  }
}

class PowerSgdCompressor final : public Compressor {
 public:
  PowerSgdCompressor(uint32_t rank, uint64_t seed) : rank_(rank), seed_(seed) {}
  std::string_view name() const override { return "powersgd"; }

  Result<Bytes> Encode(std::span<const float> g, CompressorState& state) const override {
    const uint64_t n = g.size();
    GEOMX_RETURN_IF_ERROR(block_frame::PrepareResidual("powersgd", n, state));
    uint64_t rows = 0, cols = 0;
    PowerSgdShape(n, &rows, &cols);
    const uint64_t r = Rank(rank_, rows, cols);
    std::vector<float>& m = state.residual;  // becomes M = g + residual, then the new residual
    for (uint64_t i = 0; i < n; ++i) m[i] += g[i];
    std::vector<float>& q = state.momentum;  // cols x r, kept between calls
    if (q.size() != cols * r) {
      std::mt19937_64 rng(MixBits(seed_ ^ MixBits(state.stream)));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      q.resize(cols * r);
      for (float& v : q) v = normal(rng);
    }
    ++state.calls;
    auto at = [&](uint64_t row, uint64_t col) -> float {
      const uint64_t i = row * cols + col;
      return i < n ? m[i] : 0.0f;
    };
    // P = M Q, orthonormalised.
    std::vector<float> p(rows * r, 0.0f);
    for (uint64_t i = 0; i < rows; ++i) {
      for (uint64_t j = 0; j < cols; ++j) {
        const float v = at(i, j);
        if (v == 0.0f) continue;
        for (uint64_t k = 0; k < r; ++k) p[i * r + k] += v * q[j * r + k];
      }
    }
    Orthonormalise(p, rows, r);
    // Q = M^T P.
    std::fill(q.begin(), q.end(), 0.0f);
    for (uint64_t i = 0; i < rows; ++i) {
      for (uint64_t j = 0; j < cols; ++j) {
        const float v = at(i, j);
        if (v == 0.0f) continue;
        for (uint64_t k = 0; k < r; ++k) q[j * r + k] += v * p[i * r + k];
      }
    }
    // residual = M - P Q^T (error feedback).
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t row = i / cols, col = i % cols;
      float d = 0.0f;
      for (uint64_t k = 0; k < r; ++k) d += p[row * r + k] * q[col * r + k];
      m[i] -= d;
    }
    Bytes frame = NewFrame(FrameKind::kPowerSgd, n, kPrefixBytes + 4 * r * (rows + cols));
    uint8_t* body = frame.mutable_data() + kFrameHeaderBytes;
    PutU32(body, static_cast<uint32_t>(rows));
    PutU32(body + 4, static_cast<uint32_t>(cols));
    PutU32(body + 8, static_cast<uint32_t>(r));
    std::memcpy(body + kPrefixBytes, p.data(), 4 * p.size());
    std::memcpy(body + kPrefixBytes + 4 * p.size(), q.data(), 4 * q.size());
    return frame;
  }

 private:
  const uint32_t rank_;
  const uint64_t seed_;
};

Status Check(const uint8_t* body, uint64_t body_size, uint64_t length) {
  if (body_size < kPrefixBytes) {
    return Status::DataLoss("powersgd body of " + std::to_string(body_size) + " bytes is shorter than its prefix");
  }
  const uint64_t rows = GetU32(body), cols = GetU32(body + 4), r = GetU32(body + 8);
  if (GetU32(body + 12) != 0) return Status::DataLoss("powersgd: reserved prefix bytes are not zero");
  uint64_t want_rows = 0, want_cols = 0;
  PowerSgdShape(length, &want_rows, &want_cols);
  if (rows != want_rows || cols != want_cols) {
    return Status::DataLoss("powersgd: shape " + std::to_string(rows) + " x " + std::to_string(cols) + " for " +
                            std::to_string(length) + " elements, expected " + std::to_string(want_rows) + " x " +
                            std::to_string(want_cols));
  }
  if (r == 0 || r > std::min(rows, cols)) {
    return Status::DataLoss("powersgd: rank " + std::to_string(r) + " outside 1.." +
                            std::to_string(std::min(rows, cols)));
  }
  // rows, cols < 2^32 and r <= min(rows, cols): r (rows + cols) < 2^65 can still wrap for a length near 2^64 that
  // only the header claims, so the product is checked.
  uint64_t floats = 0;
  if (__builtin_mul_overflow(r, rows + cols, &floats) || (body_size - kPrefixBytes) / 4 != floats ||
      (body_size - kPrefixBytes) % 4 != 0) {
    return Status::DataLoss("powersgd: " + std::to_string(body_size - kPrefixBytes) + " factor bytes, expected " +
                            std::to_string(4 * floats));
  }
  return Status::Ok();
}

void Decode(const uint8_t* body, uint64_t length, float* out) {
  const uint64_t rows = GetU32(body), cols = GetU32(body + 4), r = GetU32(body + 8);
  const uint8_t* p = body + kPrefixBytes;
  const uint8_t* q = p + 4 * rows * r;
  std::vector<float> pf(rows * r), qf(cols * r);
  std::memcpy(pf.data(), p, 4 * pf.size());
  std::memcpy(qf.data(), q, 4 * qf.size());
  for (uint64_t i = 0; i < length; ++i) {
    const uint64_t row = i / cols, col = i % cols;
    float d = 0.0f;
    for (uint64_t k = 0; k < r; ++k) d += pf[row * r + k] * qf[col * r + k];
    out[i] = d;
  }
}

Result<std::unique_ptr<Compressor>> MakePowerSgd(const CompressorConfig& c) {
  if (c.powersgd_rank == 0) return Status::InvalidArgument("powersgd: rank must be at least 1");
  return std::unique_ptr<Compressor>(std::make_unique<PowerSgdCompressor>(c.powersgd_rank, c.seed));
}

const char* PowerSgdLinkCompressor(bool, bool, bool small) { return small ? "raw" : "powersgd"; }

}  // namespace

void PowerSgdShape(uint64_t n, uint64_t* rows, uint64_t* cols) {
  uint64_t c = static_cast<uint64_t>(std::ceil(std::sqrt(static_cast<double>(std::max<uint64_t>(n, 1)))));
  while (c > 1 && (c - 1) * (c - 1) >= n) --c;  // exact ceil(sqrt(n)) despite rounding
  while (c < (uint64_t{1} << 32) && c * c < n) ++c;  // ceil(sqrt(n)) <= 2^32 for any n: c * c cannot wrap
  *cols = std::max<uint64_t>(c, 1);
  *rows = std::max<uint64_t>(block_frame::CeilDiv(n, *cols), 1);
}

uint64_t PowerSgdFrameBytes(uint64_t n, uint32_t rank) {
  uint64_t rows = 0, cols = 0;
  PowerSgdShape(n, &rows, &cols);
  return kFrameHeaderBytes + kPrefixBytes + 4 * Rank(rank, rows, cols) * (rows + cols);
}

void LinkPowerSgdCodec() {}

GEOMX_REGISTER(CompressorRegistry, "powersgd", MakePowerSgd,
               "PowerSGD: rank-r factors P and Q of the slice as a matrix, warm start, error feedback");
static const bool kPowerSgdKind [[maybe_unused]] = RegisterFrameKind(
    FrameKindDef{.kind = FrameKind::kPowerSgd, .name = "kPowerSgd", .check = Check, .decode = Decode});
GEOMX_REGISTER_LINK_SCHEME((LinkSchemeDef{.id = LinkScheme::kPowerSgd,
                                          .name = "powersgd",
                                          .preset_wan = true,
                                          .feedback_answers = true,
                                          .compressor = PowerSgdLinkCompressor}));

}  // namespace geomx::comm
