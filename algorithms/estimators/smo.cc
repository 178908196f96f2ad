#include "algorithms/estimators/smo.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "algorithms/estimators/smo_kernel.h"
#include "engine/base/check.h"

namespace geomx::algorithms::smo {
namespace {

constexpr double kTau = 1e-12;  // floor of the curvature in the two-variable step (non-PSD kernels)
constexpr double kInf = std::numeric_limits<double>::infinity();

// LRU cache of kernel rows (n floats each, indexed by point). A row is "complete" (every column computed) or holds
// the columns that were active in one shrinking generation; the active set only shrinks inside a generation, so such
// a row serves every later request of that generation. Not thread-safe (one per solver).
class RowCache {
 public:
  RowCache(int64_t n, double mb) : n_(n), slot_of_(static_cast<size_t>(n), -1) {
    const double rows = mb * 1048576.0 / (4.0 * static_cast<double>(std::max<int64_t>(n, 1)));
    capacity_ = static_cast<int64_t>(std::clamp(rows, 2.0, static_cast<double>(std::max<int64_t>(n, 2))));
  }

  enum class State : uint8_t { kEmpty, kPartial, kComplete };

  // The buffer of row `row`, most recently used from now on, and what it holds: kComplete (every column),
  // kPartial (the columns active in `generation`; rows of an older generation count as kEmpty) or kEmpty. The
  // caller fills what it needs and calls Filled(). The two most recently used buffers stay in place.
  float* Get(int32_t row, uint32_t generation, State* state) {
    int32_t s = slot_of_[row];
    if (s >= 0) {
      Touch(s);
      const Slot& slot = slots_[s];
      *state = slot.complete ? State::kComplete : slot.generation == generation ? State::kPartial : State::kEmpty;
      return slots_[s].data.data();
    }
    if (static_cast<int64_t>(slots_.size()) < capacity_) {
      s = static_cast<int32_t>(slots_.size());
      slots_.emplace_back();
      slots_[s].data.resize(static_cast<size_t>(n_));
      Link(s);
    } else {
      s = tail_;
      slot_of_[slots_[s].row] = -1;
      Touch(s);
    }
    Slot& slot = slots_[s];
    slot.row = row;
    slot.complete = false;
    slot.generation = std::numeric_limits<uint32_t>::max();
    slot_of_[row] = s;
    *state = State::kEmpty;
    return slot.data.data();
  }

  int64_t capacity() const { return capacity_; }
  // Whether Get(row, generation) would find a usable row for a request of the active columns (no LRU change).
  bool Has(int32_t row, uint32_t generation) const {
    const int32_t s = slot_of_[row];
    return s >= 0 && (slots_[s].complete || slots_[s].generation == generation);
  }

  void Filled(int32_t row, bool full, uint32_t generation) {
    Slot& slot = slots_[slot_of_[row]];
    slot.complete = full;
    slot.generation = generation;
  }

 private:
  struct Slot {
    int32_t row = -1;
    bool complete = false;
    uint32_t generation = 0;
    int32_t prev = -1, next = -1;
    std::vector<float> data;
  };
  void Unlink(int32_t s) {
    Slot& x = slots_[s];
    (x.prev >= 0 ? slots_[x.prev].next : head_) = x.next;
    (x.next >= 0 ? slots_[x.next].prev : tail_) = x.prev;
  }
  void Link(int32_t s) {  // at the head (most recent)
    slots_[s].prev = -1;
    slots_[s].next = head_;
    if (head_ >= 0) slots_[head_].prev = s;
    head_ = s;
    if (tail_ < 0) tail_ = s;
  }
  void Touch(int32_t s) {
    if (head_ == s) return;
    Unlink(s);
    Link(s);
  }

  int64_t n_;
  int64_t capacity_ = 2;
  std::vector<int32_t> slot_of_;
  std::vector<Slot> slots_;
  int32_t head_ = -1, tail_ = -1;
};

// The generic dual problem (see smo.h) over L variables; variable t uses kernel point kidx[t].
class Solver {
 public:
  Solver(const data::Table& points, const KernelSpec& spec, std::vector<int32_t> kidx, std::vector<double> y,
         std::vector<double> p, std::vector<double> upper, const SolverOptions& options)
      : kernel_(points, spec),
        n_(points.rows),
        len_(static_cast<int32_t>(kidx.size())),
        kidx_(std::move(kidx)),
        y_(std::move(y)),
        p_(std::move(p)),
        upper_(std::move(upper)),
        options_(options),
        cache_(points.rows, options.cache_mb) {
    all_points_.resize(static_cast<size_t>(n_));
    std::iota(all_points_.begin(), all_points_.end(), 0);
    for (int32_t t = 0; t < len_; ++t) GEOMX_CHECK(upper_[t] > 0) << "SMO needs positive upper bounds";
  }

  SolveResult Run();

 private:
  bool AtUpper(int32_t t) const { return alpha_[t] >= upper_[t]; }
  bool AtLower(int32_t t) const { return alpha_[t] <= 0; }
  // I_up: a_t may move so that y_t a_t grows; I_low: so that it shrinks.
  bool InUp(int32_t t) const { return y_[t] > 0 ? !AtUpper(t) : !AtLower(t); }
  bool InLow(int32_t t) const { return y_[t] > 0 ? !AtLower(t) : !AtUpper(t); }

  const float* KernelRow(int32_t t, bool full);
  void PrefetchPartners(int32_t i, double gmax);
  bool SelectWorkingSet(int32_t* out_i, int32_t* out_j);
  void Update(int32_t i, int32_t j);
  void UpdateGBar(int32_t t, bool was_upper);
  void Shrink();
  void ReconstructGradient();
  void ActivateAll();
  void RebuildActivePoints();
  double Rho() const;

  KernelComputer kernel_;
  int64_t n_;
  int32_t len_;
  std::vector<int32_t> kidx_;
  std::vector<double> y_, p_, upper_;
  SolverOptions options_;
  RowCache cache_;

  std::vector<double> alpha_, grad_, grad_bar_, qd_;
  std::vector<int32_t> active_;         // active variables, ascending
  std::vector<int32_t> active_points_;  // their kernel points, ascending and unique
  std::vector<int32_t> inactive_points_;  // the other kernel points
  std::vector<int32_t> all_points_;     // 0 .. n-1
  std::vector<float> row_buffer_, batch_buffer_, scratch_;
  uint32_t generation_ = 0;
  bool unshrunk_ = false;
  int64_t kernel_rows_ = 0;
};

// A partial row of this generation already holds every active column, so completing it costs only the inactive
// ones.
const float* Solver::KernelRow(int32_t t, bool full) {
  const int32_t r = kidx_[t];
  full = full || inactive_points_.empty();
  RowCache::State state;
  float* row = cache_.Get(r, generation_, &state);
  if (state == RowCache::State::kComplete || (state == RowCache::State::kPartial && !full)) return row;
  ++kernel_rows_;
  const std::vector<int32_t>& cols = !full ? active_points_
                                     : state == RowCache::State::kPartial ? inactive_points_
                                                                          : all_points_;
  const int64_t m = static_cast<int64_t>(cols.size());
  if (&cols == &all_points_) {
    kernel_.Row(r, cols.data(), m, row, options_.threads, options_.parallel_grain, &scratch_);
  } else {
    row_buffer_.resize(static_cast<size_t>(m));
    kernel_.Row(r, cols.data(), m, row_buffer_.data(), options_.threads, options_.parallel_grain, &scratch_);
    for (int64_t k = 0; k < m; ++k) row[cols[k]] = row_buffer_[k];
  }
  cache_.Filled(r, full, generation_);
  return row;
}

// When row i is missing, computes it together with the rows of the three uncached I_low variables of largest
// y_t G_t (the likeliest j of this and the next iterations) in one pass over the data; a pass costs about the same
// for one row or four. Dense data and a cache of at least eight rows only (so the batch evicts nothing it needs).
void Solver::PrefetchPartners(int32_t i, double gmax) {
  const int32_t ri = kidx_[i];
  if (kernel_.sparse() || cache_.capacity() < 8 || cache_.Has(ri, generation_)) return;
  int32_t pick[3] = {-1, -1, -1};
  double value[3] = {-kInf, -kInf, -kInf};
  for (int32_t t : active_) {
    if (!InLow(t)) continue;
    const double v = y_[t] * grad_[t];
    const int32_t r = kidx_[t];
    if (v <= value[2] || gmax + v <= 0 || r == ri || r == pick[0] || r == pick[1] || cache_.Has(r, generation_)) {
      continue;
    }
    int k = 2;
    for (; k > 0 && v > value[k - 1]; --k) {
      value[k] = value[k - 1];
      pick[k] = pick[k - 1];
    }
    value[k] = v;
    pick[k] = r;
  }
  if (pick[0] < 0) return;  // nothing to share the pass with
  int32_t rows[4] = {ri, pick[0], pick[1] >= 0 ? pick[1] : ri, pick[2] >= 0 ? pick[2] : ri};
  const int count = 2 + (pick[1] >= 0) + (pick[2] >= 0);
  const bool full = inactive_points_.empty();
  const std::vector<int32_t>& cols = full ? all_points_ : active_points_;
  const int64_t m = static_cast<int64_t>(cols.size());
  float* buffers[4];
  for (int k = 0; k < count; ++k) {
    RowCache::State state;
    buffers[k] = cache_.Get(rows[k], generation_, &state);
  }
  float* outs[4];
  batch_buffer_.resize(static_cast<size_t>(4 * m));
  for (int k = 0; k < 4; ++k) outs[k] = full && k < count ? buffers[k] : batch_buffer_.data() + k * m;
  kernel_.Rows4(rows, cols.data(), m, outs, options_.threads, options_.parallel_grain);
  for (int k = 0; k < count; ++k) {
    if (!full) {
      for (int64_t c = 0; c < m; ++c) buffers[k][cols[c]] = outs[k][c];
    }
    cache_.Filled(rows[k], full, generation_);
  }
  kernel_rows_ += count;
}

// WSS3: i = argmax_{I_up} -y_t G_t; j = argmin over t in I_low with -y_t G_t < that maximum of
// -(b_it^2) / a_it, where b_it = m(i) + y_t G_t and a_it = K_ii + K_tt - 2 K_it. False when the maximal violation
// m(i) + max_{I_low} y_t G_t is below tol (optimal on the active set).
bool Solver::SelectWorkingSet(int32_t* out_i, int32_t* out_j) {
  double gmax = -kInf;
  int32_t i = -1;
  for (int32_t t : active_) {
    if (InUp(t) && -y_[t] * grad_[t] >= gmax) {
      gmax = -y_[t] * grad_[t];
      i = t;
    }
  }
  if (i >= 0) PrefetchPartners(i, gmax);
  const float* ki = i >= 0 ? KernelRow(i, false) : nullptr;
  double gmax2 = -kInf, best = kInf;
  int32_t j = -1;
  for (int32_t t : active_) {
    if (!InLow(t)) continue;
    const double v = y_[t] * grad_[t];
    gmax2 = std::max(gmax2, v);
    const double b = gmax + v;
    if (ki == nullptr || b <= 0) continue;
    const double a = qd_[i] + qd_[t] - 2.0 * ki[kidx_[t]];
    const double decrease = -(b * b) / (a > 0 ? a : kTau);
    if (decrease <= best) {
      best = decrease;
      j = t;
    }
  }
  if (gmax + gmax2 < options_.tol || j < 0) return false;
  *out_i = i;
  *out_j = j;
  return true;
}

// The two-variable subproblem solved exactly, then clipped to the box along the constraint line.
void Solver::Update(int32_t i, int32_t j) {
  const float* ki = KernelRow(i, false);
  const double kij = ki[kidx_[j]];
  const double ci = upper_[i], cj = upper_[j];
  const double old_i = alpha_[i], old_j = alpha_[j];
  const bool upper_i = AtUpper(i), upper_j = AtUpper(j);
  double a = qd_[i] + qd_[j] - 2.0 * kij;
  if (a <= 0) a = kTau;
  double ai = old_i, aj = old_j;
  if (y_[i] != y_[j]) {
    // a_i - a_j is constant.
    const double delta = (-grad_[i] - grad_[j]) / a;
    const double diff = ai - aj;
    ai += delta;
    aj += delta;
    if (diff > 0) {
      if (aj < 0) { aj = 0; ai = diff; }
    } else {
      if (ai < 0) { ai = 0; aj = -diff; }
    }
    if (diff > ci - cj) {
      if (ai > ci) { ai = ci; aj = ci - diff; }
    } else {
      if (aj > cj) { aj = cj; ai = cj + diff; }
    }
  } else {
    // a_i + a_j is constant.
    const double delta = (grad_[i] - grad_[j]) / a;
    const double sum = ai + aj;
    ai -= delta;
    aj += delta;
    if (sum > ci) {
      if (ai > ci) { ai = ci; aj = sum - ci; }
    } else {
      if (aj < 0) { aj = 0; ai = sum; }
    }
    if (sum > cj) {
      if (aj > cj) { aj = cj; ai = sum - cj; }
    } else {
      if (ai < 0) { ai = 0; aj = sum; }
    }
  }
  alpha_[i] = ai;
  alpha_[j] = aj;
  const double di = y_[i] * (ai - old_i), dj = y_[j] * (aj - old_j);
  const float* kj = KernelRow(j, false);  // row i stays in place: the cache keeps its two most recent rows
  for (int32_t t : active_) grad_[t] += y_[t] * (di * ki[kidx_[t]] + dj * kj[kidx_[t]]);
  UpdateGBar(i, upper_i);
  UpdateGBar(j, upper_j);
}

// G_bar_t = sum over s at the upper bound of U_s Q_ts; kept for every variable so that shrunk gradients can be
// rebuilt. Needs the full kernel row whenever a variable enters or leaves its upper bound.
void Solver::UpdateGBar(int32_t s, bool was_upper) {
  if (was_upper == AtUpper(s)) return;
  const double c = (was_upper ? -upper_[s] : upper_[s]) * y_[s];
  const float* ks = KernelRow(s, true);
  for (int32_t t = 0; t < len_; ++t) grad_bar_[t] += c * y_[t] * ks[kidx_[t]];
}

void Solver::Shrink() {
  double gmax1 = -kInf, gmax2 = -kInf;  // max_{I_up} -y G, max_{I_low} y G over the active set
  for (int32_t t : active_) {
    if (InUp(t)) gmax1 = std::max(gmax1, -y_[t] * grad_[t]);
    if (InLow(t)) gmax2 = std::max(gmax2, y_[t] * grad_[t]);
  }
  if (!unshrunk_ && gmax1 + gmax2 <= options_.tol * 10) {
    // Close to the end: bring everything back once, so that variables shrunk early on a stale gradient get a
    // second look.
    unshrunk_ = true;
    ReconstructGradient();
    ActivateAll();
  }
  // A variable at a bound can move in one direction only; it leaves the active set when its gradient is past the
  // other side's extreme, i.e. no working set would pick it now.
  size_t kept = 0;
  for (int32_t t : active_) {
    bool shrink = false;
    if (AtUpper(t) || AtLower(t)) {
      shrink = InLow(t) ? -y_[t] * grad_[t] > gmax1 : y_[t] * grad_[t] > gmax2;
    }
    if (!shrink) active_[kept++] = t;
  }
  if (kept != active_.size()) {
    active_.resize(kept);
    RebuildActivePoints();
  }
}

// G_t for the shrunk variables: p_t + G_bar_t + sum over free s of a_s Q_ts (free variables are never shrunk, so
// they are all active). With room in the cache the free variables' rows are completed there (they are the ones the
// next iterations select); otherwise only K(shrunk, free) is computed. K is bitwise symmetric (same dot-product
// code, commutative sums), so both ways give the same gradient.
void Solver::ReconstructGradient() {
  if (static_cast<int32_t>(active_.size()) == len_) return;
  std::vector<char> is_active(static_cast<size_t>(len_), 0);
  for (int32_t t : active_) is_active[t] = 1;
  std::vector<int32_t> inactive, free_vars;
  for (int32_t t = 0; t < len_; ++t) {
    if (!is_active[t]) {
      inactive.push_back(t);
    } else if (!AtUpper(t) && !AtLower(t)) {
      free_vars.push_back(t);
    }
  }
  const int64_t m = static_cast<int64_t>(free_vars.size());
  const int64_t count = static_cast<int64_t>(inactive.size());
  std::vector<double> sum(static_cast<size_t>(count), 0.0);
  if (m + 2 <= cache_.capacity()) {
    for (int32_t s : free_vars) {
      const float* ks = KernelRow(s, true);
      const double c = y_[s] * alpha_[s];
      for (int64_t k = 0; k < count; ++k) sum[k] += c * ks[kidx_[inactive[k]]];
    }
  } else if (m > 0) {
    std::vector<int32_t> free_points(static_cast<size_t>(m));
    for (int64_t s = 0; s < m; ++s) free_points[s] = kidx_[free_vars[s]];
#pragma omp parallel num_threads(std::max(1, options_.threads))
    {
      std::vector<float> values(static_cast<size_t>(m)), scratch;
#pragma omp for schedule(dynamic, 16)
      for (int64_t k = 0; k < count; ++k) {
        kernel_.Row(kidx_[inactive[k]], free_points.data(), m, values.data(), 1, 0, &scratch);
        for (int64_t s = 0; s < m; ++s) sum[k] += y_[free_vars[s]] * alpha_[free_vars[s]] * values[s];
      }
    }
  }
  for (int64_t k = 0; k < count; ++k) {
    const int32_t t = inactive[k];
    grad_[t] = grad_bar_[t] + p_[t] + y_[t] * sum[k];
  }
}

void Solver::ActivateAll() {
  if (static_cast<int32_t>(active_.size()) == len_) return;
  active_.resize(static_cast<size_t>(len_));
  std::iota(active_.begin(), active_.end(), 0);
  ++generation_;  // rows computed for the old active set miss the returning columns
  RebuildActivePoints();
}

void Solver::RebuildActivePoints() {
  std::vector<char> used(static_cast<size_t>(n_), 0);
  for (int32_t t : active_) used[kidx_[t]] = 1;
  active_points_.clear();
  inactive_points_.clear();
  for (int32_t r = 0; r < n_; ++r) (used[r] ? active_points_ : inactive_points_).push_back(r);
}

// rho = y_t G_t averaged over the free variables (they satisfy it exactly at the optimum); without free
// variables, the middle of the interval the bounded ones allow.
double Solver::Rho() const {
  double ub = kInf, lb = -kInf, sum = 0;
  int64_t free = 0;
  for (int32_t t = 0; t < len_; ++t) {
    const double v = y_[t] * grad_[t];
    if (AtUpper(t)) {
      if (y_[t] < 0) ub = std::min(ub, v); else lb = std::max(lb, v);
    } else if (AtLower(t)) {
      if (y_[t] > 0) ub = std::min(ub, v); else lb = std::max(lb, v);
    } else {
      ++free;
      sum += v;
    }
  }
  return free > 0 ? sum / static_cast<double>(free) : (ub + lb) / 2;
}

SolveResult Solver::Run() {
  SolveResult result;
  alpha_.assign(static_cast<size_t>(len_), 0.0);
  grad_ = p_;  // G = Q a + p at a = 0
  grad_bar_.assign(static_cast<size_t>(len_), 0.0);
  qd_.resize(static_cast<size_t>(len_));
  for (int32_t t = 0; t < len_; ++t) qd_[t] = kernel_.diag(kidx_[t]);
  active_.resize(static_cast<size_t>(len_));
  std::iota(active_.begin(), active_.end(), 0);
  RebuildActivePoints();

  const int64_t max_iter = options_.max_iter > 0 ? options_.max_iter
                                                 : std::max<int64_t>(10000000, int64_t{100} * len_);
  const int32_t shrink_every = std::min<int32_t>(len_, 1000);
  int32_t counter = shrink_every;
  int64_t iter = 0;
  while (iter < max_iter) {
    if (--counter == 0) {
      counter = shrink_every;
      if (options_.shrinking) Shrink();
    }
    if ((iter & 255) == 0 && options_.interrupted != nullptr && options_.interrupted->load(std::memory_order_relaxed)) {
      result.cancelled = true;
      break;
    }
    int32_t i = -1, j = -1;
    if (!SelectWorkingSet(&i, &j)) {
      if (static_cast<int32_t>(active_.size()) == len_) {
        result.converged = true;
        break;
      }
      // Optimal on the active set: check the whole problem before stopping.
      ReconstructGradient();
      ActivateAll();
      if (!SelectWorkingSet(&i, &j)) {
        result.converged = true;
        break;
      }
      counter = 1;  // shrink again right away
    }
    ++iter;
    Update(i, j);
  }
  if (static_cast<int32_t>(active_.size()) < len_) {
    ReconstructGradient();
    ActivateAll();
  }
  result.rho = Rho();
  double objective = 0;
  for (int32_t t = 0; t < len_; ++t) objective += alpha_[t] * (grad_[t] + p_[t]);
  result.objective = objective / 2;
  result.iterations = iter;
  result.kernel_rows = kernel_rows_;
  result.alpha = alpha_;
  result.coef.assign(static_cast<size_t>(n_), 0.0);
  for (int32_t t = 0; t < len_; ++t) result.coef[kidx_[t]] += y_[t] * alpha_[t];
  return result;
}

}  // namespace

SolveResult SolveCsvc(const data::Table& points, std::span<const double> y, std::span<const double> upper,
                      const KernelSpec& kernel, const SolverOptions& options) {
  const int64_t n = points.rows;
  GEOMX_CHECK(static_cast<int64_t>(y.size()) == n && static_cast<int64_t>(upper.size()) == n);
  std::vector<int32_t> kidx(static_cast<size_t>(n));
  std::iota(kidx.begin(), kidx.end(), 0);
  Solver solver(points, kernel, std::move(kidx), std::vector<double>(y.begin(), y.end()),
                std::vector<double>(static_cast<size_t>(n), -1.0), std::vector<double>(upper.begin(), upper.end()),
                options);
  return solver.Run();
}

SolveResult SolveEpsilonSvr(const data::Table& points, std::span<const double> z, std::span<const double> upper,
                            double epsilon, const KernelSpec& kernel, const SolverOptions& options) {
  const int64_t n = points.rows;
  GEOMX_CHECK(static_cast<int64_t>(z.size()) == n && static_cast<int64_t>(upper.size()) == n);
  std::vector<int32_t> kidx(static_cast<size_t>(2 * n));
  std::vector<double> y(static_cast<size_t>(2 * n)), p(static_cast<size_t>(2 * n)), u(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    kidx[i] = kidx[i + n] = static_cast<int32_t>(i);
    y[i] = 1;
    y[i + n] = -1;
    p[i] = epsilon - z[i];
    p[i + n] = epsilon + z[i];
    u[i] = u[i + n] = upper[i];
  }
  Solver solver(points, kernel, std::move(kidx), std::move(y), std::move(p), std::move(u), options);
  return solver.Run();
}

}  // namespace geomx::algorithms::smo
