// XGBoost-style second-order gradient boosting (docs/algorithms.md#xgboost) on the histogram tree learner
// (trees/booster.h): XGBoost's parameter names and meanings, objectives binary:logistic and multi:softprob
// ("xgboost", a classifier), reg:squarederror ("xgboost-regressor") and rank:ndcg / rank:pairwise
// ("xgboost-ranker": per-query gradients of trees/rank_objective.h).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/booster.h"
#include "algorithms/estimators/trees/learner_params.h"

namespace geomx::algorithms {
namespace {

using trees::BoosterOptions;
using trees::Objective;

enum class XgbKind : uint8_t { kClassifier, kRegressor, kRanker };

const char* XgbName(XgbKind kind) {
  switch (kind) {
    case XgbKind::kClassifier:
      return "xgboost";
    case XgbKind::kRegressor:
      return "xgboost-regressor";
    case XgbKind::kRanker:
      return "xgboost-ranker";
  }
  return "xgboost";
}

class XgbEstimator final : public trees::BoosterEstimator {
 public:
  XgbEstimator(const ParamValues& p, XgbKind kind) : objective_(p.Choice("objective")) {
    BoosterOptions o;
    o.name = XgbName(kind);
    o.objective = kind == XgbKind::kRegressor ? Objective::kSquaredError
                  : kind == XgbKind::kRanker  ? (objective_ == "rank:pairwise" ? Objective::kRankPairwise
                                                                               : Objective::kRankNdcg)
                                              : Objective::kSoftmax;
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
    trees::SetTreeLearner(p, &o.grower);
    SetOptions(std::move(o));
  }

  Status Fit(const data::Table& train, const FitContext& context) override {
    BoosterOptions o = options();
    if (o.grower.max_depth == 0 && (o.grower.policy != trees::GrowPolicy::kLossguide || o.grower.max_leaves == 0)) {
      return Status::InvalidArgument(o.name +
                                     ": max_depth 0 (no limit) needs grow_policy lossguide and max_leaves > 0");
    }
    if (o.objective == Objective::kLogistic || o.objective == Objective::kSoftmax) {
      const bool binary = objective_ == "binary:logistic" || (objective_ == "auto" && train.num_classes == 2);
      o.objective = binary ? Objective::kLogistic : Objective::kSoftmax;
    }
    return Boost(std::move(o), train, context);
  }

 private:
  std::string objective_;
};

std::vector<ParamSpec> XgbParams(XgbKind kind) {
  ParamSpec base = NumberParam("base_score", 0.5,
                               "initial prediction: a probability for binary:logistic, a margin otherwise; auto = "
                               "from the data (mean target, log-odds, log class priors; 0 for ranking)");
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
               "stop when the evaluation loss (ranking: NDCG@10) has not improved for this many rounds and keep the "
               "best (0 = never)"),
  };
  if (kind == XgbKind::kRegressor) {
    out.push_back(ChoiceParam("objective", "reg:squarederror", {"reg:squarederror"}, "learning objective"));
  } else if (kind == XgbKind::kRanker) {
    out.push_back(ChoiceParam("objective", "rank:ndcg", {"rank:ndcg", "rank:pairwise"},
                              "rank:ndcg: LambdaMART (RankNet gradients x |delta NDCG| of swapping the pair); "
                              "rank:pairwise: RankNet over every pair of a query with different relevance"));
  } else {
    out.push_back(ChoiceParam("objective", "auto", {"auto", "binary:logistic", "multi:softprob"},
                              "learning objective; auto = binary:logistic for 2 classes, else multi:softprob"));
  }
  for (ParamSpec& spec : trees::TreeLearnerParams()) out.push_back(std::move(spec));
  return out;
}

EstimatorDef MakeXgbDef(XgbKind kind) {
  EstimatorDef def;
  def.name = XgbName(kind);
  def.title = kind == XgbKind::kRegressor ? "XGBoost (regression)"
              : kind == XgbKind::kRanker  ? "XGBoost (ranking)"
                                          : "XGBoost";
  def.task = kind == XgbKind::kRegressor ? data::TableTask::kRegression
             : kind == XgbKind::kRanker  ? data::TableTask::kRanking
                                         : data::TableTask::kClassification;
  def.help =
      "XGBoost-style gradient boosting (Chen & Guestrin 2016) with tree_method=hist: features cut into up to 255 "
      "quantile bins, trees grown depth-wise or leaf-wise on gradient/hessian histograms with the regularised "
      "gain (lambda, alpha, gamma, min_child_weight, max_delta_step), a learned default direction for missing values "
      "(NaN), row and column subsampling, early stopping on the evaluation split. XGBoost's parameter names and "
      "meanings; softmax hessians are 2p(1-p) as in XGBoost.";
  if (kind == XgbKind::kRanker) {
    def.help +=
        " Ranking: the gradients are computed per query (qid) - rank:ndcg weights every RankNet pair gradient by "
        "|delta NDCG| of swapping the pair (gain 2^rel - 1, log2 discount, over the query's ideal DCG), "
        "rank:pairwise takes every pair with different relevance; hessians 2p(1-p) (x |delta NDCG|) as XGBoost's; "
        "base margin 0; early stopping on the evaluation split's NDCG@10.";
  }
  def.distributed =
      "sketch summaries gathered once (identical bins everywhere), then per tree level the gradient/hessian "
      "histograms of the built children summed over the workers; every worker finds the same splits (tree_learner "
      "voting: summed within each data centre, only the voted features' across the WAN)";
  if (kind == XgbKind::kRanker) def.distributed = "queries stay whole on one worker (per-query gradients are local); " +
                                                  def.distributed;
  def.params = XgbParams(kind);
  def.create = [kind](const ParamValues& p) -> std::unique_ptr<Estimator> {
    return std::make_unique<XgbEstimator>(p, kind);
  };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeXgbDef(XgbKind::kClassifier));
GEOMX_REGISTER_ESTIMATOR(MakeXgbDef(XgbKind::kRegressor));
GEOMX_REGISTER_ESTIMATOR(MakeXgbDef(XgbKind::kRanker));

}  // namespace geomx::algorithms
