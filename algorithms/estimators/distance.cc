#include "algorithms/estimators/distance.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "engine/base/check.h"
#include "engine/cpu/blas.h"

namespace geomx::algorithms {
namespace {

// Manhattan distances of rows [0, m) of `a` against every row of `b`. Four rows of `a` share each pass over a row
// of `b`; `omp simd` lets the compiler vectorise the float sums (it may reorder them, so the last bits depend on
// the vector width: callers that need exact values use L1()). Cloned for AVX2 because the build targets plain
// x86-64 and this loop is all the L1 metric costs.
GEOMX_AVX2_CLONES void L1Tile(const float* a, int64_t m, const float* b, int64_t n, int64_t dim, float* out,
                              int64_t ldo) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const float* a0 = a + i * dim;
    const float* a1 = a0 + dim;
    const float* a2 = a1 + dim;
    const float* a3 = a2 + dim;
    for (int64_t j = 0; j < n; ++j) {
      const float* bj = b + j * dim;
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (int64_t d = 0; d < dim; ++d) {
        const float v = bj[d];
        s0 += std::fabs(a0[d] - v);
        s1 += std::fabs(a1[d] - v);
        s2 += std::fabs(a2[d] - v);
        s3 += std::fabs(a3[d] - v);
      }
      out[i * ldo + j] = s0;
      out[(i + 1) * ldo + j] = s1;
      out[(i + 2) * ldo + j] = s2;
      out[(i + 3) * ldo + j] = s3;
    }
  }
  for (; i < m; ++i) {
    const float* ai = a + i * dim;
    for (int64_t j = 0; j < n; ++j) {
      const float* bj = b + j * dim;
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t d = 0; d < dim; ++d) s += std::fabs(ai[d] - bj[d]);
      out[i * ldo + j] = s;
    }
  }
}

}  // namespace

void RowSquaredNorms(const float* x, int64_t rows, int64_t dim, float* out, int threads) {
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const float* r = x + i * dim;
    double s = 0;
    for (int64_t d = 0; d < dim; ++d) s += static_cast<double>(r[d]) * r[d];
    out[i] = static_cast<float>(s);
  }
}

void DotBlock(const float* a, int64_t m, const float* b, int64_t n, int64_t dim, float* out, int threads) {
  if (m <= 0 || n <= 0) return;
  if (dim <= 0) {
    std::fill(out, out + m * n, 0.0f);
    return;
  }
  // Row-major C = A . B^T with A m x dim and B n x dim (oneDNN's sgemm behind the engine's adapter).
  cpu::Sgemm(false, true, m, n, dim, 1.0f, a, dim, b, dim, 0.0f, out, n, threads);
}

void SquaredL2Block(const float* a, const float* a_norms, int64_t m, const float* b, const float* b_norms, int64_t n,
                    int64_t dim, float* out, int threads) {
  DotBlock(a, m, b, n, dim, out, threads);
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    float* row = out + i * n;
    const float an = a_norms[i];
    for (int64_t j = 0; j < n; ++j) row[j] = std::max(0.0f, an + b_norms[j] - 2.0f * row[j]);
  }
}

void L1Block(const float* a, int64_t m, const float* b, int64_t n, int64_t dim, float* out, int threads) {
  // Tiles of 16 rows of `a` by 256 rows of `b` keep both operands in L2 for Fashion-MNIST-sized rows.
  constexpr int64_t kRowsA = 16, kRowsB = 256;
  const int64_t tiles_a = (m + kRowsA - 1) / kRowsA;
  const int64_t tiles_b = (n + kRowsB - 1) / kRowsB;
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(dynamic) collapse(2)
  for (int64_t ta = 0; ta < tiles_a; ++ta) {
    for (int64_t tb = 0; tb < tiles_b; ++tb) {
      const int64_t i0 = ta * kRowsA, j0 = tb * kRowsB;
      L1Tile(a + i0 * dim, std::min(kRowsA, m - i0), b + j0 * dim, std::min(kRowsB, n - j0), dim, out + i0 * n + j0, n);
    }
  }
}

double SquaredL2(const float* a, const float* b, int64_t dim) {
  double s = 0;
  for (int64_t d = 0; d < dim; ++d) {
    const double t = static_cast<double>(a[d]) - b[d];
    s += t * t;
  }
  return s;
}

double L1(const float* a, const float* b, int64_t dim) {
  double s = 0;
  for (int64_t d = 0; d < dim; ++d) s += std::fabs(static_cast<double>(a[d]) - b[d]);
  return s;
}

}  // namespace geomx::algorithms
