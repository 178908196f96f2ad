// The PowerSGD compressor (comm/compression/powersgd.h): exact on low-rank matrices, the error-feedback invariant,
// warm start improving the approximation over rounds, frame sizes and malformed frames. Reference values are
// computed here independently (outer products, plain sums).
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "comm/compression/compressor.h"
#include "comm/compression/link_codec.h"
#include "comm/compression/powersgd.h"

namespace geomx::comm {
namespace {

std::unique_ptr<Compressor> Make(uint32_t rank) {
  CompressorConfig c;
  c.powersgd_rank = rank;
  Result<std::unique_ptr<Compressor>> r = MakeCompressor("powersgd", c);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<float> Decode(const Bytes& frame, size_t n) {
  std::vector<float> out(n, -1.0f);
  const Status s = DecodeFrame(frame, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// A rows x cols matrix (row-major) that is the sum of `rank` outer products u_k v_k^T with seeded entries.
std::vector<float> LowRank(size_t rows, size_t cols, int rank, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> m(rows * cols, 0.0f);
  for (int k = 0; k < rank; ++k) {
    std::vector<float> u(rows), v(cols);
    for (float& x : u) x = d(rng);
    for (float& x : v) x = d(rng);
    for (size_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < cols; ++j) m[i * cols + j] += u[i] * v[j];
    }
  }
  return m;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

TEST(PowerSgd, ShapeIsCeilSqrtColumns) {
  uint64_t rows = 0, cols = 0;
  PowerSgdShape(100, &rows, &cols);
  EXPECT_EQ(cols, 10u);
  EXPECT_EQ(rows, 10u);
  PowerSgdShape(101, &rows, &cols);  // ceil(sqrt(101)) = 11 columns, ceil(101 / 11) = 10 rows
  EXPECT_EQ(cols, 11u);
  EXPECT_EQ(rows, 10u);
  PowerSgdShape(1, &rows, &cols);
  EXPECT_EQ(cols, 1u);
  EXPECT_EQ(rows, 1u);
  PowerSgdShape(1000000, &rows, &cols);
  EXPECT_EQ(cols, 1000u);
  EXPECT_EQ(rows, 1000u);
  // 32-byte prefix + 4 r (rows + cols): 1,000,000 floats at rank 4 = 32,032 bytes (4,000,016 dense).
  EXPECT_EQ(PowerSgdFrameBytes(1000000, 4), 16u + 16u + 4u * 4u * 2000u);
}

TEST(PowerSgd, ARankOneMatrixIsSentExactlyAtRankOne) {
  const std::vector<float> m = LowRank(32, 32, 1, 7);  // 1024 elements: a 32 x 32 matrix
  auto c = Make(1);
  CompressorState st;
  const Bytes f = *c->Encode(m, st);
  EXPECT_EQ(f.size(), PowerSgdFrameBytes(m.size(), 1));
  const std::vector<float> d = Decode(f, m.size());
  EXPECT_LT(MaxAbsDiff(d, m), 1e-3) << "one power iteration recovers a rank-1 matrix";
  for (float r : st.residual) EXPECT_NEAR(r, 0.0f, 1e-3f);
}

TEST(PowerSgd, ARankThreeMatrixNeedsRankThree) {
  const std::vector<float> m = LowRank(40, 40, 3, 11);
  CompressorState s1, s3;
  const std::vector<float> d1 = Decode(*Make(1)->Encode(m, s1), m.size());
  const std::vector<float> d3 = Decode(*Make(3)->Encode(m, s3), m.size());
  EXPECT_LT(MaxAbsDiff(d3, m), 1e-2);
  EXPECT_GT(MaxAbsDiff(d1, m), 0.1) << "rank 1 cannot carry a rank-3 matrix";
}

// Error feedback: what every round decoded plus what is left in the residual is exactly what was pushed.
TEST(PowerSgd, DecodedPlusResidualEqualsEverythingPushed) {
  const size_t n = 1000;  // not a square: 32 columns, 32 rows, the last row partly padding
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  auto c = Make(2);
  CompressorState st;
  std::vector<double> pushed(n, 0.0), decoded(n, 0.0);
  for (int round = 0; round < 20; ++round) {
    std::vector<float> g(n);
    for (float& x : g) x = d(rng);
    for (size_t i = 0; i < n; ++i) pushed[i] += g[i];
    const std::vector<float> out = Decode(*c->Encode(g, st), n);
    for (size_t i = 0; i < n; ++i) decoded[i] += out[i];
  }
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(decoded[i] + st.residual[i], pushed[i], 1e-3) << i;
}

// Warm start: the same matrix sent again is approximated better (the kept Q continues the power iteration).
TEST(PowerSgd, WarmStartRefinesTheSubspaceAcrossRounds) {
  // Rank 2 approximation of a matrix with singular values decaying slowly: one power iteration from a random Q
  // is rough, later ones converge to the top-2 subspace.
  std::vector<float> m = LowRank(30, 30, 2, 5);
  const std::vector<float> noise = LowRank(30, 30, 6, 9);
  for (size_t i = 0; i < m.size(); ++i) m[i] = 4.0f * m[i] + 0.5f * noise[i];
  auto c = Make(2);
  CompressorState st;
  std::vector<double> errors;
  for (int round = 0; round < 6; ++round) {
    st.residual.assign(m.size(), 0.0f);  // compare the approximation alone, without feedback
    const std::vector<float> d = Decode(*c->Encode(m, st), m.size());
    double err = 0;
    for (size_t i = 0; i < m.size(); ++i) err += (m[i] - d[i]) * (m[i] - d[i]);
    errors.push_back(err);
  }
  EXPECT_LT(errors.back(), errors.front()) << errors.front() << " -> " << errors.back();
  EXPECT_LE(errors.back(), errors[4] * 1.001);
}

TEST(PowerSgd, MalformedFramesAreRefused) {
  const std::vector<float> m = LowRank(16, 16, 1, 1);
  CompressorState st;
  const Bytes good = *Make(2)->Encode(m, st);
  std::vector<float> out(m.size());
  ASSERT_TRUE(DecodeFrame(good, out).ok());
  auto patched = [&](size_t offset, uint32_t value) {
    std::vector<uint8_t> b(good.data(), good.data() + good.size());
    std::memcpy(b.data() + offset, &value, 4);
    return Bytes::Copy(b.data(), b.size());
  };
  const size_t body = 16;
  EXPECT_FALSE(DecodeFrame(patched(body + 0, 15), out).ok()) << "wrong rows";
  EXPECT_FALSE(DecodeFrame(patched(body + 4, 17), out).ok()) << "wrong cols";
  EXPECT_FALSE(DecodeFrame(patched(body + 8, 0), out).ok()) << "rank 0";
  EXPECT_FALSE(DecodeFrame(patched(body + 8, 3), out).ok()) << "rank whose factors the body does not hold";
  EXPECT_FALSE(DecodeFrame(patched(body + 8, 17), out).ok()) << "rank above min(rows, cols)";
  EXPECT_FALSE(DecodeFrame(patched(body + 12, 1), out).ok()) << "reserved bytes";
  const Bytes cut = Bytes::Copy(good.data(), good.size() - 4);
  const Status s = DecodeFrame(cut, out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("kPowerSgd"), std::string::npos) << s.ToString();
}

TEST(PowerSgd, IsALinkSchemeWithErrorFeedbackOnAnswers) {
  EXPECT_EQ(*ParseLinkScheme("powersgd"), LinkScheme::kPowerSgd);
  const LinkSchemeDef* def = LinkSchemeOf(LinkScheme::kPowerSgd);
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->preset_wan);
  EXPECT_TRUE(def->feedback_answers);
  EXPECT_STREQ(def->compressor(true, true, false), "powersgd");
  EXPECT_STREQ(def->compressor(true, true, true), "raw");
  CompressorConfig bad;
  bad.powersgd_rank = 0;
  EXPECT_FALSE(MakeCompressor("powersgd", bad).ok());
}

}  // namespace
}  // namespace geomx::comm
