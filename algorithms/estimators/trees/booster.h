// Gradient boosting over the histogram tree learner, shared by the "xgboost" and "gbdt" estimators (and the
// regressors registered beside them): the objectives, the boosting loop with row subsampling and early stopping,
// prediction and the model file.
//
// Each round computes every row's gradient and hessian under the current margins, grows one tree per group (one
// group per class for softmax, else one) and adds eta x its leaf values to the margins.
//  - Second-order (XGBoost): trees are grown on (g, h); leaves take LeafWeight(G, H) (split.h).
//  - First-order (GBDT, Friedman's TreeBoost as scikit-learn's GradientBoosting and LightGBM's gbdt with unit
//    hessians): trees are grown on (g, w) - least-squares fits of the negative gradient, w the row weight - and then
//    every leaf takes the Newton value -sum g / (sum h + lambda) of its rows with the true hessians (times (K-1)/K
//    for K-class softmax, as Friedman 2001), clamped to +-max_delta_step when that is set.
// Softmax hessians are 2 p (1 - p) for second-order boosting, XGBoost's choice: it halves the Newton step, which
// keeps multiclass boosting from oscillating at eta 0.3; first-order uses p (1 - p) with the (K-1)/K factor.
//
// Ranking (rank:pairwise, rank:ndcg; rank_objective.h): the gradients are computed per query - RankNet over every
// pair with different relevance, or LambdaRank's RankNet x |delta NDCG@k| - with hessians 2 p (1 - p) (x |delta
// NDCG|) as XGBoost's; the base margin is 0, the training loss reported is the pairwise logistic loss (mean over
// the pairs) with the training NDCG@10 beside it, and the evaluation score (progress, early stopping) is the eval
// table's NDCG@10 (higher is better). The table needs qids and finite relevance targets (kInvalidArgument).
//
// Distributed: the cuts come from the merged sketches, the trees from the grower's summed histograms (grower.h),
// first-order leaf values from one summed vector per tree, training loss and early-stopping scores from summed
// (loss, weight) pairs; every worker ends with the same ensemble. Ranking gradients are local to a query, so each
// worker must hold whole queries: Fit checks that (CheckWholeQueries) and returns kInvalidArgument otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/grower.h"
#include "algorithms/estimators/trees/tree.h"

namespace geomx::algorithms::trees {

enum class Objective : uint8_t {
  kSquaredError,  // regression: margin = prediction
  kLogistic,      // binary classification: p = sigmoid(margin)
  kSoftmax,       // K-class classification: p = softmax(margins)
  kRankPairwise,  // ranking: RankNet gradients over every pair of a query with different relevance (rank:pairwise)
  kRankNdcg,      // ranking: LambdaRank gradients, RankNet x |delta NDCG@k| (rank:ndcg, LambdaMART)
};

bool IsRankingObjective(Objective objective);

struct BoosterOptions {
  std::string name = "xgboost";  // error prefix and model-file prefix
  Objective objective = Objective::kLogistic;
  bool second_order = true;  // false: first-order trees with Newton leaves (above)
  int64_t rounds = 100;
  double eta = 0.3;
  GrowerOptions grower;
  int max_bin = 256;
  double subsample = 1;               // share of rows (Bernoulli per row and round) each round's trees see
  bool base_score_auto = true;        // base margin from the data (mean target, log-odds, log class priors)
  double base_score = 0.5;            // else: XGBoost's base_score (a probability for logistic, a margin otherwise)
  int64_t early_stopping_rounds = 0;  // stop when the eval loss has not improved for this many rounds (0 = never)
  int ndcg_truncation = 0;            // rank:ndcg: the k of NDCG@k in the lambdas (0 = the whole query)
};

// The loss a row adds: squared error / 2, binary or multiclass log loss (numerically safe); 0 for ranking, whose loss
// is over pairs (rank_objective.h).
double RowLoss(Objective objective, const float* margin, int groups, float label);

class Booster {
 public:
  explicit Booster(BoosterOptions options) : o_(std::move(options)) {}
  // Checks the table (kInvalidArgument naming the problem: labels, targets, weights, classes, columns; for ranking
  // qids and relevance, and whole queries per worker), then boosts. `eval`, when set, is scored each round
  // (reported, and used for early stopping).
  Status Fit(const data::Table& train, const FitContext& context);
  // rows x groups margins; kInvalidArgument for a column-count mismatch; kFailedPrecondition before Fit/Load.
  Result<std::vector<float>> Margins(const data::Table& input, int threads) const;
  // The prediction from margins: class (argmax / p >= 0.5) and probabilities, the regression value or the ranking
  // score.
  Result<Prediction> Predict(const data::Table& input, int threads) const;
  void Save(ModelWriter* out) const;
  Status Load(const ModelReader& in);

  const Ensemble& ensemble() const { return ensemble_; }
  int64_t best_round() const { return best_round_; }
  // Floats summed across workers by the last Fit (histograms, counts, leaf values, losses).
  int64_t summed_floats() const { return summed_floats_; }

 private:
  Status Check(const data::Table& train, Collective* collective, int* classes) const;
  Status BaseMargins(const data::Table& train, Collective* collective, int classes);

  BoosterOptions o_;
  Ensemble ensemble_;
  int64_t best_round_ = -1;
  int64_t summed_floats_ = 0;
};

// An Estimator over a Booster (xgboost.cc, gbdt.cc): prediction, the model file and the "trees" metric. A subclass
// fills options() from its parameters and fits with Boost(), after settling what depends on the table.
class BoosterEstimator : public Estimator {
 public:
  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    return booster_->Predict(input, threads);
  }
  void Save(ModelWriter* out) const override { booster_->Save(out); }
  Status Load(const ModelReader& in) override { return booster_->Load(in); }
  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"trees", static_cast<double>(booster_->ensemble().trees.size())}};
  }
  // trees.json (the "geomx-trees" dump) and importance.csv (tree.h).
  std::vector<Artefact> Artefacts() const override {
    return {{"trees.json", booster_->ensemble().DumpJson()}, {"importance.csv", booster_->ensemble().ImportanceCsv()}};
  }

 protected:
  // Sets the options (and a booster with them, for Load before any Fit).
  void SetOptions(BoosterOptions options) {
    options_ = std::move(options);
    booster_ = std::make_unique<Booster>(options_);
  }
  const BoosterOptions& options() const { return options_; }
  // Fits a fresh booster with `options` (the stored ones with the table-dependent choices made).
  Status Boost(BoosterOptions options, const data::Table& train, const FitContext& context) {
    booster_ = std::make_unique<Booster>(std::move(options));
    return booster_->Fit(train, context);
  }

 private:
  BoosterOptions options_;
  std::unique_ptr<Booster> booster_;
};

}  // namespace geomx::algorithms::trees
