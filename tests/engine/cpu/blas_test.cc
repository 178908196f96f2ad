// engine/cpu/blas.h: oneDNN's sgemm behind the engine's adapter, against a naive triple loop in double, for every
// transpose combination, leading dimensions wider than the matrices, alpha/beta, and inside an OpenMP region.
#include "engine/cpu/blas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/base/rng.h"

namespace geomx::cpu {
namespace {

std::vector<float> Random(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Uniform() * 2 - 1);
  return v;
}

// C = alpha op(A) op(B) + beta C, row-major with the given leading dimensions, in double.
std::vector<float> Naive(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const std::vector<float>& a,
                         int64_t lda, const std::vector<float>& b, int64_t ldb, float beta, std::vector<float> c,
                         int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * lda + i] : a[i * lda + p];
        const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += av * bv;
      }
      c[i * ldc + j] = static_cast<float>(alpha * s + beta * c[i * ldc + j]);
    }
  }
  return c;
}

TEST(BlasTest, SgemmMatchesANaiveProductForEveryTranspose) {
  const int64_t m = 7, n = 5, k = 9;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 3, ldc = n + 1;
      const auto a = Random(static_cast<size_t>((ta ? k : m) * lda), 1);
      const auto b = Random(static_cast<size_t>((tb ? n : k) * ldb), 2);
      std::vector<float> c = Random(static_cast<size_t>(m * ldc), 3);
      const std::vector<float> expected = Naive(ta, tb, m, n, k, 0.5f, a, lda, b, ldb, 2.0f, c, ldc);
      Sgemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc, 2);
      for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], expected[i], 1e-5) << ta << tb << " at " << i;
    }
  }
}

TEST(BlasTest, RunsInsideAnOpenMpRegionAndOnEmptyShapes) {
  const auto a = Random(6 * 4, 4), b = Random(4 * 3, 5);
  std::vector<std::vector<float>> out(4, std::vector<float>(6 * 3, 0.0f));
#pragma omp parallel for num_threads(2)
  for (int t = 0; t < 4; ++t) Sgemm(false, false, 6, 3, 4, 1.0f, a.data(), 4, b.data(), 3, 0.0f, out[t].data(), 3, 2);
  const auto expected = Naive(false, false, 6, 3, 4, 1.0f, a, 4, b, 3, 0.0f, std::vector<float>(18, 0.0f), 3);
  for (const auto& c : out) {
    for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], expected[i], 1e-5);
  }
  std::vector<float> untouched = {42.0f};
  Sgemm(false, false, 0, 1, 4, 1.0f, a.data(), 4, b.data(), 1, 0.0f, untouched.data(), 1, 1);
  EXPECT_EQ(untouched[0], 42.0f);
}

}  // namespace
}  // namespace geomx::cpu
