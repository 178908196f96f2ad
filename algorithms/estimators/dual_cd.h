// Dual coordinate descent for linear support vector machines (Hsieh et al., ICML 2008; Ho & Lin, JMLR 2012):
// the solver shared by linear-svm, linear-svr (linear_svm.cc) and ranksvm (ranksvm.cc).
//
// A DualCdTask holds one or more dual problems over the same examples (table rows, with an optional constant bias
// feature, or pairwise differences of rows): the one-vs-rest classifiers of a multi-class SVM, or a single SVR or
// RankSVM problem. Each problem keeps its dual variables and w = sum_i coef_i x_i and advances by passes: a pass
// visits the active coordinates in a fresh random order and minimises the dual exactly in each. RunDualCd() drives
// a task:
//  - alone (FitContext::collective == nullptr): LIBLINEAR's outer iterations with optional shrinking, the problems
//    spread over FitContext::threads, until each converges or max_iter passes;
//  - across workers: CoCoA with safe averaging (Jaggi et al., NIPS 2014): each worker runs local_epochs passes on
//    its shard from the shared w, the workers sum their delta-w, and w += sum / K (local duals move by 1/K of
//    their local step, which keeps w = sum_i coef_i x_i over the whole job).
//
// Thread-safety: see DualCdTask; RowExamples / PairExamples are read-only after construction and may be shared by
// any number of tasks and threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "datasets/table.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {

// Vector kernels used by the solver and by prediction (AVX2/FMA clones chosen at run time where the CPU has them).
float DenseDot(const float* x, const float* w, int64_t n);
void DenseAxpy(float a, const float* x, float* y, int64_t n);
float SparseDot(const int32_t* index, const float* value, int64_t nnz, const float* w);
void SparseAxpy(float a, const int32_t* index, const float* value, int64_t nnz, float* y);

// The rows of `table` as examples; with bias != 0 every row gets one more feature of that constant value
// (LIBLINEAR's -B: the intercept is the last weight and is regularised like the others). Borrows `table`, which
// must outlive this object.
class RowExamples {
 public:
  RowExamples(const data::Table& table, float bias, int threads);
  int64_t size() const { return table_->rows; }
  int64_t dim() const { return table_->cols + (bias_ != 0.0f ? 1 : 0); }
  float Dot(int64_t i, const float* w) const;
  void Axpy(int64_t i, float a, float* w) const;
  double SquaredNorm(int64_t i) const { return norms_[static_cast<size_t>(i)]; }

 private:
  const data::Table* table_;
  float bias_;
  std::vector<double> norms_;
};

// Pairs (a, b) of rows of `table`; example k is the difference x_a - x_b (never materialised). Borrows `table`.
class PairExamples {
 public:
  PairExamples(const data::Table& table, std::vector<std::pair<int64_t, int64_t>> pairs, int threads);
  int64_t size() const { return static_cast<int64_t>(pairs_.size()); }
  int64_t dim() const { return table_->cols; }
  float Dot(int64_t k, const float* w) const;
  void Axpy(int64_t k, float a, float* w) const;
  double SquaredNorm(int64_t k) const { return norms_[static_cast<size_t>(k)]; }
  const std::vector<std::pair<int64_t, int64_t>>& pairs() const { return pairs_; }

 private:
  const data::Table* table_;
  std::vector<std::pair<int64_t, int64_t>> pairs_;
  std::vector<double> norms_;
};

// RankSVM's training pairs (defined in ranksvm.cc): every (i, j) of rows of one query (same qid; the rows of a query
// need not be adjacent) with targets[i] > targets[j], queries in order of first appearance, within a query i by
// descending relevance (ties in row order) and j likewise. With max_pairs_per_query > 0, a query with more pairs
// keeps a uniform sample of that many (without replacement, drawn from `seed`), in the same order.
std::vector<std::pair<int64_t, int64_t>> RankingPairs(const data::Table& table, int64_t max_pairs_per_query,
                                                      uint64_t seed);

enum class SvmLoss : uint8_t {
  kHinge,         // L1-loss: 0 <= alpha_i <= C_i
  kSquaredHinge,  // L2-loss: alpha_i >= 0, diagonal 1 / (2 C_i) added to the dual Hessian
};

// How a pass treats the active set and the stopping rule.
enum class PassMode : uint8_t {
  kShrinking,  // alone, with LIBLINEAR's shrinking; a pass within tolerance over every coordinate ends the problem
  kFull,       // alone, every coordinate every pass; same stopping rule
  kLocal,      // a CoCoA round's local pass: every coordinate; stopping is the job's decision (GlobalConverged)
};

// A set of dual problems over the same examples (the one-vs-rest classifiers of a multi-class SVM, or a single
// problem), each with its own duals and weights. A pass visits the examples once in a random order and lets every
// listed problem take its coordinate step on each example while the example is in cache: one stream over the data
// serves all of them (a multi-class SVM is memory-bound otherwise). Passes over disjoint sets of problems may run
// concurrently from different threads; everything else is single-threaded.
//
// Problem p's solution is w(p) (dim() floats) and coefficients(p), its dual variables per example: alpha_i >= 0 of
// a classifier (w = sum_i alpha_i y_i x_i), beta_i of a regressor (w = sum_i beta_i x_i).
class DualCdTask {
 public:
  DualCdTask(int64_t problems, int64_t dim);
  virtual ~DualCdTask() = default;

  int64_t problems() const { return static_cast<int64_t>(done_.size()); }
  int64_t dim() const { return dim_; }

  // One pass of each listed problem that is not done; the visiting order is drawn from the task's seed and
  // `pass_id`. With shrinking, coordinates at a bound whose gradient says they will stay there leave the problem's
  // active set (Hsieh et al. section 3.2); when a pass is within tolerance the set is restored, and a pass within
  // tolerance over every coordinate ends the problem (done()).
  virtual void Pass(std::span<const int64_t> problems, PassMode mode, uint64_t pass_id) = 0;
  bool done(int64_t p) const { return done_[static_cast<size_t>(p)] != 0; }
  // Ends problem p (the job's decision in CoCoA).
  void Finish(int64_t p) { done_[static_cast<size_t>(p)] = 1; }
  // The last pass's optimality violation (classifier: max - min projected gradient; regressor: sum of violations).
  double violation(int64_t p) const { return violation_[static_cast<size_t>(p)]; }
  // Coordinates the next pass of p visits (a work estimate for balancing threads).
  virtual int64_t active(int64_t p) const = 0;
  // Distributed stopping rule on every worker's violation of p for the same round (identical on every worker).
  virtual bool GlobalConverged(int64_t p, std::span<const float> per_worker_violation) = 0;
  // Problem p's dual objective without 0.5 ||w||^2: the part that is a sum over the examples.
  virtual double SeparableObjective(int64_t p) const = 0;
  virtual std::span<const double> coefficients(int64_t p) const = 0;

  // CoCoA rounds: BeginRound() remembers p's duals and w; EndRound() writes w_local - w_start into delta, puts w
  // back to w_start and moves each dual to start + scale * (local - start); ApplyDelta() adds scale * summed to w.
  virtual void BeginRound(int64_t p) = 0;
  virtual void EndRound(int64_t p, double scale, std::span<float> delta) = 0;
  void ApplyDelta(int64_t p, double scale, std::span<const float> summed);

  std::span<float> w(int64_t p) { return {w_.data() + p * dim_, static_cast<size_t>(dim_)}; }
  std::span<const float> w(int64_t p) const { return {w_.data() + p * dim_, static_cast<size_t>(dim_)}; }

 protected:
  int64_t dim_;
  std::vector<float> w_;  // problems x dim
  std::vector<double> violation_;
  std::vector<char> done_;
};

// Binary SVMs over the same examples: problem p has labels y[p][i] in {-1, +1} and costs cost[p][i] >= 0
// (C * class factor * row weight; a cost of 0 keeps the example out). Stops when max - min projected gradient
// <= tol (LIBLINEAR's -e for -s 1/3).
std::unique_ptr<DualCdTask> MakeSvcTask(const RowExamples& examples, std::vector<std::vector<float>> y,
                                        std::vector<std::vector<float>> cost, SvmLoss loss, double tol, uint64_t seed);
std::unique_ptr<DualCdTask> MakeSvcTask(const PairExamples& examples, std::vector<std::vector<float>> y,
                                        std::vector<std::vector<float>> cost, SvmLoss loss, double tol, uint64_t seed);
// One epsilon-insensitive SVR: hinge = L1 loss (|beta_i| <= C_i), squared hinge = L2 loss (diagonal 1 / (2 C_i)).
// Stops when the summed violation of a pass <= tol * that of the first pass (LIBLINEAR's -e for -s 12/13).
std::unique_ptr<DualCdTask> MakeSvrTask(const RowExamples& examples, std::vector<float> y, std::vector<float> cost,
                                        SvmLoss loss, double epsilon, double tol, uint64_t seed);

struct DualCdOptions {
  int64_t max_iter = 1000;     // passes, alone
  bool shrinking = true;       // alone only (CoCoA's local passes visit every coordinate)
  int64_t outer_rounds = 20;   // CoCoA rounds across workers
  int64_t local_epochs = 1;    // passes per CoCoA round
  int64_t eval_every = 10;     // call `eval` every this many passes (and at the end), when there is an observer
};

struct DualCdReport {
  int64_t steps = 0;       // passes (alone) or rounds (across workers)
  bool converged = false;  // every problem met its tolerance
};

// Solves every problem of `task` (from where its duals and weights are: zero for a new task), its problems spread
// over FitContext::threads. `eval`, when set, gives the metrics of the current weights on FitContext::eval for the
// observer. Across workers every worker must pass a task of the same shape and the same `key`; per round the job
// sums problems * (dim + 1) + 1 floats and gathers `problems` floats per worker. kCancelled when interrupted
// (decided jointly across workers).
Result<DualCdReport> RunDualCd(DualCdTask* task, const DualCdOptions& options, const FitContext& context,
                               const std::string& key, const std::function<Metrics()>& eval);

// Decision values of linear models on `input`: rows x num_vectors, row-major. `weights` holds num_vectors rows of
// cols + 1 floats each: the feature weights, then the intercept.
std::vector<float> LinearDecisionValues(const data::Table& input, const std::vector<float>& weights,
                                        int64_t num_vectors, int threads);

// Save/Load of such weights: sections "linear.shape" (num_vectors, cols) and "linear.weights".
void SaveLinearWeights(ModelWriter* out, const std::vector<float>& weights, int64_t num_vectors, int64_t cols);
Status LoadLinearWeights(const ModelReader& in, std::vector<float>* weights, int64_t* num_vectors, int64_t* cols);

}  // namespace geomx::algorithms
