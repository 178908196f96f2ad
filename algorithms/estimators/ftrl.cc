// ftrl and ftml: streaming (online) logistic regression with per-coordinate update rules (docs/algorithms.md
// "ftrl", "ftml"). The rules themselves are engine/kernels/online_update.h (FtrlUpdate, FtmlUpdate), shared with
// future device kernels and the parameter server's update step.
//
// Model: L linear learners over B feature buckets, weights w[bucket * L + l] (bucket-major, so the L weights of
// one feature are adjacent), plus one unhashed intercept bucket B when fit_intercept. Two classes use one learner
// (P(class 1) = sigmoid(margin)); K > 2 classes use one-vs-rest, K learners over the same stream, predicted class
// = argmax margin, probabilities = the K sigmoids normalised to sum 1. Feature column j lands in bucket j
// (hash_bits 0) or in bucket Hash(j) mod 2^hash_bits; columns that share a bucket add up (the hashing trick).
//
// Training streams the table in row order (no shuffling: the table is the stream) for `epochs` passes, in
// mini-batches of batch_size rows. A step's gradient is the SUM of its rows' logistic-loss gradients (weighted by
// the row weights), so batch_size 1 is the textbook per-example algorithm and z accumulates the same total
// whatever the batch size. A coordinate is updated iff its step gradient is non-zero ("lazy" updates: only the
// features present in the batch); for FTRL this is exact (a zero gradient leaves z, n, w unchanged), for FTML it
// is the row-sparse form (the state of absent coordinates is not decayed).
//
// Distributed (FitContext::collective): every worker streams its shard; per step it pushes the row-sparse gradient
// of the buckets its batch touched (rows of the row table "<name>.weights", L floats each) and the rule runs on the
// global server (online_rule.cc: "online-update", the same functors) on the sum over the workers; each worker gets
// back the new weights of every bucket some worker touched in that step, so all workers hold the same model without
// ever moving a dense model-sized vector. The pass's loss is summed once per pass, the interrupt flag every
// kCancelCheckSteps steps.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/shard_checks.h"
#include "engine/base/check.h"
#include "engine/kernels/online_update.h"

namespace geomx::algorithms {
namespace {

enum class OnlineRule : uint8_t { kFtrl, kFtml };

struct OnlineConfig {
  OnlineRule rule = OnlineRule::kFtrl;
  kernels::FtrlUpdate ftrl{0.05f, 1.0f, 0.0f, 0.0f};  // alpha, beta, l1, l2
  float lr = 0.001f, beta1 = 0.6f, beta2 = 0.999f, epsilon = 1e-8f, wd = 0.0f;  // ftml
  int64_t epochs = 1;
  int64_t batch_size = 1;
  int hash_bits = 0;
  bool fit_intercept = true;
};

constexpr int kMaxHashBits = 24;
constexpr int64_t kCancelCheckSteps = 64;

// Bucket of feature column j for hash_bits > 0: a 32-bit avalanche mix (MurmurHash3's finaliser) of j, top bits.
// Part of the model's meaning (saved models depend on it): never change it.
int64_t HashBucket(int64_t col, int bits) {
  uint32_t h = static_cast<uint32_t>(col) ^ static_cast<uint32_t>(static_cast<uint64_t>(col) >> 32);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return static_cast<int64_t>(h >> (32 - bits));
}

class OnlineLogistic final : public Estimator {
 public:
  OnlineLogistic(std::string name, const OnlineConfig& config) : name_(std::move(name)), config_(config) {}

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;
  std::vector<RowTableSpec> RowTables(int64_t cols, int num_classes) const override;

 private:
  // Sets the model's shape (cols_, num_classes_, hash_bits_ ...) and the column -> bucket map.
  void Shape(int64_t cols, int num_classes, int hash_bits, bool fit_intercept);
  // The learners' margins of row i of `t` into margins[0..L).
  void Margins(const data::Table& t, int64_t i, double* margins) const;
  int64_t size() const { return (buckets_ + (fit_intercept_ ? 1 : 0)) * learners_; }

  std::string name_;  // "ftrl" | "ftml": messages and model-file sections
  OnlineConfig config_;
  int64_t cols_ = 0;
  int num_classes_ = 0;
  int hash_bits_ = 0;
  bool fit_intercept_ = true;
  int64_t buckets_ = 0;   // B
  int64_t learners_ = 0;  // L
  std::vector<int64_t> bucket_of_col_;
  std::vector<float> w_;  // (B + intercept) x L, bucket-major
};

void OnlineLogistic::Shape(int64_t cols, int num_classes, int hash_bits, bool fit_intercept) {
  cols_ = cols;
  num_classes_ = num_classes;
  hash_bits_ = hash_bits;
  fit_intercept_ = fit_intercept;
  buckets_ = hash_bits == 0 ? cols : (int64_t{1} << hash_bits);
  learners_ = num_classes == 2 ? 1 : num_classes;
  bucket_of_col_.resize(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) bucket_of_col_[j] = hash_bits == 0 ? j : HashBucket(j, hash_bits);
}

void OnlineLogistic::Margins(const data::Table& t, int64_t i, double* margins) const {
  const int64_t L = learners_;
  for (int64_t l = 0; l < L; ++l) margins[l] = fit_intercept_ ? w_[buckets_ * L + l] : 0.0;
  auto add = [&](int64_t col, float x) {
    const float* wr = w_.data() + bucket_of_col_[col] * L;
    for (int64_t l = 0; l < L; ++l) margins[l] += static_cast<double>(x) * wr[l];
  };
  if (t.sparse) {
    for (int64_t p = t.row_ptr[i]; p < t.row_ptr[i + 1]; ++p) add(t.col_index[p], t.values[p]);
  } else {
    const float* x = t.Row(i);
    for (int64_t j = 0; j < t.cols; ++j) {
      if (x[j] != 0.0f) add(j, x[j]);
    }
  }
}

Status OnlineLogistic::Fit(const data::Table& train, const FitContext& context) {
  Collective* collective = context.collective;
  GEOMX_ASSIGN_OR_RETURN(ShardShape shape, ExchangeShardShape(name_, train, collective));
  GEOMX_RETURN_IF_ERROR(CheckClassesAcrossShards(name_, train, collective));
  Shape(train.cols, train.num_classes, config_.hash_bits, config_.fit_intercept);
  const int64_t L = learners_, P = size();
  w_.assign(static_cast<size_t>(P), 0.0f);
  // Rule state: FTRL (z, n); FTML (d, v, z).
  std::vector<float> s0(static_cast<size_t>(P), 0.0f), s1(static_cast<size_t>(P), 0.0f), s2;
  if (config_.rule == OnlineRule::kFtml) s2.assign(static_cast<size_t>(P), 0.0f);
  // The step gradient, dense over the model, and the touched buckets.
  std::vector<float> grad(static_cast<size_t>(P), 0.0f);
  const int64_t total_buckets = buckets_ + (fit_intercept_ ? 1 : 0);
  std::vector<uint8_t> marked(static_cast<size_t>(total_buckets), 0);
  std::vector<int64_t> touched;
  std::vector<double> margins(static_cast<size_t>(L));
  const int64_t batch = config_.batch_size;
  int64_t steps = 0;
  for (int64_t r : shape.rows_per_worker) steps = std::max(steps, (r + batch - 1) / batch);
  int64_t t = 0;  // rule steps taken (FTML's bias corrections)
  RowTableSpec table;
  std::vector<uint64_t> rows;
  std::vector<float> row_grads;
  if (collective != nullptr) table = RowTables(train.cols, train.num_classes).front();

  auto touch = [&](int64_t bucket) {
    if (!marked[bucket]) {
      marked[bucket] = 1;
      touched.push_back(bucket);
    }
  };
  // Applies the rule to every coordinate of `bucket` with a non-zero gradient and clears the gradient.
  auto apply = [&](int64_t bucket, const kernels::FtmlUpdate& ftml) {
    for (int64_t l = 0; l < L; ++l) {
      const int64_t k = bucket * L + l;
      const float g = grad[k];
      if (g == 0.0f) continue;
      grad[k] = 0.0f;
      if (config_.rule == OnlineRule::kFtrl) {
        config_.ftrl(w_[k], g, s0[k], s1[k]);
      } else {
        ftml(w_[k], g, s0[k], s1[k], s2[k]);
      }
    }
  };

  for (int64_t pass = 1; pass <= config_.epochs; ++pass) {
    double pass_loss = 0, pass_weight = 0;
    for (int64_t step = 0; step < steps; ++step) {
      if (collective != nullptr && step % kCancelCheckSteps == kCancelCheckSteps - 1) {
        float cancel = context.Interrupted() ? 1.0f : 0.0f;
        GEOMX_RETURN_IF_ERROR(collective->AllReduceSum(name_ + ".cancel", std::span<float>(&cancel, 1)));
        if (cancel > 0) return Status::Cancelled(name_ + ": interrupted");
      } else if (collective == nullptr && context.Interrupted()) {
        return Status::Cancelled(name_ + ": interrupted");
      }
      const int64_t r0 = std::min(train.rows, step * batch);
      const int64_t r1 = std::min(train.rows, r0 + batch);
      double loss = 0, weight = 0;
      for (int64_t i = r0; i < r1; ++i) {
        Margins(train, i, margins.data());
        const float s = train.weight(i);
        const int32_t y = train.labels[i];
        for (int64_t l = 0; l < L; ++l) {
          const double yl = (L == 1 ? y == 1 : y == l) ? 1.0 : 0.0;
          loss += s * (Softplus(margins[l]) - yl * margins[l]);
          margins[l] = s * (Sigmoid(margins[l]) - yl);  // now dloss/dmargin
        }
        weight += s;
        auto add = [&](int64_t col, float x) {
          const int64_t b = bucket_of_col_[col];
          touch(b);
          float* gr = grad.data() + b * L;
          for (int64_t l = 0; l < L; ++l) gr[l] += static_cast<float>(margins[l] * x);
        };
        if (train.sparse) {
          for (int64_t p = train.row_ptr[i]; p < train.row_ptr[i + 1]; ++p) add(train.col_index[p], train.values[p]);
        } else {
          const float* x = train.Row(i);
          for (int64_t j = 0; j < train.cols; ++j) {
            if (x[j] != 0.0f) add(j, x[j]);
          }
        }
        if (fit_intercept_) {
          touch(buckets_);
          for (int64_t l = 0; l < L; ++l) grad[buckets_ * L + l] += static_cast<float>(margins[l]);
        }
      }
      pass_loss += loss;
      pass_weight += weight;
      if (collective != nullptr) {
        // The touched buckets' gradients as rows; the answer holds the new weights of every bucket any worker
        // touched.
        rows.clear();
        row_grads.clear();
        for (int64_t b : touched) {
          rows.push_back(static_cast<uint64_t>(b));
          float* gr = grad.data() + b * L;
          row_grads.insert(row_grads.end(), gr, gr + L);
          std::fill(gr, gr + L, 0.0f);
          marked[b] = 0;
        }
        touched.clear();
        GEOMX_ASSIGN_OR_RETURN(RowUpdate update, collective->PushRowGradients(table, rows, row_grads));
        for (size_t r = 0; r < update.rows.size(); ++r) {
          std::copy_n(update.values.begin() + static_cast<std::ptrdiff_t>(r * L), L,
                      w_.begin() + static_cast<std::ptrdiff_t>(update.rows[r] * L));
        }
        continue;
      }
      bool any = false;
      for (int64_t b : touched) {
        for (int64_t l = 0; l < L; ++l) any = any || grad[b * L + l] != 0.0f;
      }
      if (any) ++t;  // as the server-side rule: a step counts when it updates something
      const kernels::FtmlUpdate ftml =
          kernels::FtmlUpdate::Make(config_.lr, config_.wd, config_.beta1, config_.beta2, config_.epsilon, t);
      for (int64_t b : touched) {
        apply(b, ftml);
        marked[b] = 0;
      }
      touched.clear();
    }
    if (collective != nullptr) {
      float sums[3] = {static_cast<float>(pass_loss), static_cast<float>(pass_weight),
                       context.Interrupted() ? 1.0f : 0.0f};
      GEOMX_RETURN_IF_ERROR(collective->AllReduceSum(name_ + ".loss", sums));
      if (sums[2] > 0) return Status::Cancelled(name_ + ": interrupted");
      pass_loss = sums[0];
      pass_weight = sums[1];
    }
    if (context.observer != nullptr) {
      // Progressive validation: each row's loss was taken before the model learnt from it.
      Metrics metrics = {{"loss", pass_weight > 0 ? pass_loss / pass_weight : 0.0}};
      if (context.eval != nullptr && context.eval->has_labels() && context.eval->cols == cols_) {
        Result<Prediction> p = Predict(*context.eval, context.threads);
        if (p.ok()) {
          Metrics eval = EvaluateTask(data::TableTask::kClassification, *context.eval, *p);
          metrics.insert(metrics.end(), eval.begin(), eval.end());
        }
      }
      context.observer->OnStep(pass, metrics);
    }
  }
  return Status::Ok();
}

Result<Prediction> OnlineLogistic::Predict(const data::Table& input, int threads) const {
  if (w_.empty()) return Status::FailedPrecondition(name_ + ": the model is not fitted");
  if (input.cols != cols_) {
    return Status::InvalidArgument(name_ + ": the input has " + std::to_string(input.cols) +
                                   " columns, the model was trained on " + std::to_string(cols_));
  }
  const int64_t K = num_classes_, L = learners_;
  Prediction out;
  out.value.resize(static_cast<size_t>(input.rows));
  out.proba.resize(static_cast<size_t>(input.rows * K));
  out.proba_columns = K;
#pragma omp parallel num_threads(std::max(1, threads))
  {
    std::vector<double> margins(static_cast<size_t>(L));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < input.rows; ++i) {
      Margins(input, i, margins.data());
      float* pr = out.proba.data() + i * K;
      if (L == 1) {
        const double p1 = Sigmoid(margins[0]);
        pr[0] = static_cast<float>(1.0 - p1);
        pr[1] = static_cast<float>(p1);
        out.value[i] = margins[0] > 0 ? 1.0f : 0.0f;
        continue;
      }
      int64_t arg = 0;
      double sum = 0;
      for (int64_t l = 0; l < L; ++l) {
        arg = margins[l] > margins[arg] ? l : arg;
        sum += Sigmoid(margins[l]);
      }
      for (int64_t l = 0; l < L; ++l) pr[l] = static_cast<float>(Sigmoid(margins[l]) / sum);
      out.value[i] = static_cast<float>(arg);
    }
  }
  return out;
}

std::vector<RowTableSpec> OnlineLogistic::RowTables(int64_t cols, int num_classes) const {
  RowTableSpec t;
  t.name = name_ + ".weights";
  const int64_t buckets = config_.hash_bits == 0 ? cols : (int64_t{1} << config_.hash_bits);
  t.rows = static_cast<uint64_t>(buckets + (config_.fit_intercept ? 1 : 0));
  t.width = static_cast<uint64_t>(num_classes == 2 ? 1 : std::max(1, num_classes));
  t.rule = "online-update";
  nn::OptimizerConfig& h = t.hyper;
  if (config_.rule == OnlineRule::kFtrl) {
    h.name = "ftrl";
    h.lr = config_.ftrl.alpha;
    h.ftrl_beta = config_.ftrl.beta;
    h.l1 = config_.ftrl.l1;
    h.weight_decay = config_.ftrl.l2;
  } else {
    h.name = "ftml";
    h.lr = config_.lr;
    h.beta1 = config_.beta1;
    h.beta2 = config_.beta2;
    h.eps = config_.epsilon;
    h.weight_decay = config_.wd;
  }
  return {t};
}

void OnlineLogistic::Save(ModelWriter* out) const {
  const std::vector<int64_t> shape = {cols_, num_classes_, hash_bits_, fit_intercept_ ? 1 : 0};
  out->PutInts(name_ + ".shape", shape);
  out->PutFloats(name_ + ".weights", w_);
}

Status OnlineLogistic::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts(name_ + ".shape", &shape, 4));
  const int64_t cols = shape[0], k = shape[1], bits = shape[2], fi = shape[3];
  if (cols < 1 || cols > (int64_t{1} << 31) || k < 2 || k > (1 << 20) || bits < 0 || bits > kMaxHashBits ||
      (fi != 0 && fi != 1)) {
    return Status::DataLoss(in.source() + ": section '" + name_ + ".shape' holds an impossible shape");
  }
  const int64_t buckets = bits == 0 ? cols : (int64_t{1} << bits);
  const int64_t learners = k == 2 ? 1 : k;
  std::vector<float> w;
  // GetFloats compares the stored count with the expected one before allocating.
  GEOMX_RETURN_IF_ERROR(in.GetFloats(name_ + ".weights", &w, (buckets + fi) * learners));
  Shape(cols, static_cast<int>(k), static_cast<int>(bits), fi == 1);
  w_ = std::move(w);
  return Status::Ok();
}

std::vector<ParamSpec> CommonParams() {
  return {
      IntParam("epochs", 1, 1, 100000, "passes over the stream (1 = one streaming pass)"),
      IntParam("batch_size", 1, 1, 1 << 24,
               "rows per update step and worker (the step gradient is the sum over the batch)"),
      IntParam("hash_bits", 0, 0, kMaxHashBits,
               "0: one weight per column; b > 0: columns hashed into 2^b buckets (hashing trick)"),
      BoolParam("fit_intercept", true, "learn an unhashed intercept per learner"),
  };
}

void ReadCommon(const ParamValues& v, OnlineConfig* c) {
  c->epochs = v.Int("epochs");
  c->batch_size = v.Int("batch_size");
  c->hash_bits = static_cast<int>(v.Int("hash_bits"));
  c->fit_intercept = v.Bool("fit_intercept");
}

EstimatorDef MakeFtrlDef() {
  EstimatorDef def;
  def.name = "ftrl";
  def.title = "FTRL-Proximal Logistic Regression";
  def.task = data::TableTask::kClassification;
  def.help =
      "Online logistic regression with the per-coordinate FTRL-Proximal rule (McMahan et al. 2013): state z, n per "
      "weight, L1 sparsity (weights with |z| <= l1 are exactly 0), L2, lazy updates of the features present, "
      "optional hashing of feature indices. Two classes: one learner; more: one-vs-rest over the same stream. "
      "Streams the table in row order, epochs passes.";
  def.distributed =
      "per mini-batch step every worker pushes the row-sparse gradient of the buckets its batch touched; the global "
      "server applies FTRL to the sum and answers the new weights of every touched bucket";
  def.params = {
      PositiveParam("alpha", 0.05, "per-coordinate learning rate alpha"),
      NonNegativeParam("beta", 1.0, "learning-rate smoothing beta"),
      NonNegativeParam("l1", 0.0, "L1 strength (weights with |z| <= l1 are exactly zero)"),
      NonNegativeParam("l2", 0.0, "L2 strength"),
  };
  for (ParamSpec& p : CommonParams()) def.params.push_back(std::move(p));
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    OnlineConfig c;
    c.rule = OnlineRule::kFtrl;
    c.ftrl = kernels::FtrlUpdate{static_cast<float>(v.Number("alpha")), static_cast<float>(v.Number("beta")),
                                 static_cast<float>(v.Number("l1")), static_cast<float>(v.Number("l2"))};
    ReadCommon(v, &c);
    return std::make_unique<OnlineLogistic>("ftrl", c);
  };
  return def;
}

EstimatorDef MakeFtmlDef() {
  EstimatorDef def;
  def.name = "ftml";
  def.title = "FTML Logistic Regression";
  def.task = data::TableTask::kClassification;
  def.help =
      "Online logistic regression with the per-coordinate Follow the Moving Leader rule (Zheng & Kwok 2017; "
      "MXNet's FTML): state d, v, z per weight, bias-corrected like Adam, optional L2 (wd). Two classes: one "
      "learner; more: one-vs-rest over the same stream. Streams the table in row order, epochs passes.";
  def.distributed =
      "per mini-batch step every worker pushes the row-sparse gradient of the buckets its batch touched; the global "
      "server applies FTML to the sum and answers the new weights of every touched bucket";
  def.params = {
      PositiveParam("lr", 0.001, "learning rate (MXNet's default is 0.0025; 0.001 measured better for one pass)"),
      RangeParam("beta1", 0.6, 0.0, false, 1.0, true, "decay of the moving leader (z, d)"),
      RangeParam("beta2", 0.999, 0.0, false, 1.0, true, "decay of the squared-gradient average v"),
      PositiveParam("epsilon", 1e-8, "added to sqrt(v) for stability"),
      NonNegativeParam("l2", 0.0, "L2 strength (weight decay wd: g' = g + l2 * w)"),
  };
  for (ParamSpec& p : CommonParams()) def.params.push_back(std::move(p));
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    OnlineConfig c;
    c.rule = OnlineRule::kFtml;
    c.lr = static_cast<float>(v.Number("lr"));
    c.beta1 = static_cast<float>(v.Number("beta1"));
    c.beta2 = static_cast<float>(v.Number("beta2"));
    c.epsilon = static_cast<float>(v.Number("epsilon"));
    c.wd = static_cast<float>(v.Number("l2"));
    ReadCommon(v, &c);
    return std::make_unique<OnlineLogistic>("ftml", c);
  };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeFtrlDef());
GEOMX_REGISTER_ESTIMATOR(MakeFtmlDef());

}  // namespace geomx::algorithms
