// The sign (EF-SignSGD) and int8 compressors (comm/compression/sign.h, int8.h): round trips on hand-built
// vectors, stochastic rounding, the error-feedback invariant, encoded sizes and malformed frames.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "comm/compression/compressor.h"
#include "comm/compression/int8.h"
#include "comm/compression/link_codec.h"
#include "comm/compression/sign.h"

namespace geomx::comm {
namespace {

std::unique_ptr<Compressor> Make(const std::string& name, CompressorConfig c = {}) {
  Result<std::unique_ptr<Compressor>> r = MakeCompressor(name, c);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<float> Decode(const Bytes& frame, size_t n) {
  std::vector<float> out(n, -1.0f);
  const Status s = DecodeFrame(frame, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::vector<float> RandomVector(size_t n, uint32_t seed, float spread = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Independent reference sizes (docs/wire_format.md): 16-byte header, u32 block, u32 reserved, f32 per block.
uint64_t Blocks(uint64_t n, uint64_t block) { return (n + block - 1) / block; }
uint64_t SignBytes(uint64_t n, uint64_t block) { return 16 + 8 + 4 * Blocks(n, block) + (n + 7) / 8; }
uint64_t Int8Bytes(uint64_t n, uint64_t block) { return 16 + 8 + 4 * Blocks(n, block) + n; }

TEST(Sign, DecodesToScaleTimesSignPerBlock) {
  CompressorConfig c;
  c.sign_block = 4;
  auto sign = Make("sign", c);
  const std::vector<float> v = {1.0f, -2.0f, 3.0f, -6.0f, 0.5f, 0.0f, -0.25f, 4.0f, -8.0f, 2.0f};
  CompressorState st;
  const Bytes f = *sign->Encode(v, st);
  const std::vector<float> d = Decode(f, v.size());
  const float scales[] = {(1 + 2 + 3 + 6) / 4.0f, (0.5f + 0 + 0.25f + 4) / 4.0f, (8 + 2) / 2.0f};
  for (size_t i = 0; i < v.size(); ++i) {
    const float s = scales[i / 4];
    EXPECT_FLOAT_EQ(d[i], v[i] < 0 ? -s : s) << i;  // 0 counts as positive
    EXPECT_FLOAT_EQ(st.residual[i], v[i] - d[i]) << i;
  }
  EXPECT_EQ(f.size(), SignBytes(v.size(), 4));
}

TEST(Int8, RoundsToNearestWithinHalfAScaleAndExactOnTheGrid) {
  CompressorConfig c;
  c.int8_block = 8;
  auto q = Make("int8", c);
  const std::vector<float> v = RandomVector(100, 7);
  CompressorState st;
  const std::vector<float> d = Decode(*q->Encode(v, st), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t b0 = i / 8 * 8, b1 = std::min<size_t>(v.size(), b0 + 8);
    float m = 0;
    for (size_t j = b0; j < b1; ++j) m = std::max(m, std::fabs(v[j]));
    const float scale = m / 127.0f;
    EXPECT_LE(std::fabs(d[i] - v[i]), scale / 2 * (1 + 1e-5f)) << i;
    EXPECT_FLOAT_EQ(st.residual[i], v[i] - d[i]);
  }
  // Multiples of 0.25 with max 127 x 0.25: scale 0.25 exactly, every value on the grid.
  std::vector<float> grid;
  for (int k = -127; k <= 127; k += 3) grid.push_back(0.25f * static_cast<float>(k));
  grid.push_back(31.75f);
  CompressorConfig g;
  g.int8_block = static_cast<uint32_t>(grid.size());
  CompressorState gs;
  const std::vector<float> gd = Decode(*Make("int8", g)->Encode(grid, gs), grid.size());
  EXPECT_EQ(gd, grid);
  for (float r : gs.residual) EXPECT_EQ(r, 0.0f);
}

TEST(Int8, StochasticRoundingIsUnbiasedAndReproducible) {
  CompressorConfig c;
  c.int8_block = 64;
  c.int8_stochastic = true;
  const std::vector<float> v = RandomVector(64, 11);
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  const double scale = m / 127.0;
  constexpr int kSeeds = 2000;
  std::vector<double> mean_err(v.size(), 0.0);
  double var_bound = 0;  // a rounding error is in (-scale, scale): variance <= scale^2 / 4
  var_bound = scale * scale / 4 / kSeeds;
  for (int s = 0; s < kSeeds; ++s) {
    c.seed = static_cast<uint64_t>(s);
    CompressorState st;
    const std::vector<float> d = Decode(*Make("int8", c)->Encode(v, st), v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_LT(std::fabs(d[i] - v[i]), scale * (1 + 1e-5));
      mean_err[i] += (static_cast<double>(d[i]) - v[i]) / kSeeds;
    }
  }
  double avg = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_LT(std::fabs(mean_err[i]), 5 * std::sqrt(var_bound)) << i;  // 5 sigma per element
    avg += mean_err[i] / static_cast<double>(v.size());
  }
  EXPECT_LT(std::fabs(avg), 5 * std::sqrt(var_bound / static_cast<double>(v.size())));
  // Same seed, stream and round: the same frame; another round or stream: another one.
  c.seed = 5;
  auto q = Make("int8", c);
  CompressorState a, b, other;
  other.stream = 1;
  const Bytes fa = *q->Encode(v, a), fb = *q->Encode(v, b), fo = *q->Encode(v, other);
  ASSERT_EQ(fa.size(), fb.size());
  EXPECT_EQ(std::memcmp(fa.data(), fb.data(), fa.size()), 0);
  EXPECT_NE(std::memcmp(fa.data(), fo.data(), fa.size()), 0);
}

// Over R rounds: sum of decoded + final residual == sum of inputs (error feedback loses nothing).
void CheckFeedback(const std::string& name, CompressorConfig c, float* max_residual) {
  auto comp = Make(name, c);
  constexpr size_t kN = 1000;
  constexpr int kRounds = 50;
  CompressorState st;
  std::vector<double> in_sum(kN, 0.0), out_sum(kN, 0.0);
  *max_residual = 0;
  for (int r = 0; r < kRounds; ++r) {
    const std::vector<float> g = RandomVector(kN, 100 + static_cast<uint32_t>(r));
    const std::vector<float> d = Decode(*comp->Encode(g, st), kN);
    for (size_t i = 0; i < kN; ++i) {
      in_sum[i] += g[i];
      out_sum[i] += d[i];
      *max_residual = std::max(*max_residual, std::fabs(st.residual[i]));
    }
  }
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(out_sum[i] + st.residual[i], in_sum[i], 1e-3) << name << " element " << i;
  }
}

TEST(ErrorFeedback, DecodedPlusResidualEqualsEverythingPushed) {
  float max_residual = 0;
  CompressorConfig c;
  c.sign_block = 100;
  CheckFeedback("sign", c, &max_residual);
  // Inputs are N(0, 1): the residual of EF-sign stays within a few input magnitudes (no drift).
  EXPECT_LT(max_residual, 20.0f);
  c.int8_block = 64;
  CheckFeedback("int8", c, &max_residual);
  EXPECT_LT(max_residual, 0.05f);  // at most half a scale (max |v| / 127 / 2, |v| < 6)
  c.int8_stochastic = true;
  CheckFeedback("int8", c, &max_residual);
}

TEST(FrameSize, MatchesTheDocumentedFormula) {
  for (uint64_t n : {1ull, 7ull, 8ull, 9ull, 255ull, 256ull, 257ull, 4096ull, 10000ull}) {
    const std::vector<float> v = RandomVector(n, 3);
    for (uint32_t block : {1u, 64u, 256u, 4096u}) {
      CompressorConfig c;
      c.sign_block = c.int8_block = block;
      CompressorState s1, s2;
      const Bytes sf = *Make("sign", c)->Encode(v, s1), qf = *Make("int8", c)->Encode(v, s2);
      EXPECT_EQ(sf.size(), SignBytes(n, block)) << n << " / " << block;
      EXPECT_EQ(qf.size(), Int8Bytes(n, block)) << n << " / " << block;
      EXPECT_EQ(SignFrameBytes(n, block), SignBytes(n, block));
      EXPECT_EQ(Int8FrameBytes(n, block), Int8Bytes(n, block));
    }
  }
  // Against dense f32 (4n + 16): sign with 4096-element blocks ~ 31.7x smaller, int8 with 256 ~ 3.94x.
  const uint64_t n = 1 << 20;
  EXPECT_GT(static_cast<double>(4 * n + 16) / SignBytes(n, 4096), 31.5);
  EXPECT_GT(static_cast<double>(4 * n + 16) / Int8Bytes(n, 256), 3.9);
}

Bytes Copy(const Bytes& f, size_t size) {
  Bytes b(size);
  std::memcpy(b.mutable_data(), f.data(), std::min(size, f.size()));
  return b;
}

TEST(MalformedFrames, AreRefusedWithDataLoss) {
  CompressorConfig c;
  c.sign_block = 16;
  c.int8_block = 16;
  const std::vector<float> v = RandomVector(100, 5);
  for (const char* name : {"sign", "int8"}) {
    CompressorState st;
    const Bytes f = *Make(name, c)->Encode(v, st);
    std::vector<float> out(v.size(), 7.0f);
    // Truncated anywhere: header, prefix, scales, payload.
    for (size_t cut : {size_t{0}, size_t{10}, size_t{16}, size_t{20}, size_t{30}, f.size() - 1}) {
      const Status s = DecodeFrame(Copy(f, cut), out);
      EXPECT_EQ(s.code(), StatusCode::kDataLoss) << name << " cut at " << cut;
    }
    EXPECT_EQ(DecodeFrame(Copy(f, f.size() + 1), out).code(), StatusCode::kDataLoss) << name << " trailing byte";
    // A lying length: huge (must not allocate), or one more element than the body holds.
    for (uint64_t length : {~uint64_t{0}, uint64_t{1} << 40, uint64_t{108}}) {
      Bytes lie = Copy(f, f.size());
      std::memcpy(lie.mutable_data() + 8, &length, 8);
      EXPECT_EQ(FrameLength(lie).status().code(), StatusCode::kDataLoss) << name << " length " << length;
    }
    // Block size 0, or so large that there would be fewer scales than the body holds.
    for (uint32_t block : {0u, 1000u}) {
      Bytes bad = Copy(f, f.size());
      std::memcpy(bad.mutable_data() + 16, &block, 4);
      const Status s = DecodeFrame(bad, out);
      EXPECT_EQ(s.code(), StatusCode::kDataLoss) << name << " block " << block;
      EXPECT_NE(s.ToString().find(name == std::string("sign") ? "kSign" : "kInt8"), std::string::npos)
          << s.ToString();
    }
    Bytes reserved = Copy(f, f.size());
    reserved.mutable_data()[20] = 1;
    EXPECT_EQ(DecodeFrame(reserved, out).code(), StatusCode::kDataLoss) << name;
    for (float x : out) EXPECT_EQ(x, 7.0f);  // untouched on error
  }
}

TEST(LinkScheme, SignAndInt8AreRegisteredLinkSchemes) {
  EXPECT_EQ(*ParseLinkScheme("sign"), LinkScheme::kSign);
  EXPECT_EQ(*ParseLinkScheme("int8"), LinkScheme::kInt8);
  for (LinkScheme s : {LinkScheme::kSign, LinkScheme::kInt8}) {
    for (bool push : {true, false}) {
      LinkCodecConfig c;
      c.scheme = s;
      c.push = push;
      c.wan = true;
      c.size_lower_bound = 1000;
      auto e = std::move(LinkEncoder::Create(c)).value();
      const std::vector<float> small(999, 1.0f), large(1000, 1.0f);
      const FrameKind want = s == LinkScheme::kSign ? FrameKind::kSign : FrameKind::kInt8;
      EXPECT_EQ(static_cast<FrameKind>(e->Encode(1, small)->data()[4]), FrameKind::kRaw);  // below the bound
      EXPECT_EQ(static_cast<FrameKind>(e->Encode(2, large)->data()[4]), want);
    }
  }
}

}  // namespace
}  // namespace geomx::comm
