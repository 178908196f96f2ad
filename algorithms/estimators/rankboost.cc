// rankboost: RankBoost (Freund, Iyer, Schapire & Singer, JMLR 2003) for graded relevance. A distribution D over the
// crucial pairs (i, j) of each query (relevance_i > relevance_j); weak rankers are thresholded single features
// h(x) = [x_f >= theta] with theta among the quantile cuts of trees/binning.h. Each round picks the (f, theta) of
// largest |r|, r = sum D(i,j) (h(x_i) - h(x_j)), through per-document potentials: pi(x) = sum of D over the pairs
// where x is the more relevant row minus the sum over those where it is the less relevant one, so r = sum_x pi(x)
// h(x), and over the thresholds of a feature r is a suffix sum of the per-bin sums of pi (one pass over the pairs
// and one over the bin matrix per round, whatever the number of thresholds). alpha = 0.5 ln((1+r)/(1-r)),
// D(i,j) <- D(i,j) exp(-alpha (h(x_i) - h(x_j))) / Z.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/dual_cd.h"
#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/rank_ensembles.h"
#include "algorithms/estimators/trees/binning.h"
#include "engine/base/logging.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

// |r| is kept below 1 so that a weak ranker that orders every remaining pair gets a large, finite alpha (about 12).
constexpr double kMaxAbsR = 1.0 - 1e-10;

// One round's unnormalised r of every candidate into (*sums)[0, candidates), through the potentials: pi(x) = the
// weight of the pairs where x is the more relevant row minus that of the pairs where it is the less relevant one,
// then per feature the sum of pi per bin and r(f, b) = the sum over the bins above b. Returns the weights' sum.
double PairRSums(const std::vector<std::pair<int64_t, int64_t>>& pairs, const std::vector<double>& w,
                 const trees::BinCuts& cuts, const trees::BinMatrix& bins, const std::vector<int64_t>& offset,
                 int threads, std::vector<double>* pi, std::vector<float>* sums) {
  std::fill(pi->begin(), pi->end(), 0.0);
  double z = 0;
  for (size_t k = 0; k < pairs.size(); ++k) {
    (*pi)[static_cast<size_t>(pairs[k].first)] += w[k];
    (*pi)[static_cast<size_t>(pairs[k].second)] -= w[k];
    z += w[k];
  }
  const int64_t n = bins.rows;
  // A parallel region per round costs more than it saves on small tables (a few ms when the machine is busy and a
  // thread waits for a core): below about 4M bin reads the round stays on one thread.
  const bool parallel = n * bins.features >= (int64_t{1} << 22);
#pragma omp parallel num_threads(threads) if (parallel)
  {
    std::vector<double> hist;
#pragma omp for schedule(dynamic, 4)
    for (int64_t f = 0; f < bins.features; ++f) {
      const int value_bins = cuts.ValueBins(f);
      hist.assign(static_cast<size_t>(value_bins), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        const int b = bins.Row(i)[f];
        if (b < value_bins) hist[static_cast<size_t>(b)] += (*pi)[static_cast<size_t>(i)];
      }
      double acc = 0;  // r of "bin > b - 1" = sum of the bins from b up
      for (int b = value_bins - 1; b >= 1; --b) {
        acc += hist[static_cast<size_t>(b)];
        (*sums)[static_cast<size_t>(offset[static_cast<size_t>(f)] + b - 1)] = static_cast<float>(acc);
      }
    }
  }
  return z;
}

class RankBoost final : public Estimator {
 public:
  explicit RankBoost(const ParamValues& p)
      : rounds_(p.Int("n_estimators")),
        max_bin_(static_cast<int>(p.Int("max_bin"))),
        tolerance_(p.Number("tolerance")),
        max_pairs_per_query_(p.Int("max_pairs_per_query")) {}

  Status Fit(const data::Table& train, const FitContext& context) override;

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    if (cols_ < 0) return Status::FailedPrecondition("rankboost: the model is not fitted");
    if (input.cols != cols_) {
      return Status::InvalidArgument("rankboost: the input has " + std::to_string(input.cols) +
                                     " feature columns, the model was trained on " + std::to_string(cols_));
    }
    Prediction out;
    out.value = Scores(input, threads);
    return out;
  }

  void Save(ModelWriter* out) const override {
    out->PutNumber("rankboost.columns", static_cast<double>(cols_));
    out->PutInts("rankboost.features", features_);
    out->PutFloats("rankboost.thresholds", thresholds_);
    out->PutFloats("rankboost.alphas", alphas_);
    out->PutNumber("rankboost.pairs", static_cast<double>(num_pairs_));
  }

  Status Load(const ModelReader& in) override {
    double cols = 0, pairs = 0;
    GEOMX_RETURN_IF_ERROR(in.GetNumber("rankboost.columns", &cols));
    GEOMX_RETURN_IF_ERROR(in.GetInts("rankboost.features", &features_));
    const auto n = static_cast<int64_t>(features_.size());
    GEOMX_RETURN_IF_ERROR(in.GetFloats("rankboost.thresholds", &thresholds_, n));
    GEOMX_RETURN_IF_ERROR(in.GetFloats("rankboost.alphas", &alphas_, n));
    if (in.Has("rankboost.pairs")) GEOMX_RETURN_IF_ERROR(in.GetNumber("rankboost.pairs", &pairs));
    if (!(cols >= 1) || cols > 1e12) return Status::DataLoss(in.source() + ": rankboost.columns is not a column count");
    cols_ = static_cast<int64_t>(cols);
    for (int64_t f : features_) {
      if (f < 0 || f >= cols_) {
        return Status::DataLoss(in.source() + ": rankboost.features holds feature " + std::to_string(f) +
                                " of a model with " + std::to_string(cols_) + " columns");
      }
    }
    num_pairs_ = static_cast<int64_t>(pairs);
    pairs_.clear();
    pair_weights_.clear();
    return Status::Ok();
  }

  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"weak_rankers", static_cast<double>(features_.size())},
            {"training_pairs", static_cast<double>(num_pairs_)}};
  }

  const std::vector<std::pair<int64_t, int64_t>>& pairs() const { return pairs_; }
  const std::vector<double>& pair_weights() const { return pair_weights_; }

 private:
  // sum_t alpha_t [x_{f_t} >= theta_t] for every row of `input` (NaN compares false: h = 0).
  std::vector<float> Scores(const data::Table& input, int threads) const {
    std::vector<float> out(static_cast<size_t>(input.rows));
#pragma omp parallel num_threads(std::max(1, threads))
    {
      std::vector<float> row(static_cast<size_t>(input.cols));
#pragma omp for schedule(static)
      for (int64_t i = 0; i < input.rows; ++i) {
        const float* x = input.sparse ? row.data() : input.Row(i);
        if (input.sparse) input.CopyRow(i, row.data());
        double s = 0;
        for (size_t t = 0; t < features_.size(); ++t) {
          if (x[features_[t]] >= thresholds_[t]) s += alphas_[t];
        }
        out[static_cast<size_t>(i)] = static_cast<float>(s);
      }
    }
    return out;
  }

  int64_t rounds_;
  int max_bin_;
  double tolerance_;
  int64_t max_pairs_per_query_;
  // The model: weak ranker t is alphas_[t] * [x[features_[t]] >= thresholds_[t]].
  std::vector<int64_t> features_;
  std::vector<float> thresholds_;
  std::vector<float> alphas_;
  int64_t cols_ = -1;
  int64_t num_pairs_ = 0;  // crucial pairs of the whole job
  // After Fit only (the test seam): this worker's pairs and their unnormalised distribution.
  std::vector<std::pair<int64_t, int64_t>> pairs_;
  std::vector<double> pair_weights_;
};

Status RankBoost::Fit(const data::Table& train, const FitContext& context) {
  GEOMX_RETURN_IF_ERROR(CheckRankingTable("rankboost", train));
  Collective* coll = context.collective;
  const int rank = coll != nullptr ? coll->rank() : 0;
  std::vector<std::pair<int64_t, int64_t>> pairs =
      RankingPairs(train, max_pairs_per_query_, Rng(context.seed).Fork(2000 + static_cast<uint64_t>(rank)).NextU64());
  GEOMX_ASSIGN_OR_RETURN(
      RankJobShape shape,
      ExchangeRankJobShape("rankboost", train, static_cast<int64_t>(pairs.size()),
                           "no pair to learn from (no query holds two different relevance levels)", coll));

  // The candidate thresholds: the same cuts on every worker (the sketches are gathered and merged).
  trees::SketchOptions sketch;
  sketch.max_bin = max_bin_;
  GEOMX_ASSIGN_OR_RETURN(trees::BinCuts cuts, trees::ComputeCuts(train, {}, sketch, coll, context.threads));
  const trees::BinMatrix bins = trees::BinTable(train, cuts, context.threads);
  const int64_t d = train.cols, n = train.rows;
  // Candidate c = offset[f] + b (b < ValueBins(f) - 1) is h(x) = [x_f >= Threshold(f, b)], that is bin_f(x) > b
  // (and not the missing slot: NaN gives h = 0).
  std::vector<int64_t> offset(static_cast<size_t>(d) + 1, 0);
  for (int64_t f = 0; f < d; ++f) {
    offset[static_cast<size_t>(f) + 1] = offset[static_cast<size_t>(f)] + cuts.ValueBins(f) - 1;
  }
  const int64_t candidates = offset[static_cast<size_t>(d)];

  // D starts uniform over the job's pairs (a pair weighs the mean weight of its two rows).
  std::vector<double> w(pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) w[k] = 0.5 * (train.weight(pairs[k].first) + train.weight(pairs[k].second));

  const data::Table* eval = context.eval;
  if (eval != nullptr && (eval->cols != d || !eval->has_targets() || eval->qids.empty())) eval = nullptr;
  std::vector<float> eval_scores(eval != nullptr ? static_cast<size_t>(eval->rows) : 0, 0.0f);

  features_.clear();
  thresholds_.clear();
  alphas_.clear();
  std::vector<double> pi(static_cast<size_t>(n));
  // [r sums of every candidate (unnormalised), Z = sum of D, interrupt flag]
  std::vector<float> sums(static_cast<size_t>(candidates) + 2);
  const int threads = std::max(1, context.threads);
  for (int64_t round = 0; round < rounds_; ++round) {
    const double z = PairRSums(pairs, w, cuts, bins, offset, threads, &pi, &sums);
    sums[static_cast<size_t>(candidates)] = static_cast<float>(z);
    sums[static_cast<size_t>(candidates) + 1] = context.Interrupted() ? 1.0f : 0.0f;
    if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSum("rankboost/round", sums));
    if (sums[static_cast<size_t>(candidates) + 1] > 0) return Status::Cancelled("rankboost: interrupted");
    const double total = sums[static_cast<size_t>(candidates)];
    if (!(total > 0)) break;  // every pair's weight underflowed: nothing left to order

    // The weak ranker of largest |r| (the first of equals, so every worker picks the same one).
    int64_t best = -1;
    double best_abs = -1;
    for (int64_t c = 0; c < candidates; ++c) {
      const double a = std::fabs(static_cast<double>(sums[static_cast<size_t>(c)]) / total);
      if (a > best_abs) {
        best_abs = a;
        best = c;
      }
    }
    if (best < 0 || best_abs <= tolerance_) break;
    const int64_t f = std::upper_bound(offset.begin(), offset.end(), best) - offset.begin() - 1;
    const int b = static_cast<int>(best - offset[static_cast<size_t>(f)]);
    const double r = std::clamp(static_cast<double>(sums[static_cast<size_t>(best)]) / total, -kMaxAbsR, kMaxAbsR);
    const double alpha = 0.5 * std::log((1 + r) / (1 - r));
    const float theta = cuts.Threshold(f, b);
    features_.push_back(f);
    thresholds_.push_back(theta);
    alphas_.push_back(static_cast<float>(alpha));

    // D(i,j) <- D(i,j) exp(-alpha (h_i - h_j)) / Z, with the job's Z.
    const int missing = cuts.MissingBin(f);
    auto h = [&](int64_t i) {
      const int bin = bins.Row(i)[f];
      return bin > b && bin != missing ? 1 : 0;
    };
    const double factor[3] = {std::exp(alpha) / total, 1.0 / total, std::exp(-alpha) / total};  // h_i - h_j + 1
    for (size_t k = 0; k < pairs.size(); ++k) w[k] *= factor[h(pairs[k].first) - h(pairs[k].second) + 1];

    if (context.observer != nullptr) {
      Metrics m = {{"r", r}, {"alpha", alpha}, {"weak_rankers", static_cast<double>(features_.size())}};
      if (eval != nullptr) {
        if (eval->sparse) {
          eval_scores = Scores(*eval, context.threads);
        } else {
          for (int64_t i = 0; i < eval->rows; ++i) {
            if (eval->Row(i)[f] >= theta) eval_scores[static_cast<size_t>(i)] += alphas_.back();
          }
        }
        m.push_back({"ndcg@10", MeanNdcgAt(eval_scores, eval->targets, eval->qids, 10)});
        m.push_back({"map", MeanAveragePrecision(eval_scores, eval->targets, eval->qids)});
      }
      context.observer->OnStep(round + 1, m);
    }
  }
  if (features_.empty()) {
    GEOMX_LOG(kWarning) << "rankboost: no weak ranker beat |r| = " << tolerance_ << "; every row scores 0";
  }
  cols_ = d;
  num_pairs_ = shape.units;
  pairs_ = std::move(pairs);
  pair_weights_ = std::move(w);
  return Status::Ok();
}

EstimatorDef MakeRankBoostDef() {
  EstimatorDef def;
  def.name = "rankboost";
  def.title = "RankBoost";
  def.task = data::TableTask::kRanking;
  def.help =
      "RankBoost (Freund et al. 2003) for graded relevance: a distribution over the crucial pairs of each query "
      "(relevance_i > relevance_j, uniform at first); each round adds the thresholded feature h(x) = [x_f >= theta] "
      "(theta among max_bin quantile cuts per feature) that maximises |r| = |sum D(i,j) (h(x_i) - h(x_j))|, found "
      "through per-row potentials, with weight alpha = 0.5 ln((1+r)/(1-r)), and reweights the pairs by "
      "exp(-alpha (h(x_i) - h(x_j))). Scores rows by sum alpha h(x).";
  def.distributed =
      "queries stay whole on one worker; quantile sketches gathered once; per round push the r sums of every "
      "(feature, threshold) over local pairs plus the local normaliser Z (one sum), every worker picks the same "
      "weak ranker and reweights its own pairs";
  def.params = {
      IntParam("n_estimators", 300, 1, 100000, "boosting rounds: weak rankers at most (RankLib -round)"),
      IntParam("max_bin", 256, 2, 256,
               "quantile bins per feature (at most 255): the candidate thresholds are the cuts between them "
               "(RankLib -tc)"),
      NonNegativeParam("tolerance", 0.0,
                       "stop when the best weak ranker's |r| is at most this (0: run every round while any r != 0)"),
      IntParam("max_pairs_per_query", 0, 0, int64_t{1} << 40,
               "at most this many crucial pairs per query, sampled uniformly (0 = every pair)"),
  };
  def.create = [](const ParamValues& p) { return std::make_unique<RankBoost>(p); };
  return def;
}

}  // namespace

Result<RankBoostPairWeights> RankBoostPairWeightsForTesting(const Estimator& estimator) {
  const auto* boost = dynamic_cast<const RankBoost*>(&estimator);
  if (boost == nullptr || boost->pairs().size() != boost->pair_weights().size() || boost->pairs().empty()) {
    return Status::FailedPrecondition("not a fitted rankboost estimator");
  }
  RankBoostPairWeights out;
  out.pairs = boost->pairs();
  out.weights = boost->pair_weights();
  double total = 0;
  for (double v : out.weights) total += v;
  for (double& v : out.weights) v /= total;
  return out;
}

GEOMX_REGISTER_ESTIMATOR(MakeRankBoostDef());

}  // namespace geomx::algorithms
