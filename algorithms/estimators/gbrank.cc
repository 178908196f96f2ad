// GBrank (docs/algorithms.md#gbrank; Zheng, Chen, Sun, Zha, "A Regression Framework for Learning Ranking Functions
// Using Relative Relevance Judgments", SIGIR 2007) on the histogram tree learner (trees/grower.h).
//
// Round k = 1, 2, ... with the current scores h = h_{k-1} (h_0 = 0): every pair (i, j) of one query with
// rel_i > rel_j that h violates by the margin tau (h(x_i) < h(x_j) + tau) gives the regression targets
// h(x_j) + tau to row i and h(x_i) - tau to row j; a regression tree g_k is fit by least squares to those
// (row, target) examples only (a row in several pairs counts once per pair: gradient sum -sum t, hessian the number
// of its targets, times the pair's weight), and h_k = (k h_{k-1} + shrinkage g_k) / (k + 1). With
// trees_per_round T > 1, g_k is itself a small least-squares boosted model of T trees on those examples, each fit
// to the residual targets of the ones before (the paper fits g_k with GBT); T = 1 is one tree per round. Unrolled,
// h_K = shrinkage (g_1 + ... + g_K) / (K + 1): the trees are kept with leaf values shrinkage x g_k and the ensemble
// is scaled by 1 / (K + 1) when the fit ends. The fit stops early when no pair of the job is violated.
//
// Distributed: queries stay whole on one worker, so each worker builds its pair targets alone; the trees come from
// the grower's summed histograms and the stopping decision from a summed violation count, so every worker builds
// the same ensemble.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/grower.h"
#include "algorithms/estimators/trees/rank_objective.h"
#include "algorithms/estimators/trees/tree.h"

namespace geomx::algorithms {
namespace {

using trees::Ensemble;
using trees::GradPair;
using trees::QueryGroups;

uint64_t RoundSeed(uint64_t seed, int64_t round) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(round + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class GbRank final : public Estimator {
 public:
  explicit GbRank(const ParamValues& p)
      : rounds_(p.Int("n_estimators")), tau_(p.Number("tau")), shrinkage_(p.Number("shrinkage")),
        max_bin_(static_cast<int>(p.Int("max_bin"))), trees_per_round_(p.Int("trees_per_round")) {
    grower_.max_depth = static_cast<int>(p.Int("max_depth"));
    grower_.split.min_child_weight = p.Number("min_child_weight");
    grower_.split.lambda = 0;  // least squares: a leaf takes the mean of its targets
    grower_.split.gamma = 0;
  }

  Status Fit(const data::Table& train, const FitContext& context) override {
    Collective* coll = context.collective != nullptr && context.collective->world() > 1 ? context.collective : nullptr;
    const int threads = std::max(1, context.threads);
    GEOMX_RETURN_IF_ERROR(Check(train, coll));
    ensemble_ = Ensemble{};
    ensemble_.features = train.cols;
    ensemble_.base_margin = {0.0f};
    violations_ = 0;

    trees::SketchOptions sketch;
    sketch.max_bin = max_bin_;
    GEOMX_ASSIGN_OR_RETURN(const trees::BinCuts cuts, trees::ComputeCuts(train, {}, sketch, coll, threads));
    const trees::BinMatrix bins = trees::BinTable(train, cuts, threads);
    trees::TreeGrower grower(&bins, &cuts, grower_, coll, threads);
    const QueryGroups queries = trees::GroupQueries(train.qids);
    const data::Table* eval = context.eval;
    if (eval != nullptr && (eval->rows == 0 || eval->cols != train.cols ||
                            static_cast<int64_t>(eval->targets.size()) != eval->rows ||
                            static_cast<int64_t>(eval->qids.size()) != eval->rows)) {
      eval = nullptr;
    }
    std::vector<float> eval_margins;
    if (eval != nullptr) eval_margins = ensemble_.PredictMargins(*eval, threads);

    const int64_t n = train.rows;
    std::vector<float> margins(static_cast<size_t>(n), 0.0f);  // shrinkage x (g_1 + ... + g_k)
    std::vector<GradPair> gpair(static_cast<size_t>(n));
    std::vector<double> target_sum(static_cast<size_t>(n)), target_weight(static_cast<size_t>(n));
    std::vector<double> fit(static_cast<size_t>(n));  // g_k so far on the training rows
    std::vector<int32_t> leaf_of_row;
    int64_t rounds_done = 0;
    for (int64_t round = 0; round < rounds_; ++round) {
      // h_{k-1} = margins / k with k = round + 1 (h_0 = 0).
      const double scale = 1.0 / static_cast<double>(round + 1);
      double violated = 0;
      std::fill(target_sum.begin(), target_sum.end(), 0.0);
      std::fill(target_weight.begin(), target_weight.end(), 0.0);
      for (int64_t q = 0; q < queries.size(); ++q) {
        for (int64_t x = queries.ptr[static_cast<size_t>(q)]; x < queries.ptr[static_cast<size_t>(q) + 1]; ++x) {
          const int64_t a = queries.rows[static_cast<size_t>(x)];
          for (int64_t z = x + 1; z < queries.ptr[static_cast<size_t>(q) + 1]; ++z) {
            const int64_t b = queries.rows[static_cast<size_t>(z)];
            const float ya = train.targets[static_cast<size_t>(a)], yb = train.targets[static_cast<size_t>(b)];
            if (ya == yb) continue;
            const size_t i = static_cast<size_t>(ya > yb ? a : b), j = static_cast<size_t>(ya > yb ? b : a);
            const double hi = scale * margins[i], hj = scale * margins[j];
            if (hi >= hj + tau_) continue;
            const double w = 0.5 * (train.weight(static_cast<int64_t>(i)) + train.weight(static_cast<int64_t>(j)));
            target_sum[i] += w * (hj + tau_);
            target_weight[i] += w;
            target_sum[j] += w * (hi - tau_);
            target_weight[j] += w;
            violated += 1;
          }
        }
      }
      // [violated pairs, interrupted, eval NDCG@10, eval weight], summed over the workers.
      std::vector<float> sums = {static_cast<float>(violated), context.Interrupted() ? 1.0f : 0.0f, 0.0f, 0.0f};
      if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSum("gbrank.round", sums));
      if (sums[1] > 0) return Status::Cancelled("gbrank: interrupted");
      violations_ = static_cast<int64_t>(sums[0]);
      if (sums[0] == 0) break;  // every pair of the job is ordered by tau: nothing left to fit
      ++rounds_done;
      std::fill(fit.begin(), fit.end(), 0.0);
      for (int64_t t = 0; t < trees_per_round_; ++t) {
        // Squared error of g's fit against each of a row's targets: g = sum (fit - target), h = their count, both
        // times the pair's weight (rows of no violated pair: (0, 0), left out).
        for (size_t i = 0; i < gpair.size(); ++i) {
          gpair[i] = GradPair{static_cast<float>(target_weight[i] * fit[i] - target_sum[i]),
                              static_cast<float>(target_weight[i])};
        }
        trees::Tree tree;
        GEOMX_RETURN_IF_ERROR(
            grower.Grow(gpair, RoundSeed(context.seed, round * trees_per_round_ + t), &tree, &leaf_of_row));
        for (int64_t i = 0; i < n; ++i) {
          const float v = tree.nodes[static_cast<size_t>(leaf_of_row[static_cast<size_t>(i)])].value;
          fit[static_cast<size_t>(i)] += v;
          margins[static_cast<size_t>(i)] += static_cast<float>(v * shrinkage_);
        }
        for (trees::TreeNode& node : tree.nodes) node.value = static_cast<float>(node.value * shrinkage_);
        if (eval != nullptr) ensemble_.AddTree(*eval, tree, threads, &eval_margins);
        ensemble_.trees.push_back(std::move(tree));
      }
      if (context.observer != nullptr) {
        Metrics m = {{"violated_pairs", static_cast<double>(violations_)},
                     {"trees", static_cast<double>(ensemble_.trees.size())}};
        if (eval != nullptr) m.push_back({"ndcg@10", MeanNdcgAt(eval_margins, eval->targets, eval->qids, 10)});
        context.observer->OnStep(round + 1, m);
      }
    }
    // h_K = shrinkage (g_1 + ... + g_K) / (K + 1), K the rounds that grew trees.
    const double final_scale = 1.0 / static_cast<double>(rounds_done + 1);
    for (trees::Tree& t : ensemble_.trees) {
      for (trees::TreeNode& node : t.nodes) node.value = static_cast<float>(node.value * final_scale);
    }
    return Status::Ok();
  }

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    if (ensemble_.features == 0) return Status::FailedPrecondition("gbrank: the model is neither fitted nor loaded");
    if (input.cols != ensemble_.features) {
      return Status::InvalidArgument("gbrank: the input has " + std::to_string(input.cols) +
                                     " columns, the model was trained on " + std::to_string(ensemble_.features));
    }
    Prediction out;
    out.value = ensemble_.PredictMargins(input, threads);
    return out;
  }

  void Save(ModelWriter* out) const override {
    out->PutInts("gbrank.state", std::vector<int64_t>{static_cast<int64_t>(ensemble_.trees.size()), violations_});
    ensemble_.Save("gbrank", out);
  }

  Status Load(const ModelReader& in) override {
    std::vector<int64_t> state;
    GEOMX_RETURN_IF_ERROR(in.GetInts("gbrank.state", &state, 2));
    Ensemble e;
    GEOMX_RETURN_IF_ERROR(e.Load("gbrank", in));
    if (e.groups != 1 || state[0] != static_cast<int64_t>(e.trees.size())) {
      return Status::DataLoss(in.source() + ": section 'gbrank.state' does not match the trees");
    }
    violations_ = state[1];
    ensemble_ = std::move(e);
    return Status::Ok();
  }

  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"trees", static_cast<double>(ensemble_.trees.size())},
            {"violated_pairs", static_cast<double>(violations_)}};
  }

 private:
  // The table's checks on every worker, then the verdicts and shapes shared so that all fail or go on together.
  Status Check(const data::Table& train, Collective* coll) const {
    Status local;
    if (train.rows > 0 && train.cols < 1) local = Status::InvalidArgument("gbrank: the training table has no features");
    if (local.ok()) local = trees::CheckRankingTable("gbrank", train, trees::RankLoss::kPairwise);
    for (size_t i = 0; i < train.weights.size() && local.ok(); ++i) {
      if (!(train.weights[i] >= 0) || !std::isfinite(train.weights[i])) {
        local = Status::InvalidArgument("gbrank: row " + std::to_string(i) + " has a negative, NaN or infinite weight");
      }
    }
    if (local.ok() && !train.weights.empty() && static_cast<int64_t>(train.weights.size()) != train.rows) {
      local = Status::InvalidArgument("gbrank: the training table has " + std::to_string(train.weights.size()) +
                                      " weights for " + std::to_string(train.rows) + " rows");
    }
    const std::vector<float> mine = {local.ok() ? 1.0f : 0.0f, static_cast<float>(train.cols),
                                     static_cast<float>(train.rows)};
    std::vector<float> all = mine;
    if (coll != nullptr) {
      GEOMX_ASSIGN_OR_RETURN(all, coll->AllGather("gbrank.check", mine));
      if (all.size() != mine.size() * static_cast<size_t>(coll->world())) {
        return Status::Internal("gbrank: shape exchange returned " + std::to_string(all.size()) + " values");
      }
    }
    GEOMX_RETURN_IF_ERROR(local);
    double rows = 0;
    for (size_t r = 0; r < all.size(); r += mine.size()) {
      if (all[r] == 0.0f) {
        return Status::FailedPrecondition("gbrank: worker " + std::to_string(r / mine.size()) +
                                          " rejected its shard");
      }
      if (all[r + 1] != all[1]) return Status::InvalidArgument("gbrank: the workers' shards disagree on the columns");
      rows += all[r + 2];
    }
    if (rows == 0) return Status::InvalidArgument("gbrank: the training table is empty");
    if (coll != nullptr) GEOMX_RETURN_IF_ERROR(trees::CheckWholeQueries("gbrank", train, coll));
    return Status::Ok();
  }

  int64_t rounds_;
  double tau_;
  double shrinkage_;
  int max_bin_;
  int64_t trees_per_round_;
  trees::GrowerOptions grower_;
  Ensemble ensemble_;
  int64_t violations_ = 0;  // violated pairs at the start of the last round
};

EstimatorDef MakeGbRankDef() {
  EstimatorDef def;
  def.name = "gbrank";
  def.title = "GBrank";
  def.task = data::TableTask::kRanking;
  def.help =
      "GBrank (Zheng et al. 2007): functional gradient boosting on pairwise preferences. Each round, every pair of "
      "rows of one query (qid) with rel_i > rel_j whose current scores violate h(x_i) >= h(x_j) + tau sets the "
      "regression targets h(x_j) + tau for row i and h(x_i) - tau for row j; a least-squares regression tree g "
      "(histogram tree learner, up to 255 quantile bins per feature; trees_per_round > 1: a small least-squares "
      "boosted model, as the paper's GBT) is fit to those targets, and "
      "h <- (k h + shrinkage g) / (k + 1) at round k. Stops early when no pair is violated. Scores rows.";
  def.distributed =
      "queries stay whole on one worker, so the pair targets are built locally; sketch summaries gathered once, then "
      "per tree level the squared-error gradient/count histograms summed over the workers, and per round the "
      "violated-pair count";
  def.params = {
      IntParam("n_estimators", 100, 1, 100000, "boosting rounds (one tree each)"),
      PositiveParam("tau", 0.1, "the margin a more relevant row's score must exceed a less relevant one's by"),
      RangeParam("shrinkage", 1, 0, true, 1, false, "eta of h <- (k h + eta g) / (k + 1)"),
      IntParam("max_depth", 6, 1, 30, "maximum tree depth"),
      IntParam("trees_per_round", 1, 1, 10000,
               "trees of g per round: g is a least-squares boosted fit of the round's targets (1: one tree)"),
      NonNegativeParam("min_child_weight", 1, "minimum (weighted) number of pair targets in a leaf"),
      IntParam("max_bin", 256, 2, 256, "quantile bins per feature (at most 255 value bins plus a missing-value bin)"),
  };
  def.create = [](const ParamValues& p) -> std::unique_ptr<Estimator> { return std::make_unique<GbRank>(p); };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeGbRankDef());

}  // namespace geomx::algorithms
