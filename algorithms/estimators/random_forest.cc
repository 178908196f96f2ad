// Random forests (docs/algorithms.md#random-forest) on the histogram tree learner's quantile bins (trees/forest.h),
// with scikit-learn RandomForestClassifier / RandomForestRegressor's parameter names and meanings: bootstrap rows
// per tree, max_features candidates per split, fully grown trees by default, predict_proba the mean of the trees'
// leaf class distributions, the out-of-bag score as the model metric "oob_score". "random-forest" classifies (gini or
// entropy); "random-forest-regressor" regresses (squared_error).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/forest.h"

namespace geomx::algorithms {
namespace {

using trees::ForestCriterion;
using trees::ForestOptions;
using trees::MaxFeaturesRule;

class RandomForestEstimator final : public Estimator {
 public:
  RandomForestEstimator(const ParamValues& p, bool regressor) {
    o_.name = regressor ? "random-forest-regressor" : "random-forest";
    const std::string& criterion = p.Choice("criterion");
    o_.criterion = criterion == "entropy" ? ForestCriterion::kEntropy
                   : criterion == "gini"  ? ForestCriterion::kGini
                                          : ForestCriterion::kSquaredError;
    o_.trees = p.Int("n_estimators");
    o_.max_depth = static_cast<int>(p.Int("max_depth"));
    o_.min_samples_split = p.Int("min_samples_split");
    o_.min_samples_leaf = p.Int("min_samples_leaf");
    if (p.IsWord("max_features")) {
      const std::string& w = p.Text("max_features");
      o_.max_features_rule = w == "sqrt" ? MaxFeaturesRule::kSqrt
                             : w == "log2" ? MaxFeaturesRule::kLog2
                                           : MaxFeaturesRule::kFraction;
      o_.max_features = 1;
    } else {
      o_.max_features_rule = MaxFeaturesRule::kFraction;
      o_.max_features = p.Number("max_features");
    }
    o_.bootstrap = p.Bool("bootstrap");
    o_.max_samples = p.Number("max_samples");
    o_.oob_score = p.Bool("oob_score");
    o_.max_bin = static_cast<int>(p.Int("max_bin"));
  }

  Status Fit(const data::Table& train, const FitContext& context) override {
    GEOMX_ASSIGN_OR_RETURN(trees::ForestFit fit, trees::FitForest(o_, train, context));
    forest_ = std::move(fit.forest);
    has_oob_ = fit.has_oob;
    oob_ = fit.oob;
    return Status::Ok();
  }

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    if (forest_.features == 0) return Status::FailedPrecondition(o_.name + ": the model is neither fitted nor loaded");
    if (input.cols != forest_.features) {
      return Status::InvalidArgument(o_.name + ": the input has " + std::to_string(input.cols) +
                                     " columns, the model was trained on " + std::to_string(forest_.features));
    }
    std::vector<float> out = forest_.Predict(input, threads);
    Prediction p;
    const int k = forest_.classes;
    if (k == 0) {
      p.value = std::move(out);
      return p;
    }
    p.value.resize(static_cast<size_t>(input.rows));
    for (int64_t i = 0; i < input.rows; ++i) {
      const float* row = out.data() + i * k;
      p.value[static_cast<size_t>(i)] = static_cast<float>(std::max_element(row, row + k) - row);
    }
    p.proba = std::move(out);
    p.proba_columns = k;
    return p;
  }

  void Save(ModelWriter* out) const override { forest_.Save(o_.name, oob_, has_oob_, out); }

  Status Load(const ModelReader& in) override {
    double oob = 0;
    trees::Forest f;
    GEOMX_RETURN_IF_ERROR(f.Load(o_.name, in, &oob));
    if ((f.classes > 0) != o_.classification()) {
      return Status::DataLoss(in.source() + ": section '" + o_.name + ".forest.meta' is not a " +
                              (o_.classification() ? "classification" : "regression") + " forest");
    }
    forest_ = std::move(f);
    has_oob_ = !std::isnan(oob);
    oob_ = oob;
    return Status::Ok();
  }

  // importance.csv: scikit-learn's mean decrease in impurity per feature (trees/forest.h).
  std::vector<Artefact> Artefacts() const override {
    const std::vector<double> mdi = forest_.Importance();
    std::string csv = "feature,impurity_decrease\n";
    char buf[64];
    for (size_t f = 0; f < mdi.size(); ++f) {
      std::snprintf(buf, sizeof(buf), "%zu,%.9g\n", f, mdi[f]);
      csv += buf;
    }
    return {{"importance.csv", csv}};
  }

  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    Metrics m = {{"trees", static_cast<double>(forest_.trees.size())}};
    if (has_oob_) m.push_back({"oob_score", oob_});
    return m;
  }

 private:
  ForestOptions o_;
  trees::Forest forest_;
  bool has_oob_ = false;
  double oob_ = 0;
};

EstimatorDef MakeRandomForestDef(bool regressor) {
  EstimatorDef def;
  def.name = regressor ? "random-forest-regressor" : "random-forest";
  def.title = regressor ? "Random Forest (regression)" : "Random Forest";
  def.task = regressor ? data::TableTask::kRegression : data::TableTask::kClassification;
  def.help =
      "Breiman's random forest with scikit-learn's parameter names: every tree grown to full depth (by default) on "
      "a bootstrap sample, each split choosing among max_features randomly drawn features (constant ones do not "
      "count), gini/entropy or squared-error impurity; predict_proba is the mean of the trees' leaf class "
      "distributions. Features are cut into up to 255 quantile bins (max_bin) as LightGBM's rf mode, so split "
      "thresholds lie between bins rather than between every pair of values. Missing values (NaN) go right. "
      "oob_score: true reports the out-of-bag accuracy (R^2 for the regressor) as the metric oob_score.";
  def.distributed =
      "no sums while growing: worker r grows trees t = r, r + W, ... on its own shard (seeds from the job seed and "
      "t), then the serialised trees are gathered (concat) so every worker holds the same forest; the out-of-bag "
      "score sums per-shard counts";
  ParamSpec max_features =
      RangeParam("max_features", 1, 0, true, 1, false,
                 "features drawn per split: sqrt, log2, all, or a fraction of the features in (0, 1]");
  max_features.choices = {"sqrt", "log2", "all"};
  max_features.default_value = regressor ? "1" : "sqrt";
  def.params = {
      IntParam("n_estimators", 100, 1, 100000, "trees in the forest"),
      regressor ? ChoiceParam("criterion", "squared_error", {"squared_error"}, "split impurity: squared_error")
                : ChoiceParam("criterion", "gini", {"gini", "entropy"}, "split impurity: gini or entropy"),
      IntParam("max_depth", 0, 0, 1000, "maximum tree depth (0 = none: grow until pure or too small)"),
      IntParam("min_samples_split", 2, 2, 1 << 30, "distinct training rows a node needs to be split"),
      IntParam("min_samples_leaf", 1, 1, 1 << 30, "distinct training rows each child of a split needs"),
      max_features,
      BoolParam("bootstrap", true, "grow each tree on a bootstrap sample (else on every row)"),
      RangeParam("max_samples", 1, 0, true, 1, false, "bootstrap sample size as a share of the rows"),
      BoolParam("oob_score", false,
                regressor ? "report the out-of-bag R^2 (needs bootstrap)" : "report the out-of-bag accuracy "
                                                                            "(needs bootstrap)"),
      IntParam("max_bin", 256, 2, 256, "quantile bins per feature (at most 255 value bins plus a missing-value bin)"),
  };
  def.create = [regressor](const ParamValues& p) -> std::unique_ptr<Estimator> {
    return std::make_unique<RandomForestEstimator>(p, regressor);
  };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeRandomForestDef(false));
GEOMX_REGISTER_ESTIMATOR(MakeRandomForestDef(true));

}  // namespace geomx::algorithms
