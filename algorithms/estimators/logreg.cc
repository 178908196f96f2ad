// logreg: binary and multinomial logistic regression (docs/algorithms.md "logreg").
//
// Model: scores z = x W + b with W (cols x m, feature-major: W[j*m + c]) and b (m). Two classes use one score
// column (m = 1, P(class 1) = sigmoid(z)); K > 2 classes use softmax over m = K columns.
//
// Objective (the one scikit-learn's LogisticRegression minimises, up to the constant factor 1/S):
//   f(W, b) = (1/S) * [ sum_i s_i * loss_i(W, b) + R(W) ],   S = sum_i s_i (row weights, 1 when absent)
//   R = ||W||_F^2 / (2C) (penalty l2) | ||W||_1 / C (penalty l1) | 0 (penalty none); the intercept is never penalised.
// loss_i is the negative log-likelihood of row i's label. Dividing by S does not move the minimiser; it makes `tol`
// and the mini-batch learning rate independent of the number of rows (scikit-learn >= 1.1 scales the same way).
//
// Solvers: lbfgs (full batch, default, smooth penalties only), sgd and adam (mini-batch; l1 by a proximal
// soft-threshold step after each update). The full-batch gradient is GEMM-shaped: blocks of rows go through
// X_blk W and X_blk^T R (SIMD block kernels, logreg_kernels.h), one block per thread at a time, so X is read once per
// evaluation while the block is still in cache.
//
// Distributed (FitContext::collective): lbfgs sums (loss, gradient) over the shards at every evaluation and every
// worker runs the same two-loop and line search on the same sums, so the workers' models stay bit-identical;
// sgd/adam sum the mini-batch gradients of one step over the shards and average by the total batch weight.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <omp.h>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/line_search.h"
#include "algorithms/estimators/logreg_kernels.h"
#include "algorithms/estimators/shard_checks.h"
#include "engine/base/check.h"
#include "engine/kernels/optimizer_update.h"

namespace geomx::algorithms {
namespace {

using line_search::Dot;
using line_search::WolfeSearch;
using logreg_kernels::ClassMajor;
using logreg_kernels::DenseGradAdd;
using logreg_kernels::DenseScores;

enum class Penalty : uint8_t { kNone, kL2, kL1 };
enum class Solver : uint8_t { kLbfgs, kSgd, kAdam };

constexpr int kLbfgsHistory = 10;       // correction pairs kept (scipy's L-BFGS-B default m = 10)
constexpr int kNoImprovementEpochs = 5;  // sgd/adam: stop after this many epochs without a tol improvement
constexpr int64_t kBlockRows = 256;     // rows per GEMM block (X_blk stays in cache between the two products)
constexpr int64_t kMinRowsPerThread = 512;  // fewer rows per thread than this: not worth a thread

struct LogRegConfig {
  Penalty penalty = Penalty::kL2;
  double C = 1.0;
  bool fit_intercept = true;
  Solver solver = Solver::kLbfgs;
  int64_t max_iter = 100;
  double tol = 1e-4;
  int64_t batch_size = 256;
  double lr = 0.001;
};

// Row loss and residual: for scores z[0..m) of a row with label y and weight s, returns s * loss and overwrites z
// with s * dloss/dz.
double RowLossResidual(float* z, int64_t m, int32_t y, float s) {
  if (m == 1) {
    const double zz = z[0];
    const double yv = y == 1 ? 1.0 : 0.0;
    z[0] = static_cast<float>(s * (Sigmoid(zz) - yv));
    return s * (Softplus(zz) - yv * zz);
  }
  constexpr int64_t kMaxStack = 64;
  double stack[kMaxStack];
  std::vector<double> heap;
  double* e = stack;
  if (m > kMaxStack) {
    heap.resize(static_cast<size_t>(m));
    e = heap.data();
  }
  double mx = z[0];
  for (int64_t c = 1; c < m; ++c) mx = std::max(mx, static_cast<double>(z[c]));
  double sum = 0;
  for (int64_t c = 0; c < m; ++c) {
    e[c] = std::exp(z[c] - mx);
    sum += e[c];
  }
  const double loss = mx + std::log(sum) - z[y];
  const double scale = s / sum;
  for (int64_t c = 0; c < m; ++c) z[c] = static_cast<float>(scale * e[c] - (c == y ? s : 0.0));
  return s * loss;
}

// The rows a computation runs over: `index` (count entries) or, when null, the range [begin, begin + count).
struct RowSet {
  const int64_t* index = nullptr;
  int64_t begin = 0;
  int64_t count = 0;
  int64_t At(int64_t k) const { return index != nullptr ? index[k] : begin + k; }
};

// Per-thread scratch of the data-term evaluation, allocated once per Fit.
class Workspace {
 public:
  Workspace(int threads, int64_t d, int64_t m) : threads_(threads), d_(d), m_(m) {
    slots_.resize(static_cast<size_t>(threads));
  }
  struct Slot {
    std::vector<float> x;   // gathered rows (kBlockRows x d), dense tables with an index only
    std::vector<float> z;   // scores / residuals (kBlockRows x m)
    std::vector<float> gw;  // gradient accumulator: m x d (class-major) for dense tables, d x m for sparse ones
    std::vector<float> gb;  // (m)
    double loss = 0, weight = 0;
  };
  Slot& slot(int t) { return slots_[static_cast<size_t>(t)]; }
  std::vector<float>& wt() { return wt_; }
  int threads() const { return threads_; }
  int64_t d() const { return d_; }
  int64_t m() const { return m_; }

 private:
  int threads_;
  int64_t d_, m_;
  std::vector<Slot> slots_;
  std::vector<float> wt_;  // the weights class-major, for the dense kernels
};

// Adds to (gw, gb) the gradient of sum_{i in rows} s_i loss_i at (w, b); returns that sum and sets *weight_sum.
// Deterministic for a given thread count (per-thread partial sums are combined in thread order).
double DataTerm(const data::Table& t, const RowSet& rows, const float* w, const float* b, Workspace* ws, float* gw,
                float* gb, double* weight_sum) {
  const int64_t d = ws->d(), m = ws->m();
  // Small mini-batches run on one thread: a parallel region per step costs more than it saves, and far more on a
  // shared machine where OpenMP's spinning barriers compete with other processes.
  const int team = static_cast<int>(std::clamp<int64_t>(rows.count / kMinRowsPerThread, 1, ws->threads()));
  const int64_t block =
      rows.count >= team * kBlockRows ? kBlockRows : std::max<int64_t>(1, (rows.count + team - 1) / team);
  const int64_t blocks = (rows.count + block - 1) / block;
  if (!t.sparse) ClassMajor(w, d, m, &ws->wt());
  const float* wt = ws->wt().data();
#pragma omp parallel num_threads(team)
  {
    Workspace::Slot& slot = ws->slot(omp_get_thread_num());
    slot.z.resize(static_cast<size_t>(block * m));
    slot.gw.assign(static_cast<size_t>(d * m), 0.0f);
    slot.gb.assign(static_cast<size_t>(m), 0.0f);
    slot.loss = 0;
    slot.weight = 0;
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t k0 = blk * block;
      const int64_t nb = std::min(block, rows.count - k0);
      float* z = slot.z.data();
      if (!t.sparse) {
        const float* x;
        if (rows.index == nullptr) {
          x = t.Row(rows.begin + k0);
        } else {
          slot.x.resize(static_cast<size_t>(block * d));
          for (int64_t k = 0; k < nb; ++k) std::memcpy(&slot.x[k * d], t.Row(rows.At(k0 + k)), d * sizeof(float));
          x = slot.x.data();
        }
        DenseScores(x, nb, d, wt, m, z);
        for (int64_t k = 0; k < nb; ++k) {
          const int64_t i = rows.At(k0 + k);
          float* zr = z + k * m;
          for (int64_t c = 0; c < m; ++c) zr[c] += b[c];
          const float s = t.weight(i);
          slot.loss += RowLossResidual(zr, m, t.labels[i], s);
          slot.weight += s;
          for (int64_t c = 0; c < m; ++c) slot.gb[c] += zr[c];
        }
        DenseGradAdd(x, nb, d, z, m, slot.gw.data());
      } else {
        for (int64_t k = 0; k < nb; ++k) {
          const int64_t i = rows.At(k0 + k);
          float* zr = z;  // one row at a time
          for (int64_t c = 0; c < m; ++c) zr[c] = b[c];
          for (int64_t p = t.row_ptr[i]; p < t.row_ptr[i + 1]; ++p) {
            const float v = t.values[p];
            const float* wr = w + static_cast<int64_t>(t.col_index[p]) * m;
            for (int64_t c = 0; c < m; ++c) zr[c] += v * wr[c];
          }
          const float s = t.weight(i);
          slot.loss += RowLossResidual(zr, m, t.labels[i], s);
          slot.weight += s;
          for (int64_t c = 0; c < m; ++c) slot.gb[c] += zr[c];
          for (int64_t p = t.row_ptr[i]; p < t.row_ptr[i + 1]; ++p) {
            const float v = t.values[p];
            float* gr = slot.gw.data() + static_cast<int64_t>(t.col_index[p]) * m;
            for (int64_t c = 0; c < m; ++c) gr[c] += v * zr[c];
          }
        }
      }
    }
  }
  double loss = 0, weight = 0;
  for (int th = 0; th < team; ++th) {
    const Workspace::Slot& slot = ws->slot(th);
    loss += slot.loss;
    weight += slot.weight;
    if (t.sparse) {
      for (int64_t j = 0; j < d * m; ++j) gw[j] += slot.gw[j];
    } else {
      for (int64_t j = 0; j < d; ++j) {
        for (int64_t c = 0; c < m; ++c) gw[j * m + c] += slot.gw[c * d + j];
      }
    }
    for (int64_t c = 0; c < m; ++c) gb[c] += slot.gb[c];
  }
  *weight_sum = weight;
  return loss;
}

// Splits a double into two floats whose float sums across workers stay accurate (~1e-11 absolute for |x| < 4096):
// the high part lies on a 2^-12 grid, so adding a few of them is exact in float.
void SplitDouble(double x, float* hi, float* lo) {
  const double h = std::floor(x * 4096.0) / 4096.0;
  *hi = static_cast<float>(h);
  *lo = static_cast<float>(x - static_cast<double>(*hi));
}

class LogReg final : public Estimator {
 public:
  explicit LogReg(const LogRegConfig& config) : config_(config) {}

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;

  // The objective f and its gradient at theta = [W (cols x m), b (m) when fit_intercept], on one process.
  double ObjectiveForTesting(const data::Table& table, const std::vector<double>& theta, int threads,
                             std::vector<double>* grad);

 private:
  // Full-batch objective over this worker's shard (and the others' through the collective).
  class Objective;
  Status FitLbfgs(const data::Table& train, const FitContext& context, const ShardShape& shape);
  Status FitMiniBatch(const data::Table& train, const FitContext& context, const ShardShape& shape);
  double RegValue(const float* w) const;
  void ReportStep(const FitContext& context, int64_t step, double loss) const;

  LogRegConfig config_;
  int64_t cols_ = 0;
  int num_classes_ = 0;
  int64_t m_ = 0;              // score columns: 1 (binary) or num_classes_
  std::vector<float> coef_;    // cols_ x m_, feature-major
  std::vector<float> intercept_;  // m_
};

double LogReg::RegValue(const float* w) const {
  const int64_t n = cols_ * m_;
  double r = 0;
  if (config_.penalty == Penalty::kL2) {
    for (int64_t j = 0; j < n; ++j) r += static_cast<double>(w[j]) * w[j];
    return r / (2.0 * config_.C);
  }
  if (config_.penalty == Penalty::kL1) {
    for (int64_t j = 0; j < n; ++j) r += std::fabs(static_cast<double>(w[j]));
    return r / config_.C;
  }
  return 0;
}

void LogReg::ReportStep(const FitContext& context, int64_t step, double loss) const {
  if (context.observer == nullptr) return;
  Metrics metrics = {{"loss", loss}};
  // Test accuracy costs a sixth of an evaluation on Fashion-MNIST; report it every 10 steps.
  if (context.eval != nullptr && context.eval->has_labels() && context.eval->cols == cols_ && step % 10 == 0) {
    Result<Prediction> p = Predict(*context.eval, context.threads);
    if (p.ok()) {
      Metrics eval = EvaluateTask(data::TableTask::kClassification, *context.eval, *p);
      metrics.insert(metrics.end(), eval.begin(), eval.end());
    }
  }
  context.observer->OnStep(step, metrics);
}

// f(theta) and its gradient over all shards. theta = [W, b]; the intercept part exists only with fit_intercept.
class LogReg::Objective {
 public:
  Objective(const LogReg& model, const data::Table& train, const FitContext& context, double total_weight)
      : model_(model),
        train_(train),
        context_(context),
        total_weight_(total_weight),
        nw_(model.cols_ * model.m_),
        ws_(std::max(1, context.threads), model.cols_, model.m_),
        w_(static_cast<size_t>(nw_)),
        b_(static_cast<size_t>(model.m_)),
        buffer_(static_cast<size_t>(nw_ + model.m_ + 3)) {}

  int64_t size() const { return nw_ + (model_.config_.fit_intercept ? model_.m_ : 0); }

  Status Eval(const std::vector<double>& theta, double* f, std::vector<double>* grad) {
    const int64_t m = model_.m_;
    for (int64_t j = 0; j < nw_; ++j) w_[j] = static_cast<float>(theta[j]);
    for (int64_t c = 0; c < m; ++c) b_[c] = model_.config_.fit_intercept ? static_cast<float>(theta[nw_ + c]) : 0.0f;
    std::fill(buffer_.begin(), buffer_.end(), 0.0f);
    float* gw = buffer_.data();
    float* gb = gw + nw_;
    double weight = 0;
    const RowSet all{nullptr, 0, train_.rows};
    const double loss = train_.rows > 0 ? DataTerm(train_, all, w_.data(), b_.data(), &ws_, gw, gb, &weight) : 0.0;
    // Normalise before summing so every shard's part is O(1) and the float sum stays accurate.
    const float inv = static_cast<float>(1.0 / total_weight_);
    for (int64_t j = 0; j < nw_ + m; ++j) buffer_[j] *= inv;
    float* tail = buffer_.data() + nw_ + m;
    SplitDouble(loss / total_weight_, &tail[0], &tail[1]);
    tail[2] = context_.Interrupted() ? 1.0f : 0.0f;
    if (context_.collective != nullptr) {
      GEOMX_RETURN_IF_ERROR(context_.collective->AllReduceSumCompressible("logreg.lbfgs", buffer_, 3));
    }
    if (tail[2] > 0) return Status::Cancelled("logreg: interrupted");
    const double data_loss = context_.collective != nullptr
                                 ? static_cast<double>(tail[0]) + static_cast<double>(tail[1])
                                 : loss / total_weight_;
    const double inv_s = 1.0 / total_weight_;
    *f = data_loss + model_.RegValue(w_.data()) * inv_s;
    grad->resize(static_cast<size_t>(size()));
    const Penalty pen = model_.config_.penalty;
    const double l2 = pen == Penalty::kL2 ? inv_s / model_.config_.C : 0.0;
    for (int64_t j = 0; j < nw_; ++j) (*grad)[j] = static_cast<double>(gw[j]) + l2 * theta[j];
    if (model_.config_.fit_intercept) {
      for (int64_t c = 0; c < m; ++c) (*grad)[nw_ + c] = gb[c];
    }
    ++evaluations_;
    return Status::Ok();
  }
  int64_t evaluations() const { return evaluations_; }

 private:
  const LogReg& model_;
  const data::Table& train_;
  const FitContext& context_;
  const double total_weight_;
  const int64_t nw_;
  Workspace ws_;
  std::vector<float> w_, b_;
  std::vector<float> buffer_;  // [grad W, grad b, loss hi, loss lo, cancel]
  int64_t evaluations_ = 0;
};

Status LogReg::FitLbfgs(const data::Table& train, const FitContext& context, const ShardShape& shape) {
  Objective obj(*this, train, context, shape.weight);
  const int64_t n = obj.size();
  auto eval = [&obj](const std::vector<double>& x, double* f, std::vector<double>* g) { return obj.Eval(x, f, g); };
  std::vector<double> x(static_cast<size_t>(n), 0.0), g, x_new(static_cast<size_t>(n)), g_new;
  double f = 0, f_new = 0;
  GEOMX_RETURN_IF_ERROR(obj.Eval(x, &f, &g));
  std::vector<std::vector<double>> s_hist, y_hist;
  std::vector<double> rho_hist, alpha(kLbfgsHistory), dir(static_cast<size_t>(n));
  const double ftol = 64.0 * std::numeric_limits<double>::epsilon();
  for (int64_t iter = 1; iter <= config_.max_iter; ++iter) {
    double gmax = 0;
    for (double v : g) gmax = std::max(gmax, std::fabs(v));
    if (gmax <= config_.tol) break;
    // Two-loop recursion: dir = -H g.
    for (int64_t i = 0; i < n; ++i) dir[i] = -g[i];
    const int k = static_cast<int>(s_hist.size());
    for (int i = k - 1; i >= 0; --i) {
      alpha[i] = rho_hist[i] * Dot(s_hist[i], dir);
      for (int64_t j = 0; j < n; ++j) dir[j] -= alpha[i] * y_hist[i][j];
    }
    if (k > 0) {
      const double gamma = Dot(s_hist[k - 1], y_hist[k - 1]) / Dot(y_hist[k - 1], y_hist[k - 1]);
      for (double& v : dir) v *= gamma;
    }
    for (int i = 0; i < k; ++i) {
      const double beta = rho_hist[i] * Dot(y_hist[i], dir);
      for (int64_t j = 0; j < n; ++j) dir[j] += (alpha[i] - beta) * s_hist[i][j];
    }
    bool found = false;
    for (int attempt = 0; attempt < 2 && !found; ++attempt) {
      if (attempt == 1 || Dot(g, dir) >= 0) {
        if (attempt == 1 && s_hist.empty()) break;  // steepest descent already failed
        s_hist.clear();
        y_hist.clear();
        rho_hist.clear();
        for (int64_t i = 0; i < n; ++i) dir[i] = -g[i];
      }
      const double a0 = s_hist.empty() ? std::min(1.0, 1.0 / std::sqrt(Dot(g, g))) : 1.0;
      GEOMX_RETURN_IF_ERROR(WolfeSearch(eval, x, f, g, dir, a0, &x_new, &f_new, &g_new, &found));
    }
    if (!found) break;  // no decrease possible at float precision: as converged as it gets
    std::vector<double> s(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      s[i] = x_new[i] - x[i];
      y[i] = g_new[i] - g[i];
    }
    const double sy = Dot(s, y);
    if (sy > 1e-10 * Dot(y, y)) {
      if (static_cast<int>(s_hist.size()) == kLbfgsHistory) {
        s_hist.erase(s_hist.begin());
        y_hist.erase(y_hist.begin());
        rho_hist.erase(rho_hist.begin());
      }
      s_hist.push_back(std::move(s));
      y_hist.push_back(std::move(y));
      rho_hist.push_back(1.0 / sy);
    }
    const double decrease = (f - f_new) / std::max({std::fabs(f), std::fabs(f_new), 1.0});
    x.swap(x_new);
    g.swap(g_new);
    f = f_new;
    // Publish the iterate so progress reports can predict with it.
    for (int64_t j = 0; j < cols_ * m_; ++j) coef_[j] = static_cast<float>(x[j]);
    for (int64_t c = 0; c < m_; ++c) intercept_[c] = config_.fit_intercept ? static_cast<float>(x[cols_ * m_ + c]) : 0;
    ReportStep(context, iter, f);
    if (decrease <= ftol) break;
  }
  for (int64_t j = 0; j < cols_ * m_; ++j) coef_[j] = static_cast<float>(x[j]);
  for (int64_t c = 0; c < m_; ++c) intercept_[c] = config_.fit_intercept ? static_cast<float>(x[cols_ * m_ + c]) : 0;
  return Status::Ok();
}

Status LogReg::FitMiniBatch(const data::Table& train, const FitContext& context, const ShardShape& shape) {
  const int64_t nw = cols_ * m_, m = m_;
  const int64_t batch = config_.batch_size;
  // Same number of steps on every worker: the largest shard decides; exhausted shards contribute empty batches.
  int64_t steps = 0;
  for (int64_t r : shape.rows_per_worker) steps = std::max(steps, (r + batch - 1) / batch);
  Workspace ws(std::max(1, context.threads), cols_, m_);
  std::vector<float> buffer(static_cast<size_t>(nw + m + 3));
  std::vector<float> mw(static_cast<size_t>(nw + m), 0.0f), vw(static_cast<size_t>(nw + m), 0.0f);
  std::vector<int64_t> order(static_cast<size_t>(train.rows));
  for (int64_t i = 0; i < train.rows; ++i) order[i] = i;
  const int rank = context.collective != nullptr ? context.collective->rank() : 0;
  std::mt19937_64 rng(context.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank));
  const float lr = static_cast<float>(config_.lr);
  const float lam = config_.penalty == Penalty::kNone ? 0.0f : static_cast<float>(1.0 / (config_.C * shape.weight));
  const float wd = config_.penalty == Penalty::kL2 ? lam : 0.0f;
  const float l1 = config_.penalty == Penalty::kL1 ? lam : 0.0f;
  double best = std::numeric_limits<double>::infinity();
  int no_improvement = 0;
  int64_t t = 0;
  for (int64_t epoch = 1; epoch <= config_.max_iter; ++epoch) {
    for (int64_t i = train.rows - 1; i > 0; --i) {
      std::uniform_int_distribution<int64_t> pick(0, i);
      std::swap(order[i], order[pick(rng)]);
    }
    double epoch_loss = 0, epoch_weight = 0;
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t k0 = std::min(train.rows, step * batch);
      const int64_t nb = std::min(train.rows, k0 + batch) - k0;
      std::fill(buffer.begin(), buffer.end(), 0.0f);
      double weight = 0, loss = 0;
      if (nb > 0) {
        loss = DataTerm(train, RowSet{order.data() + k0, 0, nb}, coef_.data(), intercept_.data(), &ws, buffer.data(),
                        buffer.data() + nw, &weight);
      }
      float* tail = buffer.data() + nw + m;
      tail[0] = static_cast<float>(loss);
      tail[1] = static_cast<float>(weight);
      tail[2] = context.Interrupted() ? 1.0f : 0.0f;
      if (context.collective != nullptr) {
        GEOMX_RETURN_IF_ERROR(context.collective->AllReduceSumCompressible("logreg.minibatch", buffer, 3));
      }
      if (tail[2] > 0) return Status::Cancelled("logreg: interrupted");
      if (!(tail[1] > 0)) continue;
      epoch_loss += tail[0];
      epoch_weight += tail[1];
      const float inv = 1.0f / tail[1];
      ++t;
      if (config_.solver == Solver::kSgd) {
        const kernels::SgdUpdate rule{lr, wd};
        const kernels::SgdUpdate bias_rule{lr, 0.0f};
        for (int64_t j = 0; j < nw; ++j) {
          rule(coef_[j], buffer[j] * inv);
          if (l1 > 0) {
            const float thr = lr * l1;
            float& w = coef_[j];
            w = w > thr ? w - thr : (w < -thr ? w + thr : 0.0f);
          }
        }
        if (config_.fit_intercept) {
          for (int64_t c = 0; c < m; ++c) bias_rule(intercept_[c], buffer[nw + c] * inv);
        }
      } else {
        UpdateHyper h;
        h.lr = lr;
        h.weight_decay = wd;
        h.step = t;
        const kernels::AdamUpdate rule = kernels::AdamUpdate::Make(h);
        h.weight_decay = 0.0f;
        const kernels::AdamUpdate bias_rule = kernels::AdamUpdate::Make(h);
        for (int64_t j = 0; j < nw; ++j) {
          rule(coef_[j], buffer[j] * inv, mw[j], vw[j]);
          if (l1 > 0) {
            // Proximal step in Adam's diagonal metric: threshold = l1 * the coordinate's effective step.
            const float thr = l1 * lr / (std::sqrt(vw[j] / rule.bc2) + rule.eps);
            float& w = coef_[j];
            w = w > thr ? w - thr : (w < -thr ? w + thr : 0.0f);
          }
        }
        if (config_.fit_intercept) {
          for (int64_t c = 0; c < m; ++c) bias_rule(intercept_[c], buffer[nw + c] * inv, mw[nw + c], vw[nw + c]);
        }
      }
    }
    const double objective =
        (epoch_weight > 0 ? epoch_loss / epoch_weight : 0.0) + RegValue(coef_.data()) / shape.weight;
    ReportStep(context, epoch, objective);
    if (objective > best - config_.tol) {
      if (++no_improvement >= kNoImprovementEpochs) break;
    } else {
      no_improvement = 0;
    }
    best = std::min(best, objective);
  }
  return Status::Ok();
}

Status LogReg::Fit(const data::Table& train, const FitContext& context) {
  if (config_.penalty == Penalty::kL1 && config_.solver == Solver::kLbfgs) {
    return Status::InvalidArgument(
        "logreg: penalty 'l1' needs solver 'sgd' or 'adam' (lbfgs needs a smooth objective; set solver: sgd or adam)");
  }
  GEOMX_ASSIGN_OR_RETURN(ShardShape shape, ExchangeShardShape("logreg", train, context.collective));
  GEOMX_RETURN_IF_ERROR(CheckClassesAcrossShards("logreg", train, context.collective));
  cols_ = train.cols;
  num_classes_ = train.num_classes;
  m_ = num_classes_ == 2 ? 1 : num_classes_;
  coef_.assign(static_cast<size_t>(cols_ * m_), 0.0f);
  intercept_.assign(static_cast<size_t>(m_), 0.0f);
  if (config_.solver == Solver::kLbfgs) return FitLbfgs(train, context, shape);
  return FitMiniBatch(train, context, shape);
}

double LogReg::ObjectiveForTesting(const data::Table& table, const std::vector<double>& theta, int threads,
                                   std::vector<double>* grad) {
  cols_ = table.cols;
  num_classes_ = table.num_classes;
  m_ = num_classes_ == 2 ? 1 : num_classes_;
  FitContext context;
  context.threads = threads;
  double weight = 0;
  for (int64_t i = 0; i < table.rows; ++i) weight += table.weight(i);
  Objective obj(*this, table, context, weight);
  double f = 0;
  GEOMX_CHECK_EQ(static_cast<int64_t>(theta.size()), obj.size());
  GEOMX_CHECK_OK(obj.Eval(theta, &f, grad));
  return f;
}

Result<Prediction> LogReg::Predict(const data::Table& input, int threads) const {
  if (coef_.empty()) return Status::FailedPrecondition("logreg: the model is not fitted");
  if (input.cols != cols_) {
    return Status::InvalidArgument("logreg: the input has " + std::to_string(input.cols) +
                                   " columns, the model was trained on " + std::to_string(cols_));
  }
  const int64_t k = num_classes_, m = m_;
  Prediction out;
  out.value.resize(static_cast<size_t>(input.rows));
  out.proba.resize(static_cast<size_t>(input.rows * k));
  out.proba_columns = k;
  const int64_t blocks = (input.rows + kBlockRows - 1) / kBlockRows;
  const int team = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(std::max(1, threads), blocks)));
  std::vector<float> wt;
  if (!input.sparse) ClassMajor(coef_.data(), cols_, m, &wt);
#pragma omp parallel num_threads(team)
  {
    std::vector<float> z(static_cast<size_t>(kBlockRows * m));
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t r0 = blk * kBlockRows;
      const int64_t nb = std::min(kBlockRows, input.rows - r0);
      if (!input.sparse) {
        DenseScores(input.Row(r0), nb, cols_, wt.data(), m, z.data());
      } else {
        std::fill(z.begin(), z.end(), 0.0f);
        for (int64_t r = 0; r < nb; ++r) {
          const int64_t i = r0 + r;
          for (int64_t p = input.row_ptr[i]; p < input.row_ptr[i + 1]; ++p) {
            const float v = input.values[p];
            const float* wr = coef_.data() + static_cast<int64_t>(input.col_index[p]) * m;
            for (int64_t c = 0; c < m; ++c) z[r * m + c] += v * wr[c];
          }
        }
      }
      for (int64_t r = 0; r < nb; ++r) {
        const int64_t i = r0 + r;
        float* zr = z.data() + r * m;
        float* pr = out.proba.data() + i * k;
        for (int64_t c = 0; c < m; ++c) zr[c] += intercept_[c];
        if (m == 1) {
          const double p1 = Sigmoid(zr[0]);
          pr[0] = static_cast<float>(1.0 - p1);
          pr[1] = static_cast<float>(p1);
          out.value[i] = zr[0] > 0 ? 1.0f : 0.0f;
          continue;
        }
        int64_t arg = 0;
        for (int64_t c = 1; c < m; ++c) arg = zr[c] > zr[arg] ? c : arg;
        double sum = 0;
        for (int64_t c = 0; c < m; ++c) sum += std::exp(static_cast<double>(zr[c]) - zr[arg]);
        for (int64_t c = 0; c < m; ++c) {
          pr[c] = static_cast<float>(std::exp(static_cast<double>(zr[c]) - zr[arg]) / sum);
        }
        out.value[i] = static_cast<float>(arg);
      }
    }
  }
  return out;
}

void LogReg::Save(ModelWriter* out) const {
  const std::vector<int64_t> shape = {cols_, num_classes_, m_};
  out->PutInts("logreg.shape", shape);
  out->PutFloats("logreg.coef", coef_);
  out->PutFloats("logreg.intercept", intercept_);
}

Status LogReg::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("logreg.shape", &shape, 3));
  const int64_t cols = shape[0], k = shape[1], m = shape[2];
  if (cols < 1 || cols > (int64_t{1} << 31) || k < 2 || k > (1 << 20) || m != (k == 2 ? 1 : k)) {
    return Status::DataLoss(in.source() + ": section 'logreg.shape' holds an impossible shape (" +
                            std::to_string(cols) + ", " + std::to_string(k) + ", " + std::to_string(m) + ")");
  }
  std::vector<float> coef, intercept;
  GEOMX_RETURN_IF_ERROR(in.GetFloats("logreg.coef", &coef, cols * m));
  GEOMX_RETURN_IF_ERROR(in.GetFloats("logreg.intercept", &intercept, m));
  cols_ = cols;
  num_classes_ = static_cast<int>(k);
  m_ = m;
  coef_ = std::move(coef);
  intercept_ = std::move(intercept);
  return Status::Ok();
}

EstimatorDef MakeLogRegDef() {
  EstimatorDef def;
  def.name = "logreg";
  def.title = "Logistic Regression";
  def.task = data::TableTask::kClassification;
  def.help =
      "Binary (one weight vector, sigmoid) and multinomial (softmax) logistic regression with intercept. Minimises "
      "(1/S)[sum_i s_i loss_i + ||W||^2/(2C)] (penalty l2) or (1/S)[sum_i s_i loss_i + ||W||_1/C] (penalty l1), "
      "S = total row weight, intercept unpenalised: scikit-learn's LogisticRegression objective. Solvers: lbfgs "
      "(full batch, default; l2 or none), sgd and adam (mini-batch; l1 by a proximal soft-threshold step). Dense "
      "and sparse (CSR) tables.";
  def.distributed =
      "lbfgs: per evaluation every worker pushes (loss, full gradient) of its shard, (cols+1)*m+3 floats, and all "
      "run the same two-loop update on the sum; sgd/adam: per mini-batch step push the batch gradient, average by "
      "the total batch weight";
  def.params = {
      ChoiceParam("penalty", "l2", {"l2", "l1", "none"}, "regulariser of W (l1 needs solver sgd or adam)"),
      PositiveParam("C", 1.0, "inverse regularisation strength, as in scikit-learn"),
      BoolParam("fit_intercept", true, "learn an unpenalised intercept per score column"),
      ChoiceParam("solver", "lbfgs", {"lbfgs", "sgd", "adam"},
                  "lbfgs: full-batch L-BFGS; sgd/adam: mini-batch epochs with learning rate lr"),
      IntParam("max_iter", 100, 1, 1000000, "lbfgs: iterations; sgd/adam: epochs"),
      NonNegativeParam("tol", 1e-4,
                       "lbfgs: stop when max |gradient| <= tol; sgd/adam: stop after 5 epochs improving the "
                       "objective by less than tol"),
      IntParam("batch_size", 256, 1, 1 << 24, "sgd/adam: rows per mini-batch and worker"),
      PositiveParam("lr", 0.001, "sgd/adam: learning rate (constant)"),
  };
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    LogRegConfig c;
    const std::string& pen = v.Choice("penalty");
    c.penalty = pen == "l1" ? Penalty::kL1 : (pen == "none" ? Penalty::kNone : Penalty::kL2);
    c.C = v.Number("C");
    c.fit_intercept = v.Bool("fit_intercept");
    const std::string& solver = v.Choice("solver");
    c.solver = solver == "sgd" ? Solver::kSgd : (solver == "adam" ? Solver::kAdam : Solver::kLbfgs);
    c.max_iter = v.Int("max_iter");
    c.tol = v.Number("tol");
    c.batch_size = v.Int("batch_size");
    c.lr = v.Number("lr");
    return std::make_unique<LogReg>(c);
  };
  return def;
}

}  // namespace

// Test hook (declared in tests/algorithms/estimators/logreg_test.cc): the normalised objective and its gradient
// at theta = [W (cols x m, feature-major), b (m) when fit_intercept] for the parameters `params`, on one process.
double LogRegObjectiveForTesting(const data::Table& table, const std::map<std::string, std::string>& params,
                                 const std::vector<double>& theta, std::vector<double>* grad) {
  const EstimatorDef* def = EstimatorRegistry::Find("logreg");
  GEOMX_CHECK(def != nullptr);
  std::vector<ParamProblem> problems;
  ParamValues values = ResolveParams(def->params, params, &problems);
  GEOMX_CHECK(problems.empty());
  std::unique_ptr<Estimator> e = def->create(values);
  return static_cast<LogReg*>(e.get())->ObjectiveForTesting(table, theta, 1, grad);
}

// Test hook: true makes every later evaluation use the portable block kernels instead of the AVX2 ones.
void LogRegUsePortableKernelsForTesting(bool portable) { logreg_kernels::UsePortableKernels(portable); }

GEOMX_REGISTER_ESTIMATOR(MakeLogRegDef());

}  // namespace geomx::algorithms
