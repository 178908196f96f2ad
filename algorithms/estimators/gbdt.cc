// First-order gradient boosting (docs/algorithms.md#gbdt) on the histogram tree learner (trees/booster.h), with
// scikit-learn HistGradientBoosting's parameter names: trees are least-squares fits of the negative gradient (unit
// hessians in the split gain, so min_samples_leaf is a row count) and every leaf then takes the Newton value of its
// rows (Friedman's TreeBoost). "gbdt" classifies (log_loss: logistic for 2 classes, softmax otherwise);
// "gbdt-regressor" regresses (squared_error).
#include <memory>
#include <string>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/booster.h"
#include "algorithms/estimators/trees/learner_params.h"

namespace geomx::algorithms {
namespace {

using trees::BoosterOptions;
using trees::Objective;

class GbdtEstimator final : public trees::BoosterEstimator {
 public:
  GbdtEstimator(const ParamValues& p, bool regressor) {
    BoosterOptions o;
    o.name = regressor ? "gbdt-regressor" : "gbdt";
    o.objective = regressor ? Objective::kSquaredError : Objective::kSoftmax;
    o.second_order = false;
    o.rounds = p.Int("max_iter");
    o.eta = p.Number("learning_rate");
    const int64_t leaves = p.Int("max_leaf_nodes");
    o.grower.policy = trees::GrowPolicy::kLossguide;  // sklearn HGB and LightGBM grow best-first
    o.grower.max_leaves = static_cast<int>(leaves);
    o.grower.max_depth = static_cast<int>(p.Int("max_depth"));
    o.grower.split.min_child_weight = static_cast<double>(p.Int("min_samples_leaf"));
    o.grower.split.lambda = p.Number("l2_regularization");
    o.grower.split.gamma = 0;
    o.grower.colsample_bynode = p.Number("max_features");
    o.subsample = p.Number("subsample");
    o.max_bin = static_cast<int>(p.Int("max_bins"));
    o.base_score_auto = true;
    o.early_stopping_rounds = p.Int("n_iter_no_change");
    trees::SetTreeLearner(p, &o.grower);
    SetOptions(std::move(o));
  }

  Status Fit(const data::Table& train, const FitContext& context) override {
    BoosterOptions o = options();
    if (o.objective != Objective::kSquaredError) {
      o.objective = train.num_classes == 2 ? Objective::kLogistic : Objective::kSoftmax;
    }
    return Boost(std::move(o), train, context);
  }
};

EstimatorDef MakeGbdtDef(bool regressor) {
  EstimatorDef def;
  def.name = regressor ? "gbdt-regressor" : "gbdt";
  def.title = regressor ? "Gradient Boosting Decision Tree (regression)" : "Gradient Boosting Decision Tree";
  def.task = regressor ? data::TableTask::kRegression : data::TableTask::kClassification;
  def.help =
      "First-order gradient boosting (Friedman 2001) with histogram trees, as scikit-learn's "
      "HistGradientBoosting and LightGBM: up to 255 quantile bins per feature, trees grown best-first on the "
      "gradients with unit hessians (min_samples_leaf counts rows, l2_regularization in the gain), then each leaf "
      "takes the Newton value -sum g / (sum h + l2) of its rows (x (K-1)/K for softmax). Missing values (NaN) learn "
      "a default direction.";
  def.distributed =
      "sketch summaries gathered once, then per split the gradient histograms of the smaller child summed over the "
      "workers, and per tree the leaves' (g, h) sums; tree_learner voting sums them within each data centre and "
      "only the voted features' across the WAN";
  def.params = {
      IntParam("max_iter", 100, 1, 100000, "boosting rounds (one tree per class per round for more than 2 classes)"),
      RangeParam("learning_rate", 0.1, 0, true, 1, false, "shrinks every tree's leaf values"),
      IntParam("max_leaf_nodes", 31, 2, 1 << 20, "maximum leaves per tree"),
      IntParam("max_depth", 0, 0, 30, "maximum tree depth (0 = no limit)"),
      IntParam("min_samples_leaf", 20, 1, 1 << 30, "minimum (weighted) rows in a leaf"),
      NonNegativeParam("l2_regularization", 0, "L2 regularisation of leaf values"),
      RangeParam("max_features", 1, 0, true, 1, false, "share of features each split may use"),
      RangeParam("subsample", 1, 0, true, 1, false, "share of rows each round's trees see"),
      IntParam("max_bins", 255, 2, 255, "quantile bins per feature (plus a missing-value bin)"),
      IntParam("n_iter_no_change", 0, 0, 1000000,
               "stop when the evaluation loss has not improved for this many rounds and keep the best (0 = never)"),
      ChoiceParam("loss", regressor ? "squared_error" : "log_loss",
                  regressor ? std::vector<std::string>{"squared_error"} : std::vector<std::string>{"log_loss"},
                  "loss: log_loss (logistic for 2 classes, softmax otherwise) or squared_error"),
  };
  for (ParamSpec& spec : trees::TreeLearnerParams()) def.params.push_back(std::move(spec));
  def.create = [regressor](const ParamValues& p) -> std::unique_ptr<Estimator> {
    return std::make_unique<GbdtEstimator>(p, regressor);
  };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeGbdtDef(false));
GEOMX_REGISTER_ESTIMATOR(MakeGbdtDef(true));

}  // namespace geomx::algorithms
