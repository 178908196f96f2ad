// LambdaMART (docs/algorithms.md#lambdamart; Burges 2010, "From RankNet to LambdaRank to LambdaMART"): gradient
// boosting of histogram trees (trees/booster.h) on LambdaRank's per-query gradients (trees/rank_objective.h),
// RankNet pair gradients times |delta NDCG@k| of swapping the pair, with LightGBM lambdarank's parameter names.
// second_order true grows the trees on (lambda, hessian) as LightGBM and XGBoost do; false is Burges' original:
// least-squares trees on the lambdas, then each leaf takes the Newton value -sum lambda / (sum hessian + lambda_l2).
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

class LambdaMart final : public trees::BoosterEstimator {
 public:
  explicit LambdaMart(const ParamValues& p) {
    BoosterOptions o;
    o.name = "lambdamart";
    o.objective = Objective::kRankNdcg;
    o.second_order = p.Bool("second_order");
    o.rounds = p.Int("n_estimators");
    o.eta = p.Number("learning_rate");
    o.grower.policy = trees::GrowPolicy::kLossguide;  // leaf-wise, as LightGBM
    o.grower.max_leaves = static_cast<int>(p.Int("num_leaves"));
    o.grower.max_depth = static_cast<int>(p.Int("max_depth"));
    o.grower.split.min_child_weight = p.Number("min_child_weight");
    o.grower.split.lambda = p.Number("lambda_l2");
    o.grower.split.gamma = p.Number("min_gain_to_split");
    o.grower.colsample_bytree = p.Number("feature_fraction");
    o.subsample = p.Number("bagging_fraction");
    o.max_bin = static_cast<int>(p.Int("max_bin"));
    o.base_score_auto = true;  // 0 for ranking
    o.early_stopping_rounds = p.Int("early_stopping_round");
    o.ndcg_truncation = static_cast<int>(p.Int("lambdarank_truncation_level"));
    trees::SetTreeLearner(p, &o.grower);
    SetOptions(std::move(o));
  }

  Status Fit(const data::Table& train, const FitContext& context) override { return Boost(options(), train, context); }
};

EstimatorDef MakeLambdaMartDef() {
  EstimatorDef def;
  def.name = "lambdamart";
  def.title = "LambdaMART";
  def.task = data::TableTask::kRanking;
  def.help =
      "LambdaMART (Burges 2010): gradient-boosted regression trees whose gradients are LambdaRank's lambdas, "
      "computed per query (qid): for every pair of rows with different relevance, the RankNet gradient "
      "sigmoid(s_i - s_j) - 1 times |delta NDCG@k| of swapping the two in the current ranking (gain 2^rel - 1, "
      "log2 discount, over the query's ideal DCG@k, k = lambdarank_truncation_level), hessians 2p(1-p)|delta NDCG| "
      "as XGBoost's. Trees are grown leaf-wise on histograms (up to 255 quantile bins per feature), on (lambda, "
      "hessian) with second_order (LightGBM, XGBoost) or as least-squares fits of the lambdas with Newton leaves "
      "(Burges' original). Scores rows; early stopping on the evaluation split's NDCG@10.";
  def.distributed =
      "queries stay whole on one worker, so the lambdas are computed locally; sketch summaries gathered once, then "
      "per split the lambda/hessian histograms of the smaller child summed over the workers";
  def.params = {
      IntParam("n_estimators", 100, 1, 100000, "boosting rounds (one tree each)"),
      RangeParam("learning_rate", 0.1, 0, true, 1, false, "shrinks every tree's leaf values"),
      IntParam("num_leaves", 31, 2, 1 << 20, "maximum leaves per tree (leaf-wise growth)"),
      IntParam("max_depth", 0, 0, 30, "maximum tree depth (0 = no limit)"),
      NonNegativeParam("min_child_weight", 1e-3,
                       "minimum hessian sum of a leaf (LightGBM's min_sum_hessian_in_leaf); with second_order false "
                       "the minimum row weight (rows) of a leaf"),
      NonNegativeParam("lambda_l2", 0, "L2 regularisation of leaf values"),
      NonNegativeParam("min_gain_to_split", 0, "minimum gain of a split"),
      IntParam("lambdarank_truncation_level", 30, 0, 1 << 20,
               "the k of NDCG@k in the lambdas: pairs with a row in the current top k (0 = the whole query)"),
      BoolParam("second_order", true,
                "true: trees on (lambda, hessian) (LightGBM, XGBoost); false: least-squares trees on the lambdas, "
                "Newton leaves (Burges 2010)"),
      RangeParam("feature_fraction", 1, 0, true, 1, false, "share of the features each tree may use"),
      RangeParam("bagging_fraction", 1, 0, true, 1, false, "share of rows each round's tree sees"),
      IntParam("max_bin", 255, 2, 256, "quantile bins per feature (at most 255 value bins plus a missing-value bin)"),
      IntParam("early_stopping_round", 0, 0, 1000000,
               "stop when the evaluation NDCG@10 has not improved for this many rounds and keep the best (0 = never)"),
  };
  for (ParamSpec& spec : trees::TreeLearnerParams()) def.params.push_back(std::move(spec));
  def.create = [](const ParamValues& p) -> std::unique_ptr<Estimator> { return std::make_unique<LambdaMart>(p); };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeLambdaMartDef());

}  // namespace geomx::algorithms
