// XGBoost-style second-order gradient boosting (docs/algorithms.md#xgboost) on the histogram tree learner
// (trees/booster.h): XGBoost's parameter names and meanings, objectives binary:logistic and multi:softprob
// ("xgboost", a classifier) and reg:squarederror ("xgboost-regressor").
#include <memory>
#include <string>
#include <utility>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/booster.h"

namespace geomx::algorithms {
namespace {

using trees::BoosterOptions;
using trees::Objective;

class XgbEstimator final : public trees::BoosterEstimator {
 public:
  XgbEstimator(const ParamValues& p, bool regressor) : objective_(p.Choice("objective")) {
    BoosterOptions o;
    o.name = regressor ? "xgboost-regressor" : "xgboost";
    o.objective = regressor ? Objective::kSquaredError : Objective::kSoftmax;
    o.second_order = true;
    o.rounds = p.Int("n_estimators");
    o.eta = p.Number("eta");
    o.grower.max_depth = static_cast<int>(p.Int("max_depth"));
    o.grower.max_leaves = static_cast<int>(p.Int("max_leaves"));
    o.grower.policy =
        p.Choice("grow_policy") == "lossguide" ? trees::GrowPolicy::kLossguide : trees::GrowPolicy::kDepthwise;
    o.grower.split.min_child_weight = p.Number("min_child_weight");
    o.grower.split.gamma = p.Number("gamma");
    o.grower.split.lambda = p.Number("lambda");
    o.grower.split.alpha = p.Number("alpha");
    o.grower.split.max_delta_step = p.Number("max_delta_step");
    o.grower.colsample_bytree = p.Number("colsample_bytree");
    o.grower.colsample_bylevel = p.Number("colsample_bylevel");
    o.grower.colsample_bynode = p.Number("colsample_bynode");
    o.subsample = p.Number("subsample");
    o.max_bin = static_cast<int>(p.Int("max_bin"));
    o.base_score_auto = p.IsWord("base_score");
    if (!o.base_score_auto) o.base_score = p.Number("base_score");
    o.early_stopping_rounds = p.Int("early_stopping_rounds");
    SetOptions(std::move(o));
  }

  Status Fit(const data::Table& train, const FitContext& context) override {
    BoosterOptions o = options();
    if (o.grower.max_depth == 0 && (o.grower.policy != trees::GrowPolicy::kLossguide || o.grower.max_leaves == 0)) {
      return Status::InvalidArgument(o.name +
                                     ": max_depth 0 (no limit) needs grow_policy lossguide and max_leaves > 0");
    }
    if (o.objective != Objective::kSquaredError) {
      const bool binary = objective_ == "binary:logistic" || (objective_ == "auto" && train.num_classes == 2);
      o.objective = binary ? Objective::kLogistic : Objective::kSoftmax;
    }
    return Boost(std::move(o), train, context);
  }

 private:
  std::string objective_;
};

std::vector<ParamSpec> XgbParams(bool regressor) {
  ParamSpec base = NumberParam("base_score", 0.5,
                               "initial prediction: a probability for binary:logistic, a margin otherwise; auto = "
                               "from the data (mean target, log-odds, log class priors)");
  base.default_value = "auto";
  base.choices = {"auto"};
  std::vector<ParamSpec> out = {
      IntParam("n_estimators", 100, 1, 100000, "boosting rounds (one tree per class per round for multi:softprob)"),
      RangeParam("eta", 0.3, 0, true, 1, false, "learning rate: shrinks every tree's leaf values"),
      IntParam("max_depth", 6, 0, 30, "maximum tree depth (0 = no limit: lossguide with max_leaves only)"),
      IntParam("max_leaves", 0, 0, 1 << 20, "maximum leaves per tree (0 = no limit)"),
      ChoiceParam("grow_policy", "depthwise", {"depthwise", "lossguide"},
                  "depthwise: level by level; lossguide: always split the leaf of largest gain"),
      NonNegativeParam("min_child_weight", 1, "minimum hessian sum of a child"),
      NonNegativeParam("gamma", 0, "minimum loss reduction of a split (min_split_loss)"),
      NonNegativeParam("lambda", 1, "L2 regularisation of leaf weights (reg_lambda)"),
      NonNegativeParam("alpha", 0, "L1 regularisation of leaf weights (reg_alpha)"),
      NonNegativeParam("max_delta_step", 0, "cap on |leaf weight| before eta (0 = none)"),
      RangeParam("subsample", 1, 0, true, 1, false, "share of rows each round's trees see"),
      RangeParam("colsample_bytree", 1, 0, true, 1, false, "share of features each tree may use"),
      RangeParam("colsample_bylevel", 1, 0, true, 1, false, "share of the tree's features each depth may use"),
      RangeParam("colsample_bynode", 1, 0, true, 1, false, "share of the level's features each split may use"),
      IntParam("max_bin", 256, 2, 256, "quantile bins per feature (at most 255 value bins plus a missing-value bin)"),
      base,
      IntParam("early_stopping_rounds", 0, 0, 1000000,
               "stop when the evaluation loss has not improved for this many rounds and keep the best (0 = never)"),
  };
  if (regressor) {
    out.push_back(ChoiceParam("objective", "reg:squarederror", {"reg:squarederror"}, "learning objective"));
  } else {
    out.push_back(ChoiceParam("objective", "auto", {"auto", "binary:logistic", "multi:softprob"},
                              "learning objective; auto = binary:logistic for 2 classes, else multi:softprob"));
  }
  return out;
}

EstimatorDef MakeXgbDef(bool regressor) {
  EstimatorDef def;
  def.name = regressor ? "xgboost-regressor" : "xgboost";
  def.title = regressor ? "XGBoost (regression)" : "XGBoost";
  def.task = regressor ? data::TableTask::kRegression : data::TableTask::kClassification;
  def.help =
      "XGBoost-style gradient boosting (Chen & Guestrin 2016) with tree_method=hist: features cut into up to 255 "
      "quantile bins, trees grown depth-wise or leaf-wise on gradient/hessian histograms with the regularised "
      "gain (lambda, alpha, gamma, min_child_weight, max_delta_step), a learned default direction for missing values "
      "(NaN), row and column subsampling, early stopping on the evaluation split. XGBoost's parameter names and "
      "meanings; softmax hessians are 2p(1-p) as in XGBoost.";
  def.distributed =
      "sketch summaries gathered once (identical bins everywhere), then per tree level the gradient/hessian "
      "histograms of the built children summed over the workers; every worker finds the same splits";
  def.params = XgbParams(regressor);
  def.create = [regressor](const ParamValues& p) -> std::unique_ptr<Estimator> {
    return std::make_unique<XgbEstimator>(p, regressor);
  };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeXgbDef(false));
GEOMX_REGISTER_ESTIMATOR(MakeXgbDef(true));

}  // namespace geomx::algorithms
