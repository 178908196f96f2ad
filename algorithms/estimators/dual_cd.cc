#include "algorithms/estimators/dual_cd.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace geomx::algorithms {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A curvature of 0 (an all-zero example without a bias feature under the L1 loss) would divide by zero; a tiny one
// sends the coordinate to the bound its gradient points at, which is the exact minimiser there.
constexpr double kMinCurvature = 1e-12;
// LIBLINEAR skips steps this small; so do we (they cost a pass over the row for nothing).
constexpr double kMinStep = 1e-12;

// Fisher-Yates over the first `count` entries.
void ShuffleFirst(std::vector<int64_t>* index, int64_t count, Rng* rng) {
  for (int64_t k = count - 1; k > 0; --k) {
    const int64_t j = static_cast<int64_t>(rng->Below(static_cast<uint64_t>(k + 1)));
    std::swap((*index)[static_cast<size_t>(k)], (*index)[static_cast<size_t>(j)]);
  }
}

// The box and the diagonal of one dual variable for its cost C_i; a cost of 0 (a row of weight 0) pins it to 0.
void SetCost(SvmLoss loss, float cost, double* upper, double* diag) {
  if (!(cost > 0)) {
    *upper = 0;
    *diag = 0;
  } else if (loss == SvmLoss::kHinge) {
    *upper = cost;
    *diag = 0;
  } else {
    *upper = kInf;
    *diag = 0.5 / cost;
  }
}

// The rows a pass visits: those active in at least one of the listed problems, in a random order.
std::vector<int64_t> VisitOrder(int64_t n, const std::vector<const std::vector<char>*>& flags, Rng* rng) {
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (const std::vector<char>* f : flags) {
      if ((*f)[static_cast<size_t>(i)]) {
        rows.push_back(i);
        break;
      }
    }
  }
  ShuffleFirst(&rows, static_cast<int64_t>(rows.size()), rng);
  return rows;
}

// Binary SVM duals (Hsieh et al. 2008, Algorithm 1 with the shrinking of section 3.2), one per problem:
//   min_alpha 0.5 alpha' (Q + D) alpha - e' alpha,  0 <= alpha_i <= U_i,  Q_ij = y_i y_j x_i . x_j
// with U_i = C_i, D_ii = 0 for the hinge loss and U_i = inf, D_ii = 1 / (2 C_i) for the squared hinge.
template <class Examples>
class SvcTask final : public DualCdTask {
 public:
  SvcTask(const Examples& examples, std::vector<std::vector<float>> y, const std::vector<std::vector<float>>& cost,
          SvmLoss loss, double tol, uint64_t seed)
      : DualCdTask(static_cast<int64_t>(y.size()), examples.dim()), examples_(&examples), tol_(tol), seed_(seed) {
    const size_t n = static_cast<size_t>(examples.size());
    state_.resize(y.size());
    for (size_t p = 0; p < y.size(); ++p) {
      Problem& s = state_[p];
      s.y = std::move(y[p]);
      s.upper.resize(n);
      s.diag.resize(n);
      for (size_t i = 0; i < n; ++i) SetCost(loss, cost[p][i], &s.upper[i], &s.diag[i]);
      s.alpha.assign(n, 0.0);
      s.flag.assign(n, 1);
      s.active = static_cast<int64_t>(n);
    }
  }

  void Pass(std::span<const int64_t> problems, PassMode mode, uint64_t pass_id) override {
    std::vector<int64_t> live;
    std::vector<const std::vector<char>*> flags;
    for (int64_t p : problems) {
      if (done(p)) continue;
      live.push_back(p);
      flags.push_back(&state_[static_cast<size_t>(p)].flag);
    }
    if (live.empty()) return;
    const int64_t n = examples_->size();
    Rng rng = Rng(seed_).Fork(pass_id * 4099u + static_cast<uint64_t>(live[0]));
    const std::vector<int64_t> rows = VisitOrder(n, flags, &rng);
    const bool shrinking = mode == PassMode::kShrinking;
    std::vector<double> pg_max(live.size(), -kInf), pg_min(live.size(), kInf);
    for (int64_t row : rows) {
      const size_t i = static_cast<size_t>(row);
      for (size_t k = 0; k < live.size(); ++k) {
        Problem& s = state_[static_cast<size_t>(live[k])];
        if (!s.flag[i]) continue;
        float* w = w_.data() + live[k] * dim_;
        const double a = s.alpha[i];
        const double g = s.y[i] * static_cast<double>(examples_->Dot(row, w)) - 1.0 + s.diag[i] * a;
        double pg;  // the projected gradient
        if (a <= 0.0) {
          // At the lower bound with a gradient beyond last pass's largest violation: it will stay at 0.
          if (shrinking && g > s.pg_max_old) {
            s.flag[i] = 0;
            --s.active;
            continue;
          }
          pg = std::min(g, 0.0);
        } else if (a >= s.upper[i]) {
          if (shrinking && g < s.pg_min_old) {
            s.flag[i] = 0;
            --s.active;
            continue;
          }
          pg = std::max(g, 0.0);
        } else {
          pg = g;
        }
        pg_max[k] = std::max(pg_max[k], pg);
        pg_min[k] = std::min(pg_min[k], pg);
        if (std::fabs(pg) > kMinStep) {
          const double curvature = std::max(examples_->SquaredNorm(row) + s.diag[i], kMinCurvature);
          const double next = std::min(std::max(a - g / curvature, 0.0), s.upper[i]);
          s.alpha[i] = next;
          examples_->Axpy(row, static_cast<float>((next - a) * s.y[i]), w);
        }
      }
    }
    for (size_t k = 0; k < live.size(); ++k) {
      const size_t p = static_cast<size_t>(live[k]);
      Problem& s = state_[p];
      violation_[p] = pg_max[k] >= pg_min[k] ? pg_max[k] - pg_min[k] : 0.0;  // nothing visited: 0
      if (mode == PassMode::kLocal) continue;
      if (violation_[p] <= tol_) {
        if (s.active == n) {
          done_[p] = 1;
        } else {  // converged on the active set: check every coordinate again before stopping
          std::fill(s.flag.begin(), s.flag.end(), 1);
          s.active = n;
          s.pg_max_old = kInf;
          s.pg_min_old = -kInf;
        }
        continue;
      }
      s.pg_max_old = pg_max[k] > 0 ? pg_max[k] : kInf;
      s.pg_min_old = pg_min[k] < 0 ? pg_min[k] : -kInf;
    }
  }

  int64_t active(int64_t p) const override { return state_[static_cast<size_t>(p)].active; }

  bool GlobalConverged(int64_t, std::span<const float> per_worker_violation) override {
    float worst = 0;
    for (float v : per_worker_violation) worst = std::max(worst, v);
    return worst <= tol_;
  }

  double SeparableObjective(int64_t p) const override {
    const Problem& s = state_[static_cast<size_t>(p)];
    double sum = 0;
    for (size_t i = 0; i < s.alpha.size(); ++i) sum += 0.5 * s.diag[i] * s.alpha[i] * s.alpha[i] - s.alpha[i];
    return sum;
  }

  std::span<const double> coefficients(int64_t p) const override { return state_[static_cast<size_t>(p)].alpha; }

  void BeginRound(int64_t p) override {
    Problem& s = state_[static_cast<size_t>(p)];
    s.alpha_start = s.alpha;
    s.w_start.assign(w(p).begin(), w(p).end());
  }

  void EndRound(int64_t p, double scale, std::span<float> delta) override {
    Problem& s = state_[static_cast<size_t>(p)];
    std::span<float> wp = w(p);
    for (size_t j = 0; j < wp.size(); ++j) {
      delta[j] = wp[j] - s.w_start[j];
      wp[j] = s.w_start[j];
    }
    for (size_t i = 0; i < s.alpha.size(); ++i) s.alpha[i] = s.alpha_start[i] + scale * (s.alpha[i] - s.alpha_start[i]);
  }

 private:
  struct Problem {
    std::vector<float> y;
    std::vector<double> upper, diag, alpha;
    std::vector<char> flag;  // 1 = in the active set
    int64_t active = 0;
    double pg_max_old = kInf, pg_min_old = -kInf;  // last pass's projected-gradient extremes (shrinking thresholds)
    std::vector<double> alpha_start;
    std::vector<float> w_start;
  };
  const Examples* examples_;
  std::vector<Problem> state_;
  double tol_;
  uint64_t seed_;
};

// The epsilon-insensitive SVR dual in one variable per example (Ho & Lin 2012, section 3):
//   min_beta 0.5 beta' (Q + D) beta - y' beta + eps ||beta||_1,  -U_i <= beta_i <= U_i,  Q_ij = x_i . x_j
// with U_i = C_i, D_ii = 0 (L1 loss) or U_i = inf, D_ii = 1 / (2 C_i) (L2 loss). Each coordinate step is the exact
// minimiser of the one-variable piecewise quadratic, then clipped to the box. One problem.
template <class Examples>
class SvrTask final : public DualCdTask {
 public:
  SvrTask(const Examples& examples, std::vector<float> y, const std::vector<float>& cost, SvmLoss loss,
          double epsilon, double tol, uint64_t seed)
      : DualCdTask(1, examples.dim()), examples_(&examples), y_(std::move(y)), epsilon_(epsilon), tol_(tol),
        seed_(seed) {
    const size_t n = static_cast<size_t>(examples.size());
    upper_.resize(n);
    diag_.resize(n);
    for (size_t i = 0; i < n; ++i) SetCost(loss, cost[i], &upper_[i], &diag_[i]);
    beta_.assign(n, 0.0);
    flag_.assign(n, 1);
    active_ = static_cast<int64_t>(n);
  }

  void Pass(std::span<const int64_t> problems, PassMode mode, uint64_t pass_id) override {
    if (problems.empty() || done(0)) return;
    const int64_t n = examples_->size();
    Rng rng = Rng(seed_).Fork(pass_id);
    const std::vector<int64_t> rows = VisitOrder(n, {&flag_}, &rng);
    const bool shrinking = mode == PassMode::kShrinking;
    double g_max = 0, g_norm1 = 0;
    float* w = w_.data();
    for (int64_t row : rows) {
      const size_t i = static_cast<size_t>(row);
      const double b = beta_[i];
      const double g = static_cast<double>(examples_->Dot(row, w)) - y_[i] + diag_[i] * b;
      const double gp = g + epsilon_;  // derivative for beta_i > 0
      const double gn = g - epsilon_;  // derivative for beta_i < 0
      double violation = 0;
      bool settled = false;  // at a bound (or 0) and far enough inside its optimality region to shrink
      if (b == 0.0) {
        if (gp < 0) {
          violation = -gp;
        } else if (gn > 0) {
          violation = gn;
        } else {
          settled = gp > g_max_old_ && gn < -g_max_old_;
        }
      } else if (b >= upper_[i]) {
        if (gp > 0) {
          violation = gp;
        } else {
          settled = gp < -g_max_old_;
        }
      } else if (b <= -upper_[i]) {
        if (gn < 0) {
          violation = -gn;
        } else {
          settled = gn > g_max_old_;
        }
      } else {
        violation = b > 0 ? std::fabs(gp) : std::fabs(gn);
      }
      if (shrinking && settled) {
        flag_[i] = 0;
        --active_;
        continue;
      }
      g_max = std::max(g_max, violation);
      g_norm1 += violation;

      const double h = std::max(examples_->SquaredNorm(row) + diag_[i], kMinCurvature);
      double step;
      if (gp < h * b) {
        step = -gp / h;  // the minimiser of the beta > 0 piece lies in beta > 0
      } else if (gn > h * b) {
        step = -gn / h;  // ... of the beta < 0 piece in beta < 0
      } else {
        step = -b;  // the kink at 0 is the minimiser
      }
      if (std::fabs(step) < kMinStep) continue;
      const double next = std::min(std::max(b + step, -upper_[i]), upper_[i]);
      beta_[i] = next;
      if (next != b) examples_->Axpy(row, static_cast<float>(next - b), w);
    }
    if (!have_init_) {
      g_norm1_init_ = g_norm1;
      have_init_ = true;
    }
    violation_[0] = g_norm1;
    if (mode == PassMode::kLocal) return;
    if (g_norm1 <= tol_ * g_norm1_init_) {
      if (active_ == n) {
        done_[0] = 1;
      } else {
        std::fill(flag_.begin(), flag_.end(), 1);
        active_ = n;
        g_max_old_ = kInf;
      }
      return;
    }
    g_max_old_ = g_max;
  }

  int64_t active(int64_t) const override { return active_; }

  bool GlobalConverged(int64_t, std::span<const float> per_worker_violation) override {
    double total = 0;
    for (float v : per_worker_violation) total += v;
    if (global_init_ < 0) global_init_ = total;
    return total <= tol_ * global_init_;
  }

  double SeparableObjective(int64_t) const override {
    double s = 0;
    for (size_t i = 0; i < beta_.size(); ++i) {
      s += 0.5 * diag_[i] * beta_[i] * beta_[i] - y_[i] * beta_[i] + epsilon_ * std::fabs(beta_[i]);
    }
    return s;
  }

  std::span<const double> coefficients(int64_t) const override { return beta_; }

  void BeginRound(int64_t) override {
    beta_start_ = beta_;
    w_start_ = w_;
  }

  void EndRound(int64_t, double scale, std::span<float> delta) override {
    for (size_t j = 0; j < w_.size(); ++j) delta[j] = w_[j] - w_start_[j];
    w_ = w_start_;
    for (size_t i = 0; i < beta_.size(); ++i) beta_[i] = beta_start_[i] + scale * (beta_[i] - beta_start_[i]);
  }

 private:
  const Examples* examples_;
  std::vector<float> y_;
  std::vector<double> upper_, diag_, beta_;
  std::vector<char> flag_;  // 1 = in the active set
  int64_t active_ = 0;
  double g_max_old_ = kInf;
  double g_norm1_init_ = 0;  // the first pass's summed violation: the scale of the relative stopping rule
  bool have_init_ = false;
  double global_init_ = -1;  // the same across the job (first round's sum over the workers)
  double epsilon_, tol_;
  uint64_t seed_;
  std::vector<double> beta_start_;
  std::vector<float> w_start_;
};

}  // namespace

// ---- Kernels. An AVX2 + FMA version where the CPU has it (chosen once at run time; the build targets the baseline
// ISA), else a portable loop. The dot product keeps four independent accumulators: a single one would wait on the
// FMA latency at every step.

namespace {

#if defined(__x86_64__)
bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

__attribute__((target("avx2,fma"))) float DenseDotAvx2(const float* x, const float* w, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(w + j), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(w + j + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 16), _mm256_loadu_ps(w + j + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 24), _mm256_loadu_ps(w + j + 24), a3);
  }
  for (; j + 8 <= n; j += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(w + j), a0);
  const __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  float s = _mm_cvtss_f32(h);
  for (; j < n; ++j) s += x[j] * w[j];
  return s;
}

__attribute__((target("avx2,fma"))) void DenseAxpyAvx2(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    _mm256_storeu_ps(y + j, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
    _mm256_storeu_ps(y + j + 8, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(y + j + 8)));
  }
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
  for (; j < n; ++j) y[j] += a * x[j];
}
#endif

}  // namespace

float DenseDot(const float* x, const float* w, int64_t n) {
#if defined(__x86_64__)
  if (HasAvx2Fma()) return DenseDotAvx2(x, w, n);
#endif
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += x[j] * w[j];
    s1 += x[j + 1] * w[j + 1];
    s2 += x[j + 2] * w[j + 2];
    s3 += x[j + 3] * w[j + 3];
  }
  for (; j < n; ++j) s0 += x[j] * w[j];
  return (s0 + s1) + (s2 + s3);
}

void DenseAxpy(float a, const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (HasAvx2Fma()) {
    DenseAxpyAvx2(a, x, y, n);
    return;
  }
#endif
  for (int64_t j = 0; j < n; ++j) y[j] += a * x[j];
}

float SparseDot(const int32_t* index, const float* value, int64_t nnz, const float* w) {
  float s = 0;
  for (int64_t p = 0; p < nnz; ++p) s += value[p] * w[index[p]];
  return s;
}

void SparseAxpy(float a, const int32_t* index, const float* value, int64_t nnz, float* y) {
  for (int64_t p = 0; p < nnz; ++p) y[index[p]] += a * value[p];
}

namespace {

float RowDot(const data::Table& t, int64_t i, const float* w) {
  if (t.sparse) {
    const int64_t begin = t.row_ptr[static_cast<size_t>(i)];
    return SparseDot(t.col_index.data() + begin, t.values.data() + begin, t.row_ptr[static_cast<size_t>(i) + 1] - begin,
                     w);
  }
  return DenseDot(t.Row(i), w, t.cols);
}

void RowAxpy(const data::Table& t, int64_t i, float a, float* w) {
  if (t.sparse) {
    const int64_t begin = t.row_ptr[static_cast<size_t>(i)];
    SparseAxpy(a, t.col_index.data() + begin, t.values.data() + begin, t.row_ptr[static_cast<size_t>(i) + 1] - begin,
               w);
    return;
  }
  DenseAxpy(a, t.Row(i), w, t.cols);
}

// ||x_a - x_b||^2 summed directly (not through the norms, which would cancel badly for near-equal rows).
double DifferenceNorm(const data::Table& t, int64_t a, int64_t b) {
  double s = 0;
  if (!t.sparse) {
    const float* xa = t.Row(a);
    const float* xb = t.Row(b);
    for (int64_t j = 0; j < t.cols; ++j) {
      const double d = static_cast<double>(xa[j]) - xb[j];
      s += d * d;
    }
    return s;
  }
  int64_t p = t.row_ptr[static_cast<size_t>(a)], pe = t.row_ptr[static_cast<size_t>(a) + 1];
  int64_t q = t.row_ptr[static_cast<size_t>(b)], qe = t.row_ptr[static_cast<size_t>(b) + 1];
  while (p < pe || q < qe) {
    double d;
    if (q >= qe || (p < pe && t.col_index[static_cast<size_t>(p)] < t.col_index[static_cast<size_t>(q)])) {
      d = t.values[static_cast<size_t>(p++)];
    } else if (p >= pe || t.col_index[static_cast<size_t>(q)] < t.col_index[static_cast<size_t>(p)]) {
      d = -static_cast<double>(t.values[static_cast<size_t>(q++)]);
    } else {
      d = static_cast<double>(t.values[static_cast<size_t>(p++)]) - t.values[static_cast<size_t>(q++)];
    }
    s += d * d;
  }
  return s;
}

}  // namespace

RowExamples::RowExamples(const data::Table& table, float bias, int threads) : table_(&table), bias_(bias) {
  norms_.resize(static_cast<size_t>(table.rows));
  const double bias2 = static_cast<double>(bias) * bias;
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads))
  for (int64_t i = 0; i < table.rows; ++i) norms_[static_cast<size_t>(i)] = table.SquaredNorm(i) + bias2;
}

float RowExamples::Dot(int64_t i, const float* w) const {
  const float s = RowDot(*table_, i, w);
  return bias_ != 0.0f ? s + bias_ * w[table_->cols] : s;
}

void RowExamples::Axpy(int64_t i, float a, float* w) const {
  RowAxpy(*table_, i, a, w);
  if (bias_ != 0.0f) w[table_->cols] += a * bias_;
}

PairExamples::PairExamples(const data::Table& table, std::vector<std::pair<int64_t, int64_t>> pairs, int threads)
    : table_(&table), pairs_(std::move(pairs)) {
  norms_.resize(pairs_.size());
  const int64_t n = static_cast<int64_t>(pairs_.size());
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads))
  for (int64_t k = 0; k < n; ++k) {
    const auto& [a, b] = pairs_[static_cast<size_t>(k)];
    norms_[static_cast<size_t>(k)] = DifferenceNorm(table, a, b);
  }
}

float PairExamples::Dot(int64_t k, const float* w) const {
  const auto& [a, b] = pairs_[static_cast<size_t>(k)];
  return RowDot(*table_, a, w) - RowDot(*table_, b, w);
}

void PairExamples::Axpy(int64_t k, float a, float* w) const {
  const auto& [i, j] = pairs_[static_cast<size_t>(k)];
  RowAxpy(*table_, i, a, w);
  RowAxpy(*table_, j, -a, w);
}

DualCdTask::DualCdTask(int64_t problems, int64_t dim)
    : dim_(dim),
      w_(static_cast<size_t>(problems * dim), 0.0f),
      violation_(static_cast<size_t>(problems), kInf),
      done_(static_cast<size_t>(problems), 0) {}

void DualCdTask::ApplyDelta(int64_t p, double scale, std::span<const float> summed) {
  std::span<float> wp = w(p);
  for (size_t j = 0; j < wp.size(); ++j) wp[j] += static_cast<float>(scale * summed[j]);
}

std::unique_ptr<DualCdTask> MakeSvcTask(const RowExamples& examples, std::vector<std::vector<float>> y,
                                        std::vector<std::vector<float>> cost, SvmLoss loss, double tol, uint64_t seed) {
  return std::make_unique<SvcTask<RowExamples>>(examples, std::move(y), cost, loss, tol, seed);
}

std::unique_ptr<DualCdTask> MakeSvcTask(const PairExamples& examples, std::vector<std::vector<float>> y,
                                        std::vector<std::vector<float>> cost, SvmLoss loss, double tol, uint64_t seed) {
  return std::make_unique<SvcTask<PairExamples>>(examples, std::move(y), cost, loss, tol, seed);
}

std::unique_ptr<DualCdTask> MakeSvrTask(const RowExamples& examples, std::vector<float> y, std::vector<float> cost,
                                        SvmLoss loss, double epsilon, double tol, uint64_t seed) {
  return std::make_unique<SvrTask<RowExamples>>(examples, std::move(y), cost, loss, epsilon, tol, seed);
}

namespace {

double Objective(const DualCdTask& task, const std::vector<double>& separable) {
  double s = 0;
  for (int64_t p = 0; p < task.problems(); ++p) {
    double norm = 0;
    for (float v : task.w(p)) norm += static_cast<double>(v) * v;
    s += 0.5 * norm + separable[static_cast<size_t>(p)];
  }
  return s;
}

// Below this much work per pass (coordinates x dim) one thread does it all: waking a team every pass would cost
// more than it saves on small problems.
constexpr int64_t kMinParallelWork = int64_t{1} << 18;

// Spreads the listed problems over at most `threads` groups, balancing the coordinates their next passes visit
// (largest first onto the lightest group).
std::vector<std::vector<int64_t>> Balance(const DualCdTask& task, const std::vector<int64_t>& problems, int threads) {
  int64_t work = 0;
  for (int64_t p : problems) work += task.active(p) * task.dim();
  if (work < kMinParallelWork) threads = 1;
  const size_t groups = std::min(problems.size(), static_cast<size_t>(std::max(1, threads)));
  std::vector<std::vector<int64_t>> out(groups);
  if (groups == 0) return out;
  std::vector<int64_t> sorted = problems;
  std::stable_sort(sorted.begin(), sorted.end(), [&](int64_t a, int64_t b) { return task.active(a) > task.active(b); });
  std::vector<int64_t> load(groups, 0);
  for (int64_t p : sorted) {
    const size_t g = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[g].push_back(p);
    load[g] += task.active(p) + 1;
  }
  for (auto& g : out) std::sort(g.begin(), g.end());
  return out;
}

Result<DualCdReport> RunAlone(DualCdTask* task, const DualCdOptions& options, const FitContext& context,
                              const std::function<Metrics()>& eval) {
  DualCdReport report;
  const PassMode mode = options.shrinking ? PassMode::kShrinking : PassMode::kFull;
  std::vector<int64_t> running;
  for (int64_t p = 0; p < task->problems(); ++p) {
    if (!task->done(p)) running.push_back(p);
  }
  for (int64_t pass = 1; pass <= options.max_iter && !running.empty(); ++pass) {
    if (context.Interrupted()) {
      return Status::Cancelled("dual coordinate descent interrupted after " + std::to_string(pass - 1) + " passes");
    }
    const std::vector<std::vector<int64_t>> groups = Balance(*task, running, context.threads);
    const int count = static_cast<int>(groups.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(count)
    for (int g = 0; g < count; ++g) task->Pass(groups[static_cast<size_t>(g)], mode, static_cast<uint64_t>(pass));
    report.steps = pass;
    double worst = 0;
    for (int64_t p : running) worst = std::max(worst, task->violation(p));
    std::erase_if(running, [&](int64_t p) { return task->done(p); });
    if (context.observer != nullptr) {
      std::vector<double> separable;
      for (int64_t p = 0; p < task->problems(); ++p) separable.push_back(task->SeparableObjective(p));
      Metrics metrics = {{"objective", Objective(*task, separable)},
                         {"violation", worst},
                         {"active_problems", static_cast<double>(running.size())}};
      if (eval && (pass % std::max<int64_t>(1, options.eval_every) == 0 || running.empty() ||
                   pass == options.max_iter)) {
        for (Metric& m : eval()) metrics.push_back(std::move(m));
      }
      context.observer->OnStep(pass, metrics);
    }
  }
  report.converged = running.empty();
  return report;
}

Result<DualCdReport> RunCoCoA(DualCdTask* task, const DualCdOptions& options, const FitContext& context,
                              const std::string& key, const std::function<Metrics()>& eval) {
  Collective* collective = context.collective;
  const int world = collective->world();
  const double scale = 1.0 / world;  // safe averaging (gamma = 1/K)
  const int64_t problems = task->problems();
  const size_t dim = static_cast<size_t>(task->dim());
  const size_t separable_at = static_cast<size_t>(problems) * dim;
  const size_t interrupt_at = separable_at + static_cast<size_t>(problems);

  DualCdReport report;
  for (int64_t round = 1; round <= options.outer_rounds; ++round) {
    std::vector<int64_t> running;
    for (int64_t p = 0; p < problems; ++p) {
      if (!task->done(p)) running.push_back(p);  // done only by the job's decisions below: the same everywhere
    }
    std::vector<float> sums(interrupt_at + 1, 0.0f);
    std::vector<float> violation(static_cast<size_t>(problems), 0.0f);
    const std::vector<std::vector<int64_t>> groups = Balance(*task, running, context.threads);
    const int count = static_cast<int>(groups.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(count, 1))
    for (int g = 0; g < count; ++g) {
      const std::vector<int64_t>& group = groups[static_cast<size_t>(g)];
      for (int64_t p : group) task->BeginRound(p);
      for (int64_t e = 0; e < options.local_epochs; ++e) {
        task->Pass(group, PassMode::kLocal, static_cast<uint64_t>((round - 1) * options.local_epochs + e + 1));
        // The first pass starts from the shared w: its violation says where the job stands.
        if (e == 0) {
          for (int64_t p : group) violation[static_cast<size_t>(p)] = static_cast<float>(task->violation(p));
        }
      }
      for (int64_t p : group) task->EndRound(p, scale, std::span<float>(sums.data() + static_cast<size_t>(p) * dim, dim));
    }
    for (int64_t p = 0; p < problems; ++p) sums[separable_at + static_cast<size_t>(p)] = static_cast<float>(task->SeparableObjective(p));
    sums[interrupt_at] = context.Interrupted() ? 1.0f : 0.0f;
    GEOMX_RETURN_IF_ERROR(collective->AllReduceSumCompressible(key + "/delta", sums, static_cast<size_t>(problems) + 1));
    for (int64_t p : running) task->ApplyDelta(p, scale, std::span<const float>(sums.data() + static_cast<size_t>(p) * dim, dim));
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> gathered, collective->AllGather(key + "/violation", violation));
    if (gathered.size() != static_cast<size_t>(problems) * static_cast<size_t>(world)) {
      return Status::Internal(key + ": gathered " + std::to_string(gathered.size()) + " violations, expected " +
                              std::to_string(problems * world));
    }
    double worst = 0;
    std::vector<float> per_worker(static_cast<size_t>(world));
    for (int64_t p : running) {
      for (int k = 0; k < world; ++k) {
        per_worker[static_cast<size_t>(k)] = gathered[static_cast<size_t>(k * problems + p)];
        worst = std::max(worst, static_cast<double>(per_worker[static_cast<size_t>(k)]));
      }
      if (task->GlobalConverged(p, per_worker)) task->Finish(p);
    }
    report.steps = round;
    if (context.observer != nullptr) {
      std::vector<double> separable(sums.begin() + static_cast<std::ptrdiff_t>(separable_at),
                                    sums.begin() + static_cast<std::ptrdiff_t>(interrupt_at));
      Metrics metrics = {{"objective", Objective(*task, separable)}, {"violation", worst}};
      if (eval) {
        for (Metric& m : eval()) metrics.push_back(std::move(m));
      }
      context.observer->OnStep(round, metrics);
    }
    if (sums[interrupt_at] > 0) {
      return Status::Cancelled(key + ": interrupted after " + std::to_string(round) + " rounds");
    }
    bool all_done = true;
    for (int64_t p = 0; p < problems; ++p) all_done = all_done && task->done(p);
    if (all_done) {
      report.converged = true;
      break;
    }
  }
  return report;
}

}  // namespace

Result<DualCdReport> RunDualCd(DualCdTask* task, const DualCdOptions& options, const FitContext& context,
                               const std::string& key, const std::function<Metrics()>& eval) {
  if (context.collective == nullptr) return RunAlone(task, options, context, eval);
  return RunCoCoA(task, options, context, key, eval);
}

std::vector<float> LinearDecisionValues(const data::Table& input, const std::vector<float>& weights,
                                        int64_t num_vectors, int threads) {
  const int64_t stride = input.cols + 1;
  std::vector<float> out(static_cast<size_t>(input.rows * num_vectors));
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads))
  for (int64_t i = 0; i < input.rows; ++i) {
    for (int64_t v = 0; v < num_vectors; ++v) {
      const float* w = weights.data() + v * stride;
      out[static_cast<size_t>(i * num_vectors + v)] = RowDot(input, i, w) + w[input.cols];
    }
  }
  return out;
}

void SaveLinearWeights(ModelWriter* out, const std::vector<float>& weights, int64_t num_vectors, int64_t cols) {
  const std::vector<int64_t> shape = {num_vectors, cols};
  out->PutInts("linear.shape", shape);
  out->PutFloats("linear.weights", weights);
}

Status LoadLinearWeights(const ModelReader& in, std::vector<float>* weights, int64_t* num_vectors, int64_t* cols) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("linear.shape", &shape, 2));
  // Bounds keep num_vectors * (cols + 1) far from overflow; GetFloats then checks it against the bytes present.
  if (shape[0] < 1 || shape[0] > (int64_t{1} << 20) || shape[1] < 0 || shape[1] > (int64_t{1} << 40)) {
    return Status::DataLoss(in.source() + ": section 'linear.shape' holds an impossible shape " +
                            std::to_string(shape[0]) + " x " + std::to_string(shape[1]));
  }
  GEOMX_RETURN_IF_ERROR(in.GetFloats("linear.weights", weights, shape[0] * (shape[1] + 1)));
  *num_vectors = shape[0];
  *cols = shape[1];
  return Status::Ok();
}

}  // namespace geomx::algorithms
