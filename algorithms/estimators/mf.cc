// mf: biased matrix factorisation by stochastic gradient descent (docs/algorithms.md "mf"; Koren, Bell & Volinsky
// 2009, "Matrix factorization techniques for recommender systems").
//
// Data: a ratings table (datasets/ratings.h): row = one rating, sparse entries at column 2u (user u) and 2i + 1
// (item i), target = the rating. Ids run over [0, span) with span = cols / 2.
//
// Model: prediction(u, i) = mu + b_u + b_i + <p_u, q_i>, mu the training mean (fixed), b the biases, p and q rank-k
// factors. Loss per rating: (1/2) e^2 + (reg/2)(b_u^2 + b_i^2 + |p_u|^2 + |q_i|^2) with e = prediction - rating, so
// a rating's gradients are g(b_u) = e + reg b_u, g(b_i) = e + reg b_i, g(p_u) = e q_i + reg p_u and
// g(q_i) = e p_u + reg q_i, all taken at the parameters before the step. A step is a mini-batch of batch_size
// ratings; each parameter moves by -lr times the SUM of its gradients over the batch (batch_size 1 is Funk's
// classic per-rating SGD). Factors start at N(0, init_scale^2), drawn by Rng(seed ^ 0x6d66): p for ids 0..span-1
// (row-major), then q, each value rounded to float; biases start at 0. The rows are reshuffled every epoch. Users
// and items without a training rating end with zero bias and factors, so their prediction falls back to mu + the
// bias that exists.
//
// Distributed (FitContext::collective): every worker's shard holds whole users (the table's qids are the user ids,
// fit_job.h ShardOf). User biases and factors stay on the worker; the item biases and factors are the row table
// "mf.items" (span rows of 1 + rank: b_i, then q_i - q_i(initial)) that the servers hold. Per step each worker
// pushes -lr x the summed gradients of the item rows its batch touched; the servers add the sum over the workers
// (the default rule) and answer the new rows of every item any worker touched, so traffic per step is proportional
// to the touched items, never to the table. mu is one sum at the start; at the end the user rows are gathered once
// (AllGather) so that every worker holds the whole model (a user split across shards, as in a hand-built table
// without qids, is trained by each worker separately and averaged).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/shard_checks.h"
#include "datasets/ratings.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

constexpr int64_t kMaxRank = 1024;
// span x (rank + 1) floats per side at most (the item table and the user table each): 512 MiB.
constexpr int64_t kMaxCells = int64_t{1} << 27;
constexpr int64_t kCancelCheckSteps = 64;

struct MfConfig {
  int64_t rank = 16;
  double lr = 0.01;
  double reg = 0.02;
  int64_t epochs = 30;
  int64_t batch_size = 1;
  double init_scale = 0.1;
  int64_t seed = 0;  // 0: FitContext::seed
  bool shuffle = true;
};

class MatrixFactorization final : public Estimator {
 public:
  explicit MatrixFactorization(const MfConfig& config) : config_(config) {}

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;
  std::vector<RowTableSpec> RowTables(int64_t cols, int num_classes) const override;

 private:
  double PredictOne(int64_t u, int64_t i) const;
  // The local checks of a training shard (no other worker needed).
  Status CheckShard(const data::Table& train) const;
  // Every worker's user rows averaged into every worker's model; users nobody holds are zeroed.
  Status GatherUsers(const std::vector<int64_t>& user_count, Collective* collective);

  MfConfig config_;
  int64_t span_ = 0, rank_ = 0;
  double mean_ = 0;
  std::vector<float> bu_, bi_, p_, q_;  // span, span, span x rank, span x rank
};

double MatrixFactorization::PredictOne(int64_t u, int64_t i) const {
  double v = mean_;
  const bool user = u < span_, item = i < span_;
  if (user) v += bu_[u];
  if (item) v += bi_[i];
  if (user && item) {
    const float* pu = p_.data() + u * rank_;
    const float* qi = q_.data() + i * rank_;
    for (int64_t k = 0; k < rank_; ++k) v += static_cast<double>(pu[k]) * qi[k];
  }
  return v;
}

Status MatrixFactorization::CheckShard(const data::Table& train) const {
  if (!train.has_targets() || static_cast<int64_t>(train.targets.size()) != train.rows) {
    return Status::InvalidArgument("mf: the training table has no ratings (targets)");
  }
  int64_t u = 0, i = 0;
  for (int64_t r = 0; r < train.rows; ++r) {
    if (!data::RatingOfRow(train, r, &u, &i)) {
      return Status::InvalidArgument("mf: row " + std::to_string(r) + " of " + train.source +
                                     " is not a rating: mf needs a ratings table (data.name: ratings or "
                                     "ratings-synthetic)");
    }
    if (!std::isfinite(train.targets[r])) {
      return Status::InvalidArgument("mf: row " + std::to_string(r) + " of " + train.source + " has no finite rating");
    }
  }
  const int64_t span = train.cols / 2;
  if (span * (config_.rank + 1) > kMaxCells) {
    return Status::InvalidArgument("mf: ids up to " + std::to_string(span - 1) + " with rank " +
                                   std::to_string(config_.rank) + " need more than 2^27 weights per table (renumber "
                                   "the ids from 0, or lower rank)");
  }
  return Status::Ok();
}

Status MatrixFactorization::Fit(const data::Table& train, const FitContext& context) {
  Collective* collective = context.collective;
  const Status local = CheckShard(train);
  GEOMX_ASSIGN_OR_RETURN(const std::vector<int64_t> rows_per_worker,
                         ExchangeVerdicts("mf", train, local, collective));
  int64_t total_rows = 0;
  for (int64_t r : rows_per_worker) total_rows += r;
  if (total_rows == 0) return Status::InvalidArgument("mf: the training table is empty");
  span_ = train.cols / 2;
  rank_ = config_.rank;
  const int64_t K = rank_, W = K + 1;
  const double lr = config_.lr, reg = config_.reg;

  // mu: the mean rating over every shard.
  double sum = 0;
  for (float r : train.targets) sum += r;
  if (collective != nullptr) {
    float sums[2] = {static_cast<float>(sum), static_cast<float>(train.rows)};
    GEOMX_RETURN_IF_ERROR(collective->AllReduceSum("mf.mean", sums));
    mean_ = static_cast<double>(sums[0]) / sums[1];
  } else {
    mean_ = sum / static_cast<double>(train.rows);
  }
  mean_ = static_cast<float>(mean_);  // as the model file holds it

  // Initial factors: the same on every worker (one stream from the seed), biases zero.
  const uint64_t seed = config_.seed != 0 ? static_cast<uint64_t>(config_.seed) : context.seed;
  Rng init(seed ^ 0x6d66);
  bu_.assign(static_cast<size_t>(span_), 0.0f);
  bi_.assign(static_cast<size_t>(span_), 0.0f);
  p_.resize(static_cast<size_t>(span_ * K));
  q_.resize(static_cast<size_t>(span_ * K));
  for (float& v : p_) v = static_cast<float>(config_.init_scale * init.Normal());
  for (float& v : q_) v = static_cast<float>(config_.init_scale * init.Normal());
  const std::vector<float> q0 = collective != nullptr ? q_ : std::vector<float>{};

  // The rows of this shard decoded once.
  std::vector<int64_t> user(static_cast<size_t>(train.rows)), item(static_cast<size_t>(train.rows));
  std::vector<int64_t> user_count(static_cast<size_t>(span_), 0), item_seen(static_cast<size_t>(span_), 0);
  for (int64_t r = 0; r < train.rows; ++r) {
    data::RatingOfRow(train, r, &user[r], &item[r]);
    ++user_count[user[r]];
    ++item_seen[item[r]];
  }

  // Step gradients: per touched user / item, W doubles (bias first), and the touched lists.
  std::vector<double> gu(static_cast<size_t>(span_ * W), 0.0), gi(static_cast<size_t>(span_ * W), 0.0);
  std::vector<uint8_t> mark_u(static_cast<size_t>(span_), 0), mark_i(static_cast<size_t>(span_), 0);
  std::vector<int64_t> touched_u, touched_i;
  std::vector<uint64_t> push_rows;
  std::vector<float> push_values;
  RowTableSpec table;
  if (collective != nullptr) table = RowTables(train.cols, 0).front();

  const int64_t batch = config_.batch_size;
  int64_t steps = 0;
  for (int64_t r : rows_per_worker) steps = std::max(steps, (r + batch - 1) / batch);
  const int rank = collective != nullptr ? collective->rank() : 0;
  std::vector<int64_t> order(static_cast<size_t>(train.rows));
  for (int64_t r = 0; r < train.rows; ++r) order[r] = r;

  // One SGD step on the touched rows (bias, then K factors) from their summed gradients, which are cleared with
  // the rows' marks and the touched list.
  const auto apply_sgd = [&](std::vector<int64_t>* touched, std::vector<double>* grads, std::vector<uint8_t>* marks,
                             std::vector<float>* bias, std::vector<float>* factors) {
    for (int64_t row : *touched) {
      double* g = grads->data() + row * W;
      (*bias)[row] = static_cast<float>((*bias)[row] - lr * g[0]);
      float* v = factors->data() + row * K;
      for (int64_t f = 0; f < K; ++f) v[f] = static_cast<float>(v[f] - lr * g[1 + f]);
      std::fill(g, g + W, 0.0);
      (*marks)[row] = 0;
    }
    touched->clear();
  };

  for (int64_t epoch = 1; epoch <= config_.epochs; ++epoch) {
    if (config_.shuffle) {
      Rng rng(seed ^ (0x5eed0000ULL + static_cast<uint64_t>(epoch) * 0x9e3779b97f4a7c15ULL) ^
              (static_cast<uint64_t>(rank) << 40));
      for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng.Below(k)]);
    }
    double sse = 0;
    for (int64_t step = 0; step < steps; ++step) {
      if (collective != nullptr && step % kCancelCheckSteps == kCancelCheckSteps - 1) {
        float cancel = context.Interrupted() ? 1.0f : 0.0f;
        GEOMX_RETURN_IF_ERROR(collective->AllReduceSum("mf.cancel", std::span<float>(&cancel, 1)));
        if (cancel > 0) return Status::Cancelled("mf: interrupted");
      } else if (collective == nullptr && context.Interrupted()) {
        return Status::Cancelled("mf: interrupted");
      }
      const int64_t r0 = std::min(train.rows, step * batch), r1 = std::min(train.rows, r0 + batch);
      for (int64_t k = r0; k < r1; ++k) {
        const int64_t r = order[k], u = user[r], i = item[r];
        const double e = PredictOne(u, i) - train.targets[r];
        sse += e * e;
        if (!mark_u[u]) {
          mark_u[u] = 1;
          touched_u.push_back(u);
        }
        if (!mark_i[i]) {
          mark_i[i] = 1;
          touched_i.push_back(i);
        }
        const float* pu = p_.data() + u * K;
        const float* qi = q_.data() + i * K;
        double* gpu = gu.data() + u * W;
        double* gqi = gi.data() + i * W;
        gpu[0] += e + reg * bu_[u];
        gqi[0] += e + reg * bi_[i];
        for (int64_t f = 0; f < K; ++f) {
          gpu[1 + f] += e * qi[f] + reg * pu[f];
          gqi[1 + f] += e * pu[f] + reg * qi[f];
        }
      }
      // Users: always here.
      apply_sgd(&touched_u, &gu, &mark_u, &bu_, &p_);
      // Items: here, or through the servers' row table.
      if (collective == nullptr) {
        apply_sgd(&touched_i, &gi, &mark_i, &bi_, &q_);
        continue;
      }
      push_rows.clear();
      push_values.clear();
      for (int64_t i : touched_i) {
        double* g = gi.data() + i * W;
        push_rows.push_back(static_cast<uint64_t>(i));
        for (int64_t f = 0; f < W; ++f) push_values.push_back(static_cast<float>(-lr * g[f]));
        std::fill(g, g + W, 0.0);
        mark_i[i] = 0;
      }
      touched_i.clear();
      GEOMX_ASSIGN_OR_RETURN(RowUpdate update, collective->PushRowGradients(table, push_rows, push_values));
      for (size_t k = 0; k < update.rows.size(); ++k) {
        const int64_t i = static_cast<int64_t>(update.rows[k]);
        const float* v = update.values.data() + k * static_cast<size_t>(W);
        item_seen[i] = std::max<int64_t>(item_seen[i], 1);
        bi_[i] = v[0];
        for (int64_t f = 0; f < K; ++f) q_[i * K + f] = q0[i * K + f] + v[1 + f];
      }
    }
    double n = static_cast<double>(train.rows);
    if (collective != nullptr) {
      float sums[3] = {static_cast<float>(sse), static_cast<float>(train.rows), context.Interrupted() ? 1.0f : 0.0f};
      GEOMX_RETURN_IF_ERROR(collective->AllReduceSum("mf.loss", sums));
      if (sums[2] > 0) return Status::Cancelled("mf: interrupted");
      sse = sums[0];
      n = sums[1];
    }
    if (context.observer != nullptr) {
      // Progressive: each rating's error was taken before the step that learnt from it.
      Metrics metrics = {{"loss", std::sqrt(sse / std::max(1.0, n))}};
      // Mid-fit the user rows are still spread over the workers: test figures only in one process.
      if (collective == nullptr && context.eval != nullptr && context.eval->has_targets()) {
        Result<Prediction> p = Predict(*context.eval, context.threads);
        if (p.ok()) {
          Metrics eval = EvaluateTask(data::TableTask::kRegression, *context.eval, *p);
          metrics.insert(metrics.end(), eval.begin(), eval.end());
        }
      }
      context.observer->OnStep(epoch, metrics);
    }
  }
  // Items nobody rated fall back to no bias and no factors.
  for (int64_t i = 0; i < span_; ++i) {
    if (item_seen[i] == 0) {
      bi_[i] = 0.0f;
      std::fill(q_.begin() + i * K, q_.begin() + (i + 1) * K, 0.0f);
    }
  }
  return GatherUsers(user_count, collective);
}

Status MatrixFactorization::GatherUsers(const std::vector<int64_t>& user_count, Collective* collective) {
  const int64_t K = rank_, W = K + 2;  // id, bias, factors
  if (collective == nullptr) {
    for (int64_t u = 0; u < span_; ++u) {
      if (user_count[u] == 0) {
        bu_[u] = 0.0f;
        std::fill(p_.begin() + u * K, p_.begin() + (u + 1) * K, 0.0f);
      }
    }
    return Status::Ok();
  }
  std::vector<float> mine;
  for (int64_t u = 0; u < span_; ++u) {
    if (user_count[u] == 0) continue;
    mine.push_back(static_cast<float>(u));  // exact: ids are below 2^24
    mine.push_back(bu_[u]);
    mine.insert(mine.end(), p_.begin() + u * K, p_.begin() + (u + 1) * K);
  }
  GEOMX_ASSIGN_OR_RETURN(const std::vector<float> all, collective->AllGather("mf.users", mine));
  if (all.size() % static_cast<size_t>(W) != 0) {
    return Status::Internal("mf: the user exchange returned " + std::to_string(all.size()) + " values");
  }
  std::vector<int64_t> copies(static_cast<size_t>(span_), 0);
  std::fill(bu_.begin(), bu_.end(), 0.0f);
  std::fill(p_.begin(), p_.end(), 0.0f);
  for (size_t at = 0; at < all.size(); at += static_cast<size_t>(W)) {
    const auto u = static_cast<int64_t>(all[at]);
    if (u < 0 || u >= span_) return Status::Internal("mf: the user exchange returned user " + std::to_string(u));
    const int64_t c = ++copies[u];
    // A running mean, so a user held by one worker keeps its exact values.
    bu_[u] += (all[at + 1] - bu_[u]) / static_cast<float>(c);
    for (int64_t f = 0; f < K; ++f) p_[u * K + f] += (all[at + 2 + f] - p_[u * K + f]) / static_cast<float>(c);
  }
  return Status::Ok();
}

Result<Prediction> MatrixFactorization::Predict(const data::Table& input, int threads) const {
  if (rank_ == 0) return Status::FailedPrecondition("mf: the model is not fitted");
  Prediction out;
  out.value.resize(static_cast<size_t>(input.rows));
  int64_t bad = -1;
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static) reduction(max : bad)
  for (int64_t r = 0; r < input.rows; ++r) {
    int64_t u = 0, i = 0;
    if (!data::RatingOfRow(input, r, &u, &i)) {
      bad = std::max(bad, r);
      continue;
    }
    out.value[r] = static_cast<float>(PredictOne(u, i));
  }
  if (bad >= 0) {
    return Status::InvalidArgument("mf: row " + std::to_string(bad) + " of " + input.source +
                                   " is not a (user, item) pair of a ratings table");
  }
  return out;
}

std::vector<RowTableSpec> MatrixFactorization::RowTables(int64_t cols, int) const {
  RowTableSpec t;
  t.name = "mf.items";
  t.width = static_cast<uint64_t>(config_.rank + 1);
  // Fit refuses a larger table before anything is pushed; the declared key stays within the same bound.
  t.rows = static_cast<uint64_t>(std::clamp<int64_t>(cols / 2, 1, kMaxCells / (config_.rank + 1)));
  t.rule = "";  // the servers add the summed deltas (-lr x gradient) to the rows
  return {t};
}

void MatrixFactorization::Save(ModelWriter* out) const {
  out->PutInts("mf.shape", std::vector<int64_t>{span_, rank_});
  out->PutFloats("mf.mean", std::vector<float>{static_cast<float>(mean_)});
  out->PutFloats("mf.user_bias", bu_);
  out->PutFloats("mf.item_bias", bi_);
  out->PutFloats("mf.user_factors", p_);
  out->PutFloats("mf.item_factors", q_);
}

Status MatrixFactorization::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("mf.shape", &shape, 2));
  const int64_t span = shape[0], rank = shape[1];
  if (span < 1 || span > data::kMaxRatingId || rank < 1 || rank > kMaxRank || span * (rank + 1) > kMaxCells) {
    return Status::DataLoss(in.source() + ": section 'mf.shape' holds an impossible shape");
  }
  std::vector<float> mean, bu, bi, p, q;
  // GetFloats compares the stored count with the expected one before allocating.
  GEOMX_RETURN_IF_ERROR(in.GetFloats("mf.mean", &mean, 1));
  GEOMX_RETURN_IF_ERROR(in.GetFloats("mf.user_bias", &bu, span));
  GEOMX_RETURN_IF_ERROR(in.GetFloats("mf.item_bias", &bi, span));
  GEOMX_RETURN_IF_ERROR(in.GetFloats("mf.user_factors", &p, span * rank));
  GEOMX_RETURN_IF_ERROR(in.GetFloats("mf.item_factors", &q, span * rank));
  span_ = span;
  rank_ = rank;
  mean_ = mean[0];
  bu_ = std::move(bu);
  bi_ = std::move(bi);
  p_ = std::move(p);
  q_ = std::move(q);
  return Status::Ok();
}

EstimatorDef MakeMfDef() {
  EstimatorDef def;
  def.name = "mf";
  def.title = "Matrix Factorization";
  def.task = data::TableTask::kRegression;
  def.help =
      "Biased matrix factorisation (Koren et al. 2009) of a ratings table (data.name ratings or ratings-synthetic): "
      "rating(u, i) = mu + b_u + b_i + <p_u, q_i>, squared loss with L2 (reg) on biases and factors, mini-batch SGD "
      "(batch_size 1: per-rating SGD) over reshuffled ratings for `epochs` passes. Users and items without a training "
      "rating predict with the biases that exist (the mean at worst). Reports rmse.";
  def.distributed =
      "user factors stay on the worker holding the user (shards are whole users); per step each worker pushes the "
      "row-sparse deltas of the items its batch touched and pulls back the touched item rows; users gathered once at "
      "the end";
  def.params = {
      IntParam("rank", 16, 1, kMaxRank, "number of latent factors k"),
      PositiveParam("lr", 0.01, "SGD learning rate (a step moves a parameter by -lr x its summed batch gradient)"),
      NonNegativeParam("reg", 0.02, "L2 strength on biases and factors, per rating"),
      IntParam("epochs", 30, 1, 100000, "passes over the ratings"),
      IntParam("batch_size", 1, 1, 1 << 24, "ratings per SGD step and worker (gradients summed over the batch)"),
      NonNegativeParam("init_scale", 0.1, "standard deviation of the initial factors"),
      IntParam("seed", 0, 0, int64_t{1} << 62, "initial factors and shuffles (0: the run's seed)"),
      BoolParam("shuffle", true, "reshuffle the ratings every epoch (false: table order)"),
  };
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    MfConfig c;
    c.rank = v.Int("rank");
    c.lr = v.Number("lr");
    c.reg = v.Number("reg");
    c.epochs = v.Int("epochs");
    c.batch_size = v.Int("batch_size");
    c.init_scale = v.Number("init_scale");
    c.seed = v.Int("seed");
    c.shuffle = v.Bool("shuffle");
    return std::make_unique<MatrixFactorization>(c);
  };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeMfDef());

}  // namespace geomx::algorithms
