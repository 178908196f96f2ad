// The kernel side of the SMO solver (smo.h): dot-product micro-kernels, kernel functions, KernelComputer's rows
// and the prediction-time kernel blocks, plus the kernel spec helpers.
#include "algorithms/estimators/smo_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/base/check.h"

// The dot-product loops below are compiled twice on x86-64 (AVX2 and baseline) and picked at load time, because
// the build targets baseline x86-64. Only batch-level functions carry the attribute (one dispatch per kernel row or
// block, not per dot product). This is an attribute, not behaviour; hence the macro. Not under ThreadSanitizer: it
// instruments the clones' ifunc resolver, which the loader runs before TSan's runtime is up (a crash at start).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define GEOMX_SMO_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GEOMX_SMO_CLONES
#endif
#define GEOMX_SMO_INLINE inline __attribute__((always_inline))

namespace geomx::algorithms::smo {
namespace {

// ---- dot-product micro-kernels ----
// Eight lanes as a GCC vector; each lane accumulates every eighth product and the lanes are added in a fixed order,
// so a dot product's value does not depend on the tile it was computed in.
typedef float V8 __attribute__((vector_size(32)));

// By reference: passing 32-byte vectors by value warns about the AVX ABI in the baseline build.
GEOMX_SMO_INLINE void Load8(const float* p, V8* v) { std::memcpy(v, p, sizeof *v); }

GEOMX_SMO_INLINE float Sum8(const V8& v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// out[r * C + c] = a[r] . b[c] over d entries.
template <int R, int C>
GEOMX_SMO_INLINE void DotTile(const float* const* a, const float* const* b, int64_t d, float* out) {
  V8 acc[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = V8{};
  }
  int64_t k = 0;
  for (; k + 8 <= d; k += 8) {
    V8 vb[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) Load8(b[c] + k, &vb[c]);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      V8 va;
      Load8(a[r] + k, &va);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] += va * vb[c];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      float s = Sum8(acc[r][c]);
      for (int64_t t = k; t < d; ++t) s += a[r][t] * b[c][t];
      out[r * C + c] = s;
    }
  }
}

// out[k] = q . row cols[k] of the row-major matrix `base` (d columns), k in [0, m). Groups of four rows; the last
// group repeats its final row rather than running a narrower tile.
GEOMX_SMO_CLONES
void DenseDots(const float* q, const float* base, int64_t d, const int32_t* cols, int64_t m, float* out) {
  const float* a[1] = {q};
  for (int64_t k = 0; k < m; k += 4) {
    const float* b[4];
    for (int c = 0; c < 4; ++c) b[c] = base + static_cast<int64_t>(cols[std::min(k + c, m - 1)]) * d;
    float tile[4];
    DotTile<1, 4>(a, b, d, tile);
    for (int c = 0; c < 4 && k + c < m; ++c) out[k + c] = tile[c];
  }
}

// outs[r][k] = q[r] . row cols[k] of `base` for four queries r in one pass over the rows (4x3 tiles).
GEOMX_SMO_CLONES
void DenseDots4(const float* const* q, const float* base, int64_t d, const int32_t* cols, int64_t m,
                float* const* outs) {
  for (int64_t k = 0; k < m; k += 3) {
    const float* b[3];
    for (int c = 0; c < 3; ++c) b[c] = base + static_cast<int64_t>(cols[std::min(k + c, m - 1)]) * d;
    float tile[12];
    DotTile<4, 3>(q, b, d, tile);
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 3 && k + c < m; ++c) outs[r][k + c] = tile[r * 3 + c];
    }
  }
}

// out[r * ldo + s] = a_r . b_s for r < ma, s < nb (rows contiguous, d columns): 4x3 register tiles, the B tile
// reused across every A row of the block (the caller keeps ma small enough for A to stay in L2).
GEOMX_SMO_CLONES
void DenseBlockDots(const float* a, int64_t ma, const float* b, int64_t nb, int64_t d, float* out, int64_t ldo) {
  for (int64_t s = 0; s < nb; s += 3) {
    const float* bp[3];
    for (int c = 0; c < 3; ++c) bp[c] = b + std::min(s + c, nb - 1) * d;
    for (int64_t r = 0; r < ma; r += 4) {
      const float* ap[4];
      for (int i = 0; i < 4; ++i) ap[i] = a + std::min(r + i, ma - 1) * d;
      float tile[12];
      DotTile<4, 3>(ap, bp, d, tile);
      for (int i = 0; i < 4 && r + i < ma; ++i) {
        for (int c = 0; c < 3 && s + c < nb; ++c) out[(r + i) * ldo + s + c] = tile[i * 3 + c];
      }
    }
  }
}

// out[k] = q . row cols[k] of a CSR table, q dense.
void SparseDots(const float* q, const data::Table& t, const int32_t* cols, int64_t m, float* out) {
  for (int64_t k = 0; k < m; ++k) {
    const int64_t row = cols[k];
    float s = 0;
    for (int64_t p = t.row_ptr[row]; p < t.row_ptr[row + 1]; ++p) s += t.values[p] * q[t.col_index[p]];
    out[k] = s;
  }
}

// out[k] <- K from the dot product out[k] of x (squared norm sq_x) with the point of squared norm sq[cols[k]].
void ApplyKernel(const KernelSpec& spec, float sq_x, const float* sq, const int32_t* cols, int64_t m, float* out) {
  const float g = static_cast<float>(spec.gamma), c0 = static_cast<float>(spec.coef0);
  switch (spec.type) {
    case KernelType::kLinear:
      return;
    case KernelType::kRbf:
      for (int64_t k = 0; k < m; ++k) {
        const float d2 = sq_x + (cols ? sq[cols[k]] : sq[k]) - 2.0f * out[k];
        out[k] = std::exp(-g * std::max(d2, 0.0f));
      }
      return;
    case KernelType::kPoly:
      for (int64_t k = 0; k < m; ++k) {
        const float base = g * out[k] + c0;
        float v = 1;
        for (int e = 0; e < spec.degree; ++e) v *= base;
        out[k] = v;
      }
      return;
    case KernelType::kSigmoid:
      for (int64_t k = 0; k < m; ++k) out[k] = std::tanh(g * out[k] + c0);
      return;
  }
}

}  // namespace

KernelComputer::KernelComputer(const data::Table& points, const KernelSpec& spec) : points_(points), spec_(spec) {
  std::vector<double> norms = SquaredNorms(points);
  sq_.assign(norms.begin(), norms.end());
}

void KernelComputer::Row(int32_t r, const int32_t* cols, int64_t m, float* out, int threads, int64_t grain,
                       std::vector<float>* scratch) const {
  const int64_t d = points_.cols;
  const float* q = nullptr;
  if (points_.sparse) {
    scratch->assign(static_cast<size_t>(d), 0.0f);
    for (int64_t p = points_.row_ptr[r]; p < points_.row_ptr[r + 1]; ++p) {
      (*scratch)[points_.col_index[p]] = points_.values[p];
    }
    q = scratch->data();
  } else {
    q = points_.Row(r);
  }
  auto dots = [&](int64_t begin, int64_t end) {
    if (points_.sparse) {
      SparseDots(q, points_, cols + begin, end - begin, out + begin);
    } else {
      DenseDots(q, points_.dense.data(), d, cols + begin, end - begin, out + begin);
    }
    ApplyKernel(spec_, sq_[r], sq_.data(), cols + begin, end - begin, out + begin);
  };
  const int64_t work = points_.sparse ? static_cast<int64_t>(points_.values.size()) : m * d;
  if (threads <= 1 || work < grain || m < 8 * threads) {
    dots(0, m);
    return;
  }
  const int64_t chunks = static_cast<int64_t>(threads) * 4;
  const int64_t step = ((m + chunks - 1) / chunks + 3) / 4 * 4;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t begin = 0; begin < m; begin += step) dots(begin, std::min(m, begin + step));
}

void KernelComputer::Rows4(const int32_t* rows, const int32_t* cols, int64_t m, float* const* outs, int threads,
                         int64_t grain) const {
  GEOMX_CHECK(!points_.sparse);
  const int64_t d = points_.cols;
  const float* q[4];
  for (int i = 0; i < 4; ++i) q[i] = points_.Row(rows[i]);
  auto dots = [&](int64_t begin, int64_t end) {
    float* o[4];
    for (int i = 0; i < 4; ++i) o[i] = outs[i] + begin;
    DenseDots4(q, points_.dense.data(), d, cols + begin, end - begin, o);
    for (int i = 0; i < 4; ++i) ApplyKernel(spec_, sq_[rows[i]], sq_.data(), cols + begin, end - begin, o[i]);
  };
  if (threads <= 1 || 4 * m * d < grain || m < 8 * threads) {
    dots(0, m);
    return;
  }
  const int64_t chunks = static_cast<int64_t>(threads) * 4;
  const int64_t step = ((m + chunks - 1) / chunks + 2) / 3 * 3;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t begin = 0; begin < m; begin += step) dots(begin, std::min(m, begin + step));
}

const char* KernelTypeName(KernelType type) {
  switch (type) {
    case KernelType::kLinear: return "linear";
    case KernelType::kPoly: return "poly";
    case KernelType::kRbf: return "rbf";
    case KernelType::kSigmoid: return "sigmoid";
  }
  return "?";
}

bool ParseKernelType(const std::string& text, KernelType* out) {
  for (KernelType t : {KernelType::kLinear, KernelType::kPoly, KernelType::kRbf, KernelType::kSigmoid}) {
    if (text == KernelTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

double KernelSpec::Apply(double dot, double sq_x, double sq_z) const {
  switch (type) {
    case KernelType::kLinear: return dot;
    case KernelType::kPoly: return std::pow(gamma * dot + coef0, degree);
    case KernelType::kRbf: return std::exp(-gamma * std::max(sq_x + sq_z - 2 * dot, 0.0));
    case KernelType::kSigmoid: return std::tanh(gamma * dot + coef0);
  }
  return 0;
}

std::vector<double> SquaredNorms(const data::Table& table) {
  std::vector<double> out(static_cast<size_t>(table.rows));
  for (int64_t i = 0; i < table.rows; ++i) out[i] = table.SquaredNorm(i);
  return out;
}

void EntrySums(const data::Table& table, double* sum, double* sum_sq, double* count) {
  const std::vector<float>& v = table.sparse ? table.values : table.dense;
  double s = 0, s2 = 0;
  for (float x : v) {
    s += x;
    s2 += static_cast<double>(x) * x;
  }
  *sum = s;
  *sum_sq = s2;
  *count = static_cast<double>(table.rows) * static_cast<double>(table.cols);
}

double ScaleGamma(double sum, double sum_sq, double count, int64_t cols) {
  if (count <= 0 || cols <= 0) return 1.0;
  const double mean = sum / count;
  const double var = sum_sq / count - mean * mean;
  return var > 0 ? 1.0 / (static_cast<double>(cols) * var) : 1.0;
}

void KernelBlock(const data::Table& queries, int64_t begin, int64_t end, const data::Table& svs,
                 std::span<const double> sv_sq_norms, const KernelSpec& kernel, float* out) {
  const int64_t m = end - begin, nsv = svs.rows, d = queries.cols;
  GEOMX_CHECK(svs.cols == d && static_cast<int64_t>(sv_sq_norms.size()) == nsv);
  if (m <= 0 || nsv == 0) return;
  std::vector<float> sq(sv_sq_norms.begin(), sv_sq_norms.end());
  if (!queries.sparse && !svs.sparse) {
    DenseBlockDots(queries.Row(begin), m, svs.dense.data(), nsv, d, out, nsv);
    for (int64_t r = 0; r < m; ++r) {
      ApplyKernel(kernel, static_cast<float>(queries.SquaredNorm(begin + r)), sq.data(), nullptr, nsv, out + r * nsv);
    }
    return;
  }
  std::vector<float> q(static_cast<size_t>(d));
  std::vector<int32_t> all(static_cast<size_t>(nsv));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t r = 0; r < m; ++r) {
    queries.CopyRow(begin + r, q.data());
    float* row = out + r * nsv;
    if (svs.sparse) {
      SparseDots(q.data(), svs, all.data(), nsv, row);
    } else {
      DenseDots(q.data(), svs.dense.data(), d, all.data(), nsv, row);
    }
    ApplyKernel(kernel, static_cast<float>(queries.SquaredNorm(begin + r)), sq.data(), nullptr, nsv, row);
  }
}

}  // namespace geomx::algorithms::smo
