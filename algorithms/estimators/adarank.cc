// adarank: AdaRank (Xu & Li, SIGIR 2007). Weak rankers are single features (their per-query normalised values,
// optionally negated); a distribution P over the queries; each round picks the weak ranker h maximising
// sum_q P(q) E(q, h) with E = NDCG@k or AP of the query ranked by h, weighs it alpha = 0.5 ln(sum P (1 + E) /
// sum P (1 - E)), adds alpha h to the ensemble f and sets P(q) proportional to exp(-E(q, f)). E(q, h) of a single
// feature does not change between rounds, so it is computed once per (query, candidate); a round costs one weighted
// sum over that matrix and one sort of every query by f.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/rank_ensembles.h"
#include "engine/base/logging.h"

namespace geomx::algorithms {
namespace {

enum class Normalize : uint8_t { kNone, kZscore, kLinear, kSum };

Normalize ParseNormalize(const std::string& s) {
  if (s == "zscore") return Normalize::kZscore;
  if (s == "linear") return Normalize::kLinear;
  if (s == "sum") return Normalize::kSum;
  return Normalize::kNone;
}

// The features the weak rankers see: rows x cols doubles, each feature normalised within its query as `kind` says
// (constant features of a query become 0), NaN as 0. kInvalidArgument when a per-query kind meets a table without
// qids.
Result<std::vector<double>> NormalisedFeatures(const data::Table& t, Normalize kind, const std::string& what) {
  const int64_t d = t.cols;
  std::vector<double> x(static_cast<size_t>(t.rows * d));
  {
    std::vector<float> row(static_cast<size_t>(d));
    for (int64_t i = 0; i < t.rows; ++i) {
      t.CopyRow(i, row.data());
      for (int64_t f = 0; f < d; ++f) {
        const float v = row[static_cast<size_t>(f)];
        x[static_cast<size_t>(i * d + f)] = std::isnan(v) ? 0.0 : static_cast<double>(v);
      }
    }
  }
  if (kind == Normalize::kNone) return x;
  if (t.rows > 0 && static_cast<int64_t>(t.qids.size()) != t.rows) {
    return Status::InvalidArgument("adarank: normalize scales every feature within its query, and " + what +
                                   " has no query ids (qid:)");
  }
  for (const std::vector<int64_t>& rows : GroupByQuery(t.qids)) {
    for (int64_t f = 0; f < d; ++f) {
      auto at = [&](int64_t i) -> double& { return x[static_cast<size_t>(i * d + f)]; };
      double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, abs_sum = 0;
      for (int64_t i : rows) {
        lo = std::min(lo, at(i));
        hi = std::max(hi, at(i));
        sum += at(i);
        abs_sum += std::fabs(at(i));
      }
      const double mean = sum / static_cast<double>(rows.size());
      double var = 0;
      for (int64_t i : rows) var += (at(i) - mean) * (at(i) - mean);
      const double sd = std::sqrt(var / static_cast<double>(rows.size()));
      for (int64_t i : rows) {
        double& v = at(i);
        switch (kind) {
          case Normalize::kZscore: v = sd > 0 ? (v - mean) / sd : 0.0; break;
          case Normalize::kLinear: v = hi > lo ? (v - lo) / (hi - lo) : 0.0; break;
          case Normalize::kSum: v = abs_sum > 0 ? v / abs_sum : 0.0; break;
          case Normalize::kNone: break;
        }
      }
    }
  }
  return x;
}

// E[q * C + c]: the metric of query q ranked by candidate c (c < d: +x_c; c >= d: -x_{c-d}) over the normalised
// features `x` (rows x d). It does not change during the fit.
std::vector<double> CandidateMetrics(RankMetric metric, int k, const std::vector<std::vector<int64_t>>& queries,
                                     const std::vector<double>& x, const data::Table& train, int64_t num_candidates,
                                     int threads) {
  const int64_t n = train.rows, d = train.cols, nq = static_cast<int64_t>(queries.size());
  std::vector<double> e(static_cast<size_t>(nq * num_candidates));
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> column(static_cast<size_t>(n));
#pragma omp for schedule(dynamic, 1)
    for (int64_t c = 0; c < num_candidates; ++c) {
      const int64_t f = c % d;
      const double sign = c < d ? 1.0 : -1.0;
      for (int64_t i = 0; i < n; ++i) column[static_cast<size_t>(i)] = sign * x[static_cast<size_t>(i * d + f)];
      for (int64_t q = 0; q < nq; ++q) {
        e[static_cast<size_t>(q * num_candidates + c)] =
            QueryMetric(metric, k, queries[static_cast<size_t>(q)], column, train.targets);
      }
    }
  }
  return e;
}

class AdaRank final : public Estimator {
 public:
  explicit AdaRank(const ParamValues& p)
      : rounds_(p.Int("n_estimators")),
        metric_(p.Choice("metric") == "map" ? RankMetric::kMap : RankMetric::kNdcg),
        k_(static_cast<int>(p.Int("k"))),
        tolerance_(p.Number("tolerance")),
        max_selections_(p.Int("max_selections")),
        normalize_(ParseNormalize(p.Choice("normalize"))),
        both_directions_(p.Bool("both_directions")) {}

  Status Fit(const data::Table& train, const FitContext& context) override;

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    if (cols_ < 0) return Status::FailedPrecondition("adarank: the model is not fitted");
    if (input.cols != cols_) {
      return Status::InvalidArgument("adarank: the input has " + std::to_string(input.cols) +
                                     " feature columns, the model was trained on " + std::to_string(cols_));
    }
    GEOMX_ASSIGN_OR_RETURN(std::vector<double> x, NormalisedFeatures(input, normalize_, "the input"));
    std::vector<double> coef(static_cast<size_t>(cols_), 0.0);
    for (size_t t = 0; t < features_.size(); ++t) coef[static_cast<size_t>(features_[t])] += alphas_[t];
    Prediction out;
    out.value.resize(static_cast<size_t>(input.rows));
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
    for (int64_t i = 0; i < input.rows; ++i) {
      double s = 0;
      for (int64_t f = 0; f < cols_; ++f) s += coef[static_cast<size_t>(f)] * x[static_cast<size_t>(i * cols_ + f)];
      out.value[static_cast<size_t>(i)] = static_cast<float>(s);
    }
    return out;
  }

  void Save(ModelWriter* out) const override {
    out->PutNumber("adarank.columns", static_cast<double>(cols_));
    out->PutInts("adarank.features", features_);
    out->PutFloats("adarank.alphas", alphas_);
  }

  Status Load(const ModelReader& in) override {
    double cols = 0;
    GEOMX_RETURN_IF_ERROR(in.GetNumber("adarank.columns", &cols));
    GEOMX_RETURN_IF_ERROR(in.GetInts("adarank.features", &features_));
    GEOMX_RETURN_IF_ERROR(in.GetFloats("adarank.alphas", &alphas_, static_cast<int64_t>(features_.size())));
    if (!(cols >= 1) || cols > 1e12) return Status::DataLoss(in.source() + ": adarank.columns is not a column count");
    cols_ = static_cast<int64_t>(cols);
    for (int64_t f : features_) {
      if (f < 0 || f >= cols_) {
        return Status::DataLoss(in.source() + ": adarank.features holds feature " + std::to_string(f) +
                                " of a model with " + std::to_string(cols_) + " columns");
      }
    }
    query_qids_.clear();
    query_weights_.clear();
    return Status::Ok();
  }

  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"weak_rankers", static_cast<double>(features_.size())}};
  }

  const std::vector<int64_t>& query_qids() const { return query_qids_; }
  const std::vector<double>& query_weights() const { return query_weights_; }

 private:
  int64_t rounds_;
  RankMetric metric_;
  int k_;
  double tolerance_;
  int64_t max_selections_;
  Normalize normalize_;
  bool both_directions_;
  // The model: f(x) = sum_t alphas_[t] * x_norm[features_[t]] (a negative alpha: the weak ranker -x).
  std::vector<int64_t> features_;
  std::vector<float> alphas_;
  int64_t cols_ = -1;
  // After Fit only (the test seam): this worker's informative queries and their P after the last round.
  std::vector<int64_t> query_qids_;
  std::vector<double> query_weights_;
};

Status AdaRank::Fit(const data::Table& train, const FitContext& context) {
  GEOMX_RETURN_IF_ERROR(CheckRankingTable("adarank", train));
  Collective* coll = context.collective;
  // Queries whose rows share one relevance level score the same under every ranking: they are left out.
  std::vector<std::vector<int64_t>> queries;
  for (std::vector<int64_t>& rows : GroupByQuery(train.qids)) {
    const float first = train.targets[static_cast<size_t>(rows[0])];
    const bool levels = std::any_of(rows.begin(), rows.end(),
                                    [&](int64_t i) { return train.targets[static_cast<size_t>(i)] != first; });
    if (levels) queries.push_back(std::move(rows));
  }
  GEOMX_RETURN_IF_ERROR(
      ExchangeRankJobShape("adarank", train, static_cast<int64_t>(queries.size()),
                           "no query to learn from (no query holds two different relevance levels)", coll)
          .status());
  const int64_t d = train.cols, n = train.rows, nq = static_cast<int64_t>(queries.size());
  GEOMX_ASSIGN_OR_RETURN(const std::vector<double> x, NormalisedFeatures(train, normalize_, "the training table"));
  const int threads = std::max(1, context.threads);

  const int64_t num_candidates = both_directions_ ? 2 * d : d;
  const std::vector<double> e = CandidateMetrics(metric_, k_, queries, x, train, num_candidates, threads);
  // P starts proportional to each query's weight (the mean of its rows' weights).
  std::vector<double> query_weight(static_cast<size_t>(nq)), p(static_cast<size_t>(nq));
  for (int64_t q = 0; q < nq; ++q) {
    double s = 0;
    for (int64_t i : queries[static_cast<size_t>(q)]) s += train.weight(i);
    query_weight[static_cast<size_t>(q)] = s / static_cast<double>(queries[static_cast<size_t>(q)].size());
  }
  p = query_weight;

  const data::Table* eval = context.eval;
  std::vector<double> eval_x;
  if (eval != nullptr && eval->cols == d && eval->has_targets() && !eval->qids.empty()) {
    Result<std::vector<double>> ex = NormalisedFeatures(*eval, normalize_, "the evaluation table");
    if (ex.ok()) eval_x = std::move(*ex);
  }
  if (eval_x.empty()) eval = nullptr;
  std::vector<float> eval_scores(eval != nullptr ? static_cast<size_t>(eval->rows) : 0, 0.0f);

  features_.clear();
  alphas_.clear();
  std::vector<double> f(static_cast<size_t>(n), 0.0), next_p(static_cast<size_t>(nq));
  std::vector<float> sums(static_cast<size_t>(num_candidates) + 2);
  double previous = -std::numeric_limits<double>::infinity();
  int64_t last_feature = -1, consecutive = 0;
  const std::string metric_name = metric_ == RankMetric::kMap ? "map" : "ndcg@" + std::to_string(k_);
  for (int64_t round = 0; round < rounds_; ++round) {
    // [sum_q P(q) E(q, c) for every candidate c, sum_q P(q), interrupt flag]: P unnormalised, its normaliser summed
    // with it.
    std::vector<double> acc(static_cast<size_t>(num_candidates), 0.0);
    double p_total = 0;
    for (int64_t q = 0; q < nq; ++q) {
      const double pq = p[static_cast<size_t>(q)];
      p_total += pq;
      const double* eq = e.data() + q * num_candidates;
      for (int64_t c = 0; c < num_candidates; ++c) acc[static_cast<size_t>(c)] += pq * eq[c];
    }
    for (int64_t c = 0; c < num_candidates; ++c) {
      sums[static_cast<size_t>(c)] = static_cast<float>(acc[static_cast<size_t>(c)]);
    }
    sums[static_cast<size_t>(num_candidates)] = static_cast<float>(p_total);
    sums[static_cast<size_t>(num_candidates) + 1] = context.Interrupted() ? 1.0f : 0.0f;
    if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSum("adarank/round", sums));
    if (sums[static_cast<size_t>(num_candidates) + 1] > 0) return Status::Cancelled("adarank: interrupted");
    const double total = sums[static_cast<size_t>(num_candidates)];
    if (!(total > 0)) break;

    // The best weak ranker whose feature has not just been chosen max_selections times in a row (first of equals).
    int64_t best = -1;
    double best_sum = -1;
    for (int64_t c = 0; c < num_candidates; ++c) {
      if (c % d == last_feature && consecutive >= max_selections_) continue;
      if (sums[static_cast<size_t>(c)] > best_sum) {
        best_sum = sums[static_cast<size_t>(c)];
        best = c;
      }
    }
    if (best < 0) break;
    const double num = total + best_sum, den = std::max(total - best_sum, total * 1e-12);
    const double alpha = 0.5 * std::log(num / den);
    const int64_t feature = best % d;
    const double coef = best < d ? alpha : -alpha;
    for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] += coef * x[static_cast<size_t>(i * d + feature)];

    // E(q, f) of the new ensemble: the training metric and the next P.
    double e_sum = 0;
    // One thread below 128k rows: a parallel region per round would cost more than the sorts (rankboost.cc).
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16) reduction(+ : e_sum) if (n >= (1 << 17))
    for (int64_t q = 0; q < nq; ++q) {
      const double eq = QueryMetric(metric_, k_, queries[static_cast<size_t>(q)], f, train.targets);
      e_sum += eq;
      next_p[static_cast<size_t>(q)] = query_weight[static_cast<size_t>(q)] * std::exp(-eq);
    }
    std::vector<float> metric_sums = {static_cast<float>(e_sum), static_cast<float>(nq)};
    if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSum("adarank/metric", metric_sums));
    const double train_metric = metric_sums[1] > 0 ? metric_sums[0] / metric_sums[1] : 0.0;
    // RankLib's rule: a round that lowers the training metric by more than the tolerance is dropped, and the fit ends.
    if (train_metric < previous - tolerance_) break;
    previous = train_metric;
    features_.push_back(feature);
    alphas_.push_back(static_cast<float>(coef));
    consecutive = feature == last_feature ? consecutive + 1 : 1;
    last_feature = feature;
    p.swap(next_p);

    if (context.observer != nullptr) {
      Metrics m = {{"train_" + metric_name, train_metric}, {"alpha", alpha},
                   {"weak_rankers", static_cast<double>(features_.size())}};
      if (eval != nullptr) {
        for (int64_t i = 0; i < eval->rows; ++i) {
          const double v = eval_x[static_cast<size_t>(i * d + feature)];
          eval_scores[static_cast<size_t>(i)] += static_cast<float>(coef * v);
        }
        m.push_back({"ndcg@10", MeanNdcgAt(eval_scores, eval->targets, eval->qids, 10)});
        m.push_back({"map", MeanAveragePrecision(eval_scores, eval->targets, eval->qids)});
      }
      context.observer->OnStep(round + 1, m);
    }
  }
  if (features_.empty()) GEOMX_LOG(kWarning) << "adarank: no round was kept; every row scores 0";
  cols_ = d;
  query_qids_.clear();
  for (const auto& rows : queries) query_qids_.push_back(train.qids[static_cast<size_t>(rows[0])]);
  query_weights_ = p;
  return Status::Ok();
}

EstimatorDef MakeAdaRankDef() {
  EstimatorDef def;
  def.name = "adarank";
  def.title = "AdaRank";
  def.task = data::TableTask::kRanking;
  def.help =
      "AdaRank (Xu & Li 2007): boosting over queries with single features as weak rankers (normalised within each "
      "query, and negated too unless both_directions is false). Each round picks the feature that maximises "
      "sum_q P(q) E(q) with E = NDCG@k or AP of the query ranked by it, weighs it alpha = 0.5 ln(sum P(1+E) / "
      "sum P(1-E)), and sets P(q) proportional to exp(-E(q, f)) for the ensemble f = sum alpha h. Scores rows by f.";
  def.distributed =
      "queries stay whole on one worker; per round push sum_q P(q) E(q, h) of every candidate feature over local "
      "queries plus the local sum of P (one sum), then the local sum of E(q, f) (2 floats); every worker picks the "
      "same feature and alpha and updates its own queries' P";
  def.params = {
      IntParam("n_estimators", 500, 1, 100000, "boosting rounds: weak rankers at most (RankLib -round)"),
      ChoiceParam("metric", "ndcg", {"ndcg", "map"}, "E(q, ranking) that is boosted: NDCG@k or average precision"),
      IntParam("k", 10, 1, 1000000, "the cut-off of NDCG@k (metric ndcg)"),
      NonNegativeParam("tolerance", 0.002,
                       "stop (dropping the round) when a round lowers the mean training metric by more than this "
                       "(RankLib -tolerance)"),
      IntParam("max_selections", 1, 1, 1000000,
               "a feature chosen this many rounds in a row sits out the next round (RankLib's consecutive "
               "selection limit; 1: never the same feature twice in a row)"),
      ChoiceParam("normalize", "zscore", {"none", "zscore", "linear", "sum"},
                  "per-query feature normalisation before training and prediction (RankLib -norm): zscore, "
                  "linear = min-max, sum = x / sum |x|; none = the values as given (after data.scale)"),
      BoolParam("both_directions", true, "candidates include -x_f as well as x_f (RankLib: only x_f)"),
  };
  def.create = [](const ParamValues& p) { return std::make_unique<AdaRank>(p); };
  return def;
}

}  // namespace

Result<AdaRankQueryWeights> AdaRankQueryWeightsForTesting(const Estimator& estimator) {
  const auto* ada = dynamic_cast<const AdaRank*>(&estimator);
  if (ada == nullptr || ada->query_weights().empty()) {
    return Status::FailedPrecondition("not a fitted adarank estimator");
  }
  AdaRankQueryWeights out;
  out.qids = ada->query_qids();
  out.weights = ada->query_weights();
  double total = 0;
  for (double v : out.weights) total += v;
  for (double& v : out.weights) v /= total;
  return out;
}

GEOMX_REGISTER_ESTIMATOR(MakeAdaRankDef());

}  // namespace geomx::algorithms
