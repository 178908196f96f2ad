#include "algorithms/estimators/logreg_kernels.h"

#include <atomic>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GEOMX_LOGREG_AVX2 1
#endif

namespace geomx::algorithms::logreg_kernels {
namespace {

// ---- Dense block kernels: the two products of a row block, scores Z = X Wt^T and gradient Gt += R^T X, with the
// weights class-major (Wt: m x d) so both run along the rows of X with full-width vectors whatever m is (10
// classes or 1). An AVX2+FMA version is chosen at run time where the CPU has it (the build targets baseline
// x86-64); the portable loops are the reference and the fallback. On Fashion-MNIST shapes (784 x 10) the AVX2 pair
// matches oneDNN's sgemm on the same blocks, without making algorithms/ depend on oneDNN (engine/cpu/ owns it).

// z[r*m + c] = x_r . wt_c for the nb rows of x (row stride d).
void ScoresPortable(const float* x, int64_t nb, int64_t d, const float* wt, int64_t m, float* z) {
  for (int64_t r = 0; r < nb; ++r) {
    for (int64_t c = 0; c < m; ++c) {
      float s = 0;
      for (int64_t j = 0; j < d; ++j) s += x[r * d + j] * wt[c * d + j];
      z[r * m + c] = s;
    }
  }
}

// gt[c*d + j] += sum_r res[r*m + c] * x[r*d + j].
void GradPortable(const float* x, int64_t nb, int64_t d, const float* res, int64_t m, float* gt) {
  for (int64_t r = 0; r < nb; ++r) {
    for (int64_t c = 0; c < m; ++c) {
      const float a = res[r * m + c];
      for (int64_t j = 0; j < d; ++j) gt[c * d + j] += a * x[r * d + j];
    }
  }
}

#if GEOMX_LOGREG_AVX2
#define GEOMX_AVX2_FN __attribute__((target("avx2,fma")))

GEOMX_AVX2_FN inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// R rows x C classes of scores: R*C accumulators of 8 lanes along d.
template <int R, int C>
GEOMX_AVX2_FN inline void ScoreTile(const float* x, int64_t d, const float* wt, int64_t m, float* z) {
  __m256 acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    __m256 xv[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) xv[r] = _mm256_loadu_ps(x + r * d + j);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m256 wv = _mm256_loadu_ps(wt + c * d + j);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(xv[r], wv, acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      float s = HorizontalSum(acc[r][c]);
      for (int64_t k = j; k < d; ++k) s += x[r * d + k] * wt[c * d + k];
      z[r * m + c] = s;
    }
  }
}

GEOMX_AVX2_FN void ScoresAvx2(const float* x, int64_t nb, int64_t d, const float* wt, int64_t m, float* z) {
  int64_t r = 0;
  for (; r + 4 <= nb; r += 4) {
    int64_t c = 0;
    for (; c + 3 <= m; c += 3) ScoreTile<4, 3>(x + r * d, d, wt + c * d, m, z + r * m + c);
    for (; c + 2 <= m; c += 2) ScoreTile<4, 2>(x + r * d, d, wt + c * d, m, z + r * m + c);
    for (; c < m; ++c) ScoreTile<4, 1>(x + r * d, d, wt + c * d, m, z + r * m + c);
  }
  for (; r < nb; ++r) {
    for (int64_t c = 0; c < m; ++c) ScoreTile<1, 1>(x + r * d, d, wt + c * d, m, z + r * m + c);
  }
}

// C classes x 16 columns of the gradient: 2*C accumulators, one pass over the block's rows.
template <int C>
GEOMX_AVX2_FN inline void GradTile(const float* x, int64_t nb, int64_t d, const float* res, int64_t m, float* gt) {
  int64_t j = 0;
  for (; j + 16 <= d; j += 16) {
    __m256 a0[C], a1[C];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      a0[c] = _mm256_loadu_ps(gt + c * d + j);
      a1[c] = _mm256_loadu_ps(gt + c * d + j + 8);
    }
    for (int64_t r = 0; r < nb; ++r) {
      const __m256 x0 = _mm256_loadu_ps(x + r * d + j);
      const __m256 x1 = _mm256_loadu_ps(x + r * d + j + 8);
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) {
        const __m256 rv = _mm256_broadcast_ss(res + r * m + c);
        a0[c] = _mm256_fmadd_ps(rv, x0, a0[c]);
        a1[c] = _mm256_fmadd_ps(rv, x1, a1[c]);
      }
    }
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      _mm256_storeu_ps(gt + c * d + j, a0[c]);
      _mm256_storeu_ps(gt + c * d + j + 8, a1[c]);
    }
  }
  for (; j < d; ++j) {
    for (int c = 0; c < C; ++c) {
      float s = 0;
      for (int64_t r = 0; r < nb; ++r) s += res[r * m + c] * x[r * d + j];
      gt[c * d + j] += s;
    }
  }
}

GEOMX_AVX2_FN void GradAvx2(const float* x, int64_t nb, int64_t d, const float* res, int64_t m, float* gt) {
  int64_t c = 0;
  for (; c + 6 <= m; c += 6) GradTile<6>(x, nb, d, res + c, m, gt + c * d);
  switch (m - c) {
    case 1:
      GradTile<1>(x, nb, d, res + c, m, gt + c * d);
      break;
    case 2:
      GradTile<2>(x, nb, d, res + c, m, gt + c * d);
      break;
    case 3:
      GradTile<3>(x, nb, d, res + c, m, gt + c * d);
      break;
    case 4:
      GradTile<4>(x, nb, d, res + c, m, gt + c * d);
      break;
    case 5:
      GradTile<5>(x, nb, d, res + c, m, gt + c * d);
      break;
    default:
      break;
  }
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif  // GEOMX_LOGREG_AVX2

// Test seam: forces the portable kernels so tests on an AVX2 machine cover them too.
std::atomic<bool> g_portable_kernels_for_testing{false};

}  // namespace

void UsePortableKernels(bool portable) { g_portable_kernels_for_testing.store(portable); }

void DenseScores(const float* x, int64_t nb, int64_t d, const float* wt, int64_t m, float* z) {
#if GEOMX_LOGREG_AVX2
  if (HasAvx2() && !g_portable_kernels_for_testing.load(std::memory_order_relaxed)) {
    return ScoresAvx2(x, nb, d, wt, m, z);
  }
#endif
  ScoresPortable(x, nb, d, wt, m, z);
}

void DenseGradAdd(const float* x, int64_t nb, int64_t d, const float* res, int64_t m, float* gt) {
#if GEOMX_LOGREG_AVX2
  if (HasAvx2() && !g_portable_kernels_for_testing.load(std::memory_order_relaxed)) {
    return GradAvx2(x, nb, d, res, m, gt);
  }
#endif
  GradPortable(x, nb, d, res, m, gt);
}

// wt (m x d) from w (d x m).
void ClassMajor(const float* w, int64_t d, int64_t m, std::vector<float>* wt) {
  wt->resize(static_cast<size_t>(d * m));
  for (int64_t j = 0; j < d; ++j) {
    for (int64_t c = 0; c < m; ++c) (*wt)[c * d + j] = w[j * m + c];
  }
}


}  // namespace geomx::algorithms::logreg_kernels
