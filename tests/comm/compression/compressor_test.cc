// Frames, compressors and the FP16 conversion (comm/compression/compressor.h, fp16.h).
#include "comm/compression/compressor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "comm/compression/fp16.h"

namespace geomx::comm {
namespace {

std::vector<float> Randn(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::unique_ptr<Compressor> Make(const std::string& name, CompressorConfig c = {}) {
  Result<std::unique_ptr<Compressor>> r = MakeCompressor(name, c);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<float> Decode(const Bytes& frame) {
  Result<uint64_t> n = FrameLength(frame);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  std::vector<float> out(n.ok() ? *n : 0);
  EXPECT_TRUE(DecodeFrame(frame, out).ok());
  return out;
}

uint32_t Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
float FromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

TEST(Frames, RawRoundTripIsExact) {
  const std::vector<float> v = Randn(1001, 1);
  CompressorState st;
  Result<Bytes> f = Make("raw")->Encode(v, st);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size(), 16u + 4 * v.size());
  EXPECT_EQ(Decode(*f), v);
  EXPECT_EQ(Decode(RawFrame(v)), v);
}

TEST(Frames, SparseIsLosslessAndFallsBackToRaw) {
  std::vector<float> v(10000, 0.0f);
  v[3] = 1.5f;
  v[9999] = -2.0f;
  v[17] = -0.0f;
  CompressorState st;
  Result<Bytes> f = Make("sparse")->Encode(v, st);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size(), 16u + 8 + 3 * 8);
  const std::vector<float> back = Decode(*f);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(Bits(back[i]), Bits(v[i])) << i;
  const std::vector<float> dense = Randn(100, 2);
  Result<Bytes> g = Make("sparse")->Encode(dense, st);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->size(), 16u + 4 * dense.size());  // raw is smaller
  EXPECT_EQ(Decode(*g), dense);
}

TEST(Frames, AddFrameSumsEveryKind) {
  const std::vector<float> a = {1, 2, 3, 4};
  std::vector<float> acc(4, 1.0f);
  CompressorState st;
  ASSERT_TRUE(AddFrame(RawFrame(a), acc).ok());
  ASSERT_TRUE(AddFrame(*Make("fp16")->Encode(a, st), acc).ok());
  std::vector<float> sparse = {0, 0, 5, 0};
  ASSERT_TRUE(AddFrame(*Make("sparse")->Encode(sparse, st), acc).ok());
  EXPECT_EQ(acc, (std::vector<float>{3, 5, 12, 9}));
  EXPECT_FALSE(AddFrame(RawFrame(a), std::span<float>(acc.data(), 3)).ok());  // wrong length
}

TEST(Frames, CorruptFramesAreRefusedWithoutTouchingTheOutput) {
  std::vector<float> v(2000, 0.0f);
  for (int i = 0; i < 20; ++i) v[i * 97] = static_cast<float>(i + 1);
  CompressorState st;
  const Bytes good = *Make("sparse")->Encode(v, st);
  std::vector<float> out(2000, 7.0f);
  auto refused = [&](Bytes b, const char* what) {
    Status s = DecodeFrame(b, out);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << what << ": " << s.ToString();
    for (float x : out) ASSERT_EQ(x, 7.0f) << what;
  };
  refused(Bytes(), "empty");
  refused(good.Slice(0, 10), "short header");
  refused(good.Slice(0, good.size() - 1), "truncated");
  Bytes longer(good.size() + 4);
  std::memcpy(longer.mutable_data(), good.data(), good.size());
  refused(longer, "trailing bytes");
  auto patched = [&](size_t off, uint8_t byte) {
    Bytes b = Bytes::Copy(good.data(), good.size());
    b.mutable_data()[off] = byte;
    return b;
  };
  refused(patched(0, 'Z'), "magic");
  refused(patched(4, 9), "kind");
  refused(patched(5, 1), "reserved");
  refused(patched(16, 200), "count");
  refused(patched(16 + 8 + 4 * 3 + 3, 0xff), "index out of range");
  {  // index 2 == index 1: not increasing
    Bytes b = Bytes::Copy(good.data(), good.size());
    std::memcpy(b.mutable_data() + 16 + 8 + 8, b.data() + 16 + 8 + 4, 4);
    refused(b, "not increasing");
  }
  {  // a huge length with a small body must not allocate or overflow
    Bytes b = RawFrame(std::vector<float>(4, 1.0f));
    const uint64_t huge = ~uint64_t{0} / 2;
    std::memcpy(b.mutable_data() + 8, &huge, 8);
    EXPECT_FALSE(FrameLength(b).ok());
  }
  EXPECT_TRUE(DecodeFrame(good, out).ok());
  EXPECT_EQ(out, v);
}

TEST(Fp16, ScalarMatchesReferenceOnEdgeValues) {
  struct Case {
    float in;
    uint16_t half;
  };
  const float denorm_min = std::ldexp(1.0f, -24);
  const Case cases[] = {
      {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff},
      {65519.0f, 0x7bff},  // below the halfway point to 65536: stays max finite
      {65520.0f, 0x7c00},  // halfway: ties to even = inf
      {1e10f, 0x7c00}, {-1e10f, 0xfc00},
      {std::numeric_limits<float>::infinity(), 0x7c00}, {-std::numeric_limits<float>::infinity(), 0xfc00},
      {std::ldexp(1.0f, -14), 0x0400},     // smallest normal
      {denorm_min, 0x0001},                // smallest subnormal
      {denorm_min * 0.5f, 0x0000},         // exactly half of it: ties to even (0)
      {denorm_min * 1.5f, 0x0002},         // 1.5 units: ties to even (2)
      {denorm_min * 2.5f, 0x0002},         // 2.5 units: ties to even (2)
      {std::nextafter(denorm_min * 0.5f, 1.0f), 0x0001},
      {std::ldexp(1023.0f, -24), 0x03ff},  // largest subnormal
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},          // tie between 1 and 1+2^-10: even (1)
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02},      // tie: rounds up to even
      {0.1f, 0x2e66}, {-65504.0f, 0xfbff},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(fp16::FloatToHalfScalar(c.in), c.half) << c.in;
    std::vector<uint16_t> h(1);
    FloatToHalf(std::span<const float>(&c.in, 1), h);
    EXPECT_EQ(h[0], c.half) << c.in;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const uint16_t hn = fp16::FloatToHalfScalar(nan);
  EXPECT_EQ(hn & 0x7c00, 0x7c00);
  EXPECT_NE(hn & 0x3ff, 0);
  EXPECT_TRUE(std::isnan(fp16::HalfToFloatScalar(hn)));
  EXPECT_TRUE(std::isnan(fp16::HalfToFloatScalar(fp16::FloatToHalfScalar(FromBits(0x7f800001u)))));  // sNaN
  EXPECT_EQ(fp16::FloatToHalfScalar(-nan) & 0x8000, 0x8000);
}

TEST(Fp16, EveryHalfRoundTripsAndMatchesHardware) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> f(65536), hw(65536);
  for (uint32_t i = 0; i < 65536; ++i) f[i] = fp16::HalfToFloatScalar(all[i]);
  fp16::HalfToFloatF16c(all, hw);
  for (uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(Bits(f[i]), Bits(hw[i])) << "half 0x" << std::hex << i;
    if (!std::isnan(f[i])) {
      ASSERT_EQ(fp16::FloatToHalfScalar(f[i]), all[i]) << std::hex << i;
    }
  }
  // Floats across the whole range, including every rounding boundary region: scalar == hardware.
  std::vector<float> in;
  std::mt19937 rng(3);
  for (int i = 0; i < 400000; ++i) in.push_back(FromBits(static_cast<uint32_t>(rng())));
  for (uint32_t i = 0; i < 65536; ++i) {  // the exact midpoints between neighbouring halves
    const float a = f[i], b = fp16::HalfToFloatScalar(static_cast<uint16_t>(i + 1));
    if (std::isfinite(a) && std::isfinite(b) && (i & 0x7fff) < 0x7bff) in.push_back(0.5f * a + 0.5f * b);
  }
  std::vector<uint16_t> sw(in.size()), hh(in.size());
  for (size_t i = 0; i < in.size(); ++i) sw[i] = fp16::FloatToHalfScalar(in[i]);
  fp16::FloatToHalfF16c(in, hh);
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(sw[i], hh[i]) << "float bits 0x" << std::hex << Bits(in[i]);
  if (!fp16::HasF16c()) GTEST_SKIP() << "no F16C on this CPU: only the portable path was checked";
}

TEST(Fp16, FrameHalvesTheBytes) {
  const std::vector<float> v = Randn(5000, 4);
  CompressorState st;
  Result<Bytes> f = Make("fp16")->Encode(v, st);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size(), 16u + 2 * v.size());
  const std::vector<float> back = Decode(*f);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(back[i], v[i], std::fabs(v[i]) * 1e-3f + 1e-7f);
}

TEST(Bsc, ExactSelectionKeepsTheLargestAndTheResidualHoldsTheRest) {
  CompressorConfig c;
  c.ratio = 0.01f;
  auto bsc = Make("bsc", c);
  std::vector<float> g(10000);
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>((i * 7919) % 10000) - 5000.0f;  // distinct |g|
  CompressorState st;
  Result<Bytes> f = bsc->Encode(g, st);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size(), 16u + 8 + 100 * 8);
  const std::vector<float> sent = Decode(*f);
  std::vector<float> mags;
  for (float x : g) mags.push_back(std::fabs(x));
  std::sort(mags.begin(), mags.end(), std::greater<float>());
  for (size_t i = 0; i < g.size(); ++i) {
    if (sent[i] != 0.0f) {
      EXPECT_GE(std::fabs(g[i]), mags[99]);
      EXPECT_EQ(st.residual[i], 0.0f);
    } else {
      EXPECT_EQ(st.residual[i], g[i]);
    }
  }
}

// Everything decoded + the residual == everything pushed (integers: exact in f32), exact and sampled selection.
void CheckErrorFeedback(bool sampled) {
  CompressorConfig c;
  c.ratio = 0.02f;
  c.sampled = sampled;
  auto bsc = Make("bsc", c);
  const size_t n = 3000;
  std::mt19937 rng(9);
  std::vector<float> pushed(n, 0.0f), received(n, 0.0f);
  CompressorState st;
  std::vector<std::vector<uint32_t>> selections;
  for (int step = 0; step < 40; ++step) {
    std::vector<float> g(n);
    for (float& x : g) x = static_cast<float>(static_cast<int>(rng() % 201) - 100);
    for (size_t i = 0; i < n; ++i) pushed[i] += g[i];
    Result<Bytes> f = bsc->Encode(g, st);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(AddFrame(*f, received).ok());
    EXPECT_LE(f->size(), 16u + 8 + 8 * 60);
  }
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(received[i] + st.residual[i], pushed[i]) << i;
  EXPECT_EQ(st.calls, 40u);
}
TEST(Bsc, ErrorFeedbackInvariantExact) { CheckErrorFeedback(false); }
TEST(Bsc, ErrorFeedbackInvariantSampled) { CheckErrorFeedback(true); }

TEST(Bsc, SampledSelectionUsesFreshRandomnessEachCall) {
  // Equal magnitudes everywhere: which entries qualify depends only on the threshold; with ties everywhere the
  // selection is the k lowest-index ties. Use distinct magnitudes and compare the thresholds' selections instead.
  CompressorConfig c;
  c.ratio = 0.01f;
  c.sampled = true;
  c.sample_fraction = 0.01f;
  auto bsc = Make("bsc", c);
  const std::vector<float> g = Randn(100000, 11);
  std::vector<size_t> counts;
  for (int call = 0; call < 4; ++call) {
    CompressorState st;
    st.calls = static_cast<uint64_t>(call);  // fresh state, different call counter
    Result<Bytes> f = bsc->Encode(g, st);
    ASSERT_TRUE(f.ok());
    uint64_t count;
    std::memcpy(&count, f->data() + 16, 8);
    EXPECT_GT(count, 0u);
    EXPECT_LE(count, 1000u);  // never more than k
    counts.push_back(count);
  }
  // Different samples give different thresholds, so (almost surely) different counts.
  EXPECT_FALSE(counts[0] == counts[1] && counts[1] == counts[2] && counts[2] == counts[3]);
}

// bsc keeping one of four values, with momentum correction `momentum` and residual decay `decay`.
std::unique_ptr<Compressor> OneOfFour(float momentum, float decay) {
  CompressorConfig c;
  c.ratio = 0.25f;
  c.momentum = momentum;
  c.residual_decay = decay;
  return Make("bsc", c);
}

TEST(Bsc, MomentumCorrectionAndMasking) {
  auto bsc = OneOfFour(0.5f, 1.0f);
  CompressorState st;
  const std::vector<float> g = {4, 1, 1, 1};
  Bytes f = *bsc->Encode(g, st);  // u = g, v = g: sends index 0
  EXPECT_EQ(Decode(f), (std::vector<float>{4, 0, 0, 0}));
  EXPECT_EQ(st.momentum, (std::vector<float>{0, 1, 1, 1}));
  f = *bsc->Encode(g, st);  // u = 0.5u + g = {4, 1.5, 1.5, 1.5}; v = {4, 2.5, 2.5, 2.5}
  EXPECT_EQ(Decode(f), (std::vector<float>{4, 0, 0, 0}));
  EXPECT_EQ(st.residual, (std::vector<float>{0, 2.5f, 2.5f, 2.5f}));
}

// residual_decay b (SparseLoCo's error feedback, diloco with a sparse push): v = b*v + g before the selection.
TEST(Bsc, ResidualDecayHandBuilt) {
  auto bsc = OneOfFour(0.0f, 0.5f);
  CompressorState st;
  Bytes f = *bsc->Encode(std::vector<float>{4, 1, 1, 1}, st);  // v = g: sends index 0
  EXPECT_EQ(Decode(f), (std::vector<float>{4, 0, 0, 0}));
  EXPECT_EQ(st.residual, (std::vector<float>{0, 1, 1, 1}));
  f = *bsc->Encode(std::vector<float>{4, 1, 1, 1}, st);  // v = 0.5 {0, 1, 1, 1} + g = {4, 1.5, 1.5, 1.5}
  EXPECT_EQ(Decode(f), (std::vector<float>{4, 0, 0, 0}));
  EXPECT_EQ(st.residual, (std::vector<float>{0, 1.5f, 1.5f, 1.5f}));
  f = *bsc->Encode(std::vector<float>{0, 2, 0, -1}, st);  // v = {0, 2.75, 0.75, -0.25}
  EXPECT_EQ(Decode(f), (std::vector<float>{0, 2.75f, 0, 0}));
  EXPECT_EQ(st.residual, (std::vector<float>{0, 0, 0.75f, -0.25f}));
  // Without decay the same pushes keep everything: the residual would be {0, 0, 2, 1}.
}

// Against a naive reference kept in double: r = b r + g; the k largest |r| are sent and leave r. Every sent value
// equals the reference's, no unsent |r| exceeds a sent one, and the residual is the reference's r.
TEST(Bsc, ResidualDecayMatchesANaiveReference) {
  CompressorConfig c;
  c.ratio = 0.05f;
  c.residual_decay = 0.9f;
  auto bsc = Make("bsc", c);
  const size_t n = 400;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<double> ref(n, 0.0);
  CompressorState st;
  for (int step = 0; step < 30; ++step) {
    std::vector<float> g(n);
    for (float& x : g) x = normal(rng);
    for (size_t i = 0; i < n; ++i) ref[i] = 0.9 * ref[i] + g[i];
    Result<Bytes> f = bsc->Encode(g, st);
    ASSERT_TRUE(f.ok());
    const std::vector<float> sent = Decode(*f);
    double smallest_sent = 1e30, largest_kept = 0;
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) {
      if (sent[i] != 0.0f) {
        ++count;
        ASSERT_NEAR(sent[i], ref[i], 1e-4) << "step " << step << " index " << i;
        smallest_sent = std::min(smallest_sent, std::fabs(ref[i]));
        ref[i] = 0.0;
      } else {
        largest_kept = std::max(largest_kept, std::fabs(ref[i]));
      }
    }
    EXPECT_EQ(count, 20u) << "step " << step;
    EXPECT_GE(smallest_sent, largest_kept - 1e-4) << "step " << step;
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(st.residual[i], ref[i], 1e-4) << "step " << step << " index " << i;
  }
}

TEST(Bsc, RefusesBadConfigAndChangedLengths) {
  for (float r : {0.0f, 1.0f, -0.5f, std::numeric_limits<float>::quiet_NaN()}) {
    CompressorConfig c;
    c.ratio = r;
    EXPECT_EQ(MakeCompressor("bsc", c).status().code(), StatusCode::kInvalidArgument) << r;
  }
  CompressorConfig c;
  c.momentum = 1.0f;
  EXPECT_EQ(MakeCompressor("bsc", c).status().code(), StatusCode::kInvalidArgument);
  for (float d : {-0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    CompressorConfig decay;
    decay.residual_decay = d;
    EXPECT_EQ(MakeCompressor("bsc", decay).status().code(), StatusCode::kInvalidArgument) << d;
  }
  for (float d : {0.0f, 1.0f}) {
    CompressorConfig decay;
    decay.residual_decay = d;
    EXPECT_TRUE(MakeCompressor("bsc", decay).ok()) << d;
  }
  EXPECT_EQ(MakeCompressor("zip", {}).status().code(), StatusCode::kNotFound);
  auto bsc = Make("bsc");
  CompressorState st;
  ASSERT_TRUE(bsc->Encode(std::vector<float>(100, 1.0f), st).ok());
  EXPECT_EQ(bsc->Encode(std::vector<float>(101, 1.0f), st).status().code(), StatusCode::kInvalidArgument);
}

TEST(Bsc, TensorBeyond2To24ElementsRoundTripsExactly) {
  // Indices above 2^24 are not representable as f32 (GeoMX's bug): u32 indices carry them exactly.
  const size_t n = (size_t{1} << 24) + 4096;
  std::vector<float> g(n, 0.0f);
  const size_t hot[] = {0, 16777215, 16777216, 16777217, n - 3, n - 1};
  for (size_t i = 0; i < 6; ++i) g[hot[i]] = 100.0f + static_cast<float>(i);
  CompressorConfig c;
  c.ratio = 1e-6f;  // k = 16
  CompressorState st;
  Result<Bytes> f = Make("bsc", c)->Encode(g, st);
  ASSERT_TRUE(f.ok());
  std::vector<float> out(n, 0.0f);
  ASSERT_TRUE(DecodeFrame(*f, out).ok());
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(out[hot[i]], g[hot[i]]) << hot[i];
  Result<Bytes> s = Make("sparse")->Encode(g, st);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 16u + 8 + 6 * 8);
  ASSERT_TRUE(DecodeFrame(*s, out).ok());
  EXPECT_TRUE(out == g);
}

}  // namespace
}  // namespace geomx::comm
