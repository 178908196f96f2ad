// Tests of the boosting estimators "xgboost", "gbdt" (and their regressors) on the histogram tree learner: fits on
// data no linear model separates, scikit-learn's digits, a monotone training loss for multiclass at eta 0.3,
// predictions against a naive walk of the JSON dump (parsed here), save/load, the distributed exact mode against
// the single-process model, and clear errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/fit_job.h"
#include "algorithms/estimators/trees/tree.h"
#include "datasets/table.h"
#include "engine/base/rng.h"
#include "tests/algorithms/estimators/tree_model_util.h"

namespace geomx::algorithms {
namespace {

std::unique_ptr<Estimator> Make(const std::string& name, const std::map<std::string, std::string>& params) {
  auto est = CreateEstimator(name, params);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  return est.ok() ? std::move(est).value() : nullptr;
}

// Two interleaved spirals, `classes` arms (labels = arm), plus `noise_cols` uniform noise columns.
data::Table Spirals(int per_class, int classes, int noise_cols, uint64_t seed) {
  Rng rng(seed);
  data::Table t;
  t.cols = 2 + noise_cols;
  t.num_classes = classes;
  for (int c = 0; c < classes; ++c) {
    for (int i = 0; i < per_class; ++i) {
      const double r = 0.2 + 3.0 * i / per_class;
      const double a = r * 2.2 + 2 * M_PI * c / classes + 0.15 * rng.Normal();
      t.dense.push_back(static_cast<float>(r * std::cos(a)));
      t.dense.push_back(static_cast<float>(r * std::sin(a)));
      for (int j = 0; j < noise_cols; ++j) t.dense.push_back(static_cast<float>(rng.Uniform()));
      t.labels.push_back(c);
      ++t.rows;
    }
  }
  return t;
}

// XOR of the signs of two features, with missing values (NaN) in a third.
data::Table Xor(int rows, uint64_t seed) {
  Rng rng(seed);
  data::Table t;
  t.cols = 3;
  t.num_classes = 2;
  for (int i = 0; i < rows; ++i) {
    const float a = static_cast<float>(rng.Uniform() * 2 - 1), b = static_cast<float>(rng.Uniform() * 2 - 1);
    t.dense.insert(t.dense.end(), {a, b, rng.Uniform() < 0.3 ? NAN : static_cast<float>(rng.Uniform())});
    t.labels.push_back((a > 0) != (b > 0) ? 1 : 0);
    ++t.rows;
  }
  return t;
}

std::vector<int64_t> Range(int64_t begin, int64_t end, int64_t step = 1) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; i += step) out.push_back(i);
  return out;
}

double Accuracy(const Estimator& est, const data::Table& t) {
  auto p = est.Predict(t, 2);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return 0;
  return MetricValue(EvaluateTask(data::TableTask::kClassification, t, *p), "accuracy");
}

class LossLog : public FitObserver {
 public:
  void OnStep(int64_t, const Metrics& m) override { loss.push_back(MetricValue(m, "loss")); }
  std::vector<double> loss;
};

TEST(XgbTest, FitsXorAndSpiralsThatNoLinearModelSeparates) {
  const data::Table x = Xor(3000, 1);
  const data::Table xtrain = x.Select(Range(0, 2000)), xtest = x.Select(Range(2000, 3000));
  for (const std::string name : {"xgboost", "gbdt"}) {
    auto est = Make(name, {});
    ASSERT_TRUE(est->Fit(xtrain, FitContext{}).ok()) << name;
    EXPECT_GE(Accuracy(*est, xtest), 0.97) << name;
  }
  const data::Table s = Spirals(400, 3, 2, 2);
  const data::Table strain = s.Select(Range(0, s.rows, 2)), stest = s.Select(Range(1, s.rows, 2));
  auto xgb = Make("xgboost", {{"n_estimators", "200"}, {"max_depth", "4"}, {"eta", "0.3"}});
  FitContext ctx;
  ctx.threads = 2;
  ASSERT_TRUE(xgb->Fit(strain, ctx).ok());
  EXPECT_GE(Accuracy(*xgb, stest), 0.9);
  auto gb = Make("gbdt", {{"max_iter", "200"}, {"learning_rate", "0.2"}, {"min_samples_leaf", "5"}});
  ASSERT_TRUE(gb->Fit(strain, ctx).ok());
  EXPECT_GE(Accuracy(*gb, stest), 0.9);
  auto lossguide = Make("xgboost", {{"grow_policy", "lossguide"},
                                    {"max_leaves", "12"},
                                    {"max_depth", "0"},
                                    {"n_estimators", "200"},
                                    {"subsample", "0.8"},
                                    {"colsample_bynode", "0.8"}});
  ASSERT_TRUE(lossguide->Fit(strain, ctx).ok());
  EXPECT_GE(Accuracy(*lossguide, stest), 0.9);
}

TEST(XgbTest, MulticlassTrainingLossDecreasesEveryRoundAtEta03) {
  data::Table s = Spirals(300, 5, 3, 3);
  Rng flip(10);
  for (int32_t& y : s.labels) {
    if (flip.Uniform() < 0.15) y = static_cast<int32_t>(flip.Below(5));  // label noise: the loss cannot reach 0
  }
  for (const auto& [name, params] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"xgboost", {{"n_estimators", "40"}, {"eta", "0.3"}, {"max_depth", "6"}}},
           {"xgboost", {{"n_estimators", "40"}, {"eta", "0.3"}, {"min_child_weight", "0"}, {"lambda", "0"}}},
           {"gbdt", {{"max_iter", "40"}, {"learning_rate", "0.3"}, {"min_samples_leaf", "1"}}}}) {
    auto est = Make(name, params);
    LossLog log;
    FitContext ctx;
    ctx.observer = &log;
    ASSERT_TRUE(est->Fit(s, ctx).ok());
    ASSERT_EQ(log.loss.size(), 40u);
    EXPECT_LT(log.loss[0], std::log(5.0));
    for (size_t r = 1; r < log.loss.size(); ++r) EXPECT_LT(log.loss[r], log.loss[r - 1]) << name << " round " << r;
    EXPECT_LT(log.loss.back(), 0.6 * log.loss[0]) << name;
  }
}

TEST(XgbTest, DigitsFromScikitLearn) {
  const std::string path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not installed";
  data::DataConfig config;
  config.name = "csv";
  config.header = false;
  auto t = data::ReadTableFile(path, config, data::TableTask::kClassification, 64, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->rows, 1797);
  t->num_classes = 1 + *std::max_element(t->labels.begin(), t->labels.end());
  ASSERT_EQ(t->num_classes, 10);
  const data::Table train = t->Select(Range(0, 1400)), test = t->Select(Range(1400, 1797));
  FitContext ctx;
  ctx.threads = 2;
  auto xgb = Make("xgboost", {{"n_estimators", "60"}, {"eta", "0.3"}, {"max_depth", "4"}});
  ASSERT_TRUE(xgb->Fit(train, ctx).ok());
  EXPECT_GE(Accuracy(*xgb, test), 0.87);  // XGBoost 1.7.4 (hist, same settings, same rows): 0.894
  auto gb = Make("gbdt", {{"max_iter", "60"}, {"learning_rate", "0.2"}});
  ASSERT_TRUE(gb->Fit(train, ctx).ok());
  EXPECT_GE(Accuracy(*gb, test), 0.88);
}

TEST(XgbTest, RegressorsFitASmoothFunction) {
  Rng rng(4);
  data::Table t;
  t.cols = 3;
  for (int i = 0; i < 3000; ++i) {
    const float a = static_cast<float>(rng.Uniform() * 4 - 2), b = static_cast<float>(rng.Uniform() * 4 - 2);
    t.dense.insert(t.dense.end(), {a, b, static_cast<float>(rng.Uniform())});
    t.targets.push_back(static_cast<float>(std::sin(a) * 2 + b * b + 0.05 * rng.Normal()));
    ++t.rows;
  }
  const data::Table train = t.Select(Range(0, 2000)), test = t.Select(Range(2000, 3000));
  for (const std::string name : {"xgboost-regressor", "gbdt-regressor"}) {
    auto est = Make(name, {});
    ASSERT_TRUE(est->Fit(train, FitContext{}).ok()) << name;
    auto p = est->Predict(test, 1);
    ASSERT_TRUE(p.ok());
    const Metrics m = EvaluateTask(data::TableTask::kRegression, test, *p);
    EXPECT_LT(MetricValue(m, "rmse"), 0.25) << name;
    EXPECT_GT(MetricValue(m, "r2"), 0.97) << name;
  }
}

// A minimal JSON reader for the dump: values are objects, arrays, numbers, strings and true/false.
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  double number = 0;
  bool boolean = false;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
  const Json& operator[](const std::string& k) const { return fields.at(k); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json Parse() {
    Skip();
    Json v;
    if (s_[i_] == '{') {
      v.kind = Json::kObject;
      ++i_;
      Skip();
      while (s_[i_] != '}') {
        Json key = Parse();
        Skip();
        EXPECT_EQ(s_[i_], ':');
        ++i_;
        v.fields[key.text] = Parse();
        Skip();
        if (s_[i_] == ',') ++i_;
        Skip();
      }
      ++i_;
    } else if (s_[i_] == '[') {
      v.kind = Json::kArray;
      ++i_;
      Skip();
      while (s_[i_] != ']') {
        v.items.push_back(Parse());
        Skip();
        if (s_[i_] == ',') ++i_;
        Skip();
      }
      ++i_;
    } else if (s_[i_] == '"') {
      v.kind = Json::kString;
      const size_t end = s_.find('"', i_ + 1);
      v.text = s_.substr(i_ + 1, end - i_ - 1);
      i_ = end + 1;
    } else if (s_.compare(i_, 4, "true") == 0 || s_.compare(i_, 5, "false") == 0) {
      v.kind = Json::kBool;
      v.boolean = s_[i_] == 't';
      i_ += v.boolean ? 4 : 5;
    } else {
      v.kind = Json::kNumber;
      char* end = nullptr;
      v.number = std::strtod(s_.c_str() + i_, &end);
      EXPECT_NE(end, s_.c_str() + i_) << "bad JSON at " << i_;
      i_ = static_cast<size_t>(end - s_.c_str());
    }
    return v;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  const std::string& s_;
  size_t i_ = 0;
};

// Margins of a dense row by walking the dumped JSON trees (independent of Tree::LeafOf).
std::vector<double> WalkDump(const Json& dump, const float* x) {
  std::vector<double> m;
  for (const Json& b : dump["base_margin"].items) m.push_back(b.number);
  for (const Json& tree : dump["trees"].items) {
    const std::vector<Json>& nodes = tree["nodes"].items;
    size_t i = 0;
    while (nodes[i].fields.count("leaf") == 0) {
      const Json& n = nodes[i];
      const float v = x[static_cast<size_t>(n["feature"].number)];
      const bool left = std::isnan(v) ? n["default_left"].boolean : v < static_cast<float>(n["threshold"].number);
      i = static_cast<size_t>((left ? n["left"] : n["right"]).number);
      EXPECT_EQ(static_cast<size_t>(nodes[i]["id"].number), i);
    }
    m[static_cast<size_t>(tree["group"].number)] += nodes[i]["leaf"].number;
  }
  return m;
}

using testing::EnsembleOf;

TEST(XgbTest, PredictionsEqualAWalkOfTheJsonDumpAndImportanceCountsSplits) {
  data::Table s = Spirals(150, 3, 2, 5);
  for (size_t j = 4; j < s.dense.size(); j += 13) s.dense[j] = NAN;  // some missing values
  auto est = Make("xgboost", {{"n_estimators", "15"}, {"max_depth", "4"}, {"colsample_bytree", "0.8"}});
  ASSERT_TRUE(est->Fit(s, FitContext{}).ok());
  const trees::Ensemble e = EnsembleOf(*est, "xgboost");
  ASSERT_EQ(e.trees.size(), 45u);
  const std::string text = e.DumpJson();
  const Json dump = JsonParser(text).Parse();
  EXPECT_EQ(dump["format"].text, "geomx-trees");
  EXPECT_EQ(dump["version"].number, 1);
  EXPECT_EQ(dump["num_group"].number, 3);
  auto p = est->Predict(s, 2);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->proba_columns, 3);
  for (int64_t i = 0; i < s.rows; ++i) {
    std::vector<double> m = WalkDump(dump, s.dense.data() + i * s.cols);
    double mx = std::max({m[0], m[1], m[2]}), z = 0;
    for (double& v : m) z += std::exp(v - mx);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(p->proba[static_cast<size_t>(i * 3 + k)], std::exp(m[static_cast<size_t>(k)] - mx) / z, 2e-5);
    }
  }
  std::vector<double> splits(static_cast<size_t>(s.cols), 0.0);
  for (const Json& tree : dump["trees"].items) {
    for (const Json& n : tree["nodes"].items) {
      if (n.fields.count("feature")) splits[static_cast<size_t>(n["feature"].number)] += 1;
    }
  }
  EXPECT_EQ(e.Importance(trees::ImportanceKind::kWeight), splits);
  EXPECT_GT(splits[0] + splits[1], splits[2] + splits[3]);  // the spiral's coordinates matter most
}

TEST(XgbTest, SaveLoadGivesIdenticalPredictions) {
  const data::Table s = Spirals(100, 4, 1, 6);
  for (const std::string name : {"xgboost", "gbdt", "xgboost-regressor"}) {
    data::Table t = s;
    if (name == "xgboost-regressor") {
      for (int32_t y : t.labels) t.targets.push_back(static_cast<float>(y) * 1.5f);
    }
    auto est = Make(name, {});
    ASSERT_TRUE(est->Fit(t, FitContext{}).ok()) << name;
    ModelWriter w;
    est->Save(&w);
    auto r = ModelReader::Parse(w.Encode(), "m");
    ASSERT_TRUE(r.ok());
    auto loaded = Make(name, {});
    ASSERT_TRUE(loaded->Load(*r).ok()) << name;
    auto a = est->Predict(t, 1), b = loaded->Predict(t, 2);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->value, b->value) << name;
    EXPECT_EQ(a->proba, b->proba) << name;
    // A truncated model file is a clear error, not a crash.
    ModelWriter partial;
    partial.PutInts(name + ".objective", std::vector<int64_t>{2, 4, -1});
    auto pr = ModelReader::Parse(partial.Encode(), "partial");
    ASSERT_TRUE(pr.ok());
    const Status st = Make(name, {})->Load(*pr);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << name;
  }
}

TEST(XgbTest, EarlyStoppingKeepsTheBestRound) {
  const data::Table s = Spirals(200, 3, 10, 7);
  const data::Table train = s.Select(Range(0, s.rows, 2)), eval = s.Select(Range(1, s.rows, 2));
  auto est = Make("xgboost", {{"n_estimators", "500"}, {"eta", "0.5"}, {"early_stopping_rounds", "5"}});
  FitContext ctx;
  ctx.eval = &eval;
  ASSERT_TRUE(est->Fit(train, ctx).ok());
  const trees::Ensemble e = EnsembleOf(*est, "xgboost");
  EXPECT_LT(e.trees.size(), 1500u);
  EXPECT_EQ(e.trees.size() % 3, 0u);
}

// Workers as threads on IID shards (ShardOf) of `t`; returns every worker's saved ensemble.
std::vector<trees::Ensemble> FitDistributed(const std::string& name, const std::map<std::string, std::string>& params,
                                            const data::Table& t, int world) {
  ThreadCollectiveGroup group(world);
  std::vector<trees::Ensemble> out(static_cast<size_t>(world));
  std::vector<Status> status(static_cast<size_t>(world), Status::Internal("not run"));
  std::vector<std::thread> workers;
  for (int r = 0; r < world; ++r) {
    workers.emplace_back([&, r] {
      auto est = CreateEstimator(name, params);
      if (!est.ok()) return;
      FitContext ctx;
      ctx.collective = group.Worker(r);
      ctx.threads = 1 + r % 2;
      const data::Table shard = ShardOf(t, r, world, 42);
      status[static_cast<size_t>(r)] = (*est)->Fit(shard, ctx);
      if (status[static_cast<size_t>(r)].ok()) out[static_cast<size_t>(r)] = EnsembleOf(**est, name);
    });
  }
  for (auto& w : workers) w.join();
  for (const Status& s : status) EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// Same trees: every split on the same feature and bin (threshold), leaves within leaf_tol. A default direction may
// differ where sending the node's few missing rows left or right gains the same up to float rounding (the
// distributed histograms are summed as floats): at most 1% of the splits.
void ExpectSameSplits(const trees::Ensemble& a, const trees::Ensemble& b, double leaf_tol) {
  ASSERT_EQ(a.trees.size(), b.trees.size());
  int splits = 0, flipped = 0;
  for (size_t t = 0; t < a.trees.size(); ++t) {
    ASSERT_EQ(a.trees[t].nodes.size(), b.trees[t].nodes.size()) << "tree " << t;
    for (size_t i = 0; i < a.trees[t].nodes.size(); ++i) {
      const trees::TreeNode &x = a.trees[t].nodes[i], &y = b.trees[t].nodes[i];
      EXPECT_EQ(x.feature, y.feature) << "tree " << t << " node " << i;
      EXPECT_EQ(x.bin, y.bin) << "tree " << t << " node " << i;
      EXPECT_EQ(x.threshold, y.threshold);
      EXPECT_NEAR(x.value, y.value, leaf_tol);
      EXPECT_NEAR(x.gain, y.gain, 1e-5 * std::max(1.0f, std::fabs(x.gain)));
      if (!x.is_leaf()) {
        ++splits;
        flipped += x.default_left != y.default_left ? 1 : 0;
      }
    }
  }
  EXPECT_LE(flipped * 100, splits) << flipped << " of " << splits << " default directions differ";
}

TEST(XgbTest, DistributedExactModeGrowsTheSingleProcessTrees) {
  // Integer-valued features (fewer distinct values than a sketch summary holds): the merged sketches give the
  // union's bins exactly, so the trees must match split for split.
  Rng rng(9);
  data::Table t;
  t.cols = 6;
  t.num_classes = 3;
  for (int i = 0; i < 1800; ++i) {
    int score = 0;
    for (int j = 0; j < 6; ++j) {
      const int v = static_cast<int>(rng.Below(30));
      t.dense.push_back(rng.Uniform() < 0.05 ? NAN : static_cast<float>(v));
      if (j < 3) score += v * (j + 1);
    }
    t.labels.push_back(score < 45 ? 0 : score < 100 ? 1 : 2);
    ++t.rows;
  }
  for (const auto& [name, params] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"xgboost", {{"n_estimators", "4"}, {"max_depth", "4"}, {"max_bin", "16"}}},
           {"xgboost",
            {{"n_estimators", "3"}, {"grow_policy", "lossguide"}, {"max_leaves", "10"}, {"colsample_bylevel", "0.7"}}},
           {"gbdt", {{"max_iter", "3"}, {"max_leaf_nodes", "8"}}}}) {
    auto single = Make(name, params);
    ASSERT_TRUE(single->Fit(t, FitContext{}).ok());
    const trees::Ensemble want = EnsembleOf(*single, name);
    for (int world : {2, 4}) {
      SCOPED_TRACE(name + " with " + std::to_string(world) + " workers");
      const std::vector<trees::Ensemble> got = FitDistributed(name, params, t, world);
      for (const trees::Ensemble& e : got) ExpectSameSplits(want, e, 1e-4);
      for (size_t r = 1; r < got.size(); ++r) ExpectSameSplits(got[0], got[r], 0);  // identical on every worker
    }
  }
}

TEST(XgbTest, BadInputGivesClearErrors) {
  const data::Table s = Spirals(50, 3, 0, 8);
  auto expect_invalid = [](const Status& st, const std::string& needle) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  };
  data::Table one = s.Select(Range(0, 50));  // class 0 only
  expect_invalid(Make("xgboost", {})->Fit(one, FitContext{}), "at least two classes");
  expect_invalid(Make("gbdt", {})->Fit(one, FitContext{}), "at least two classes");
  expect_invalid(Make("xgboost", {{"objective", "binary:logistic"}})->Fit(s, FitContext{}), "binary:logistic");
  data::Table reg = s;
  for (int32_t y : reg.labels) reg.targets.push_back(static_cast<float>(y));
  reg.targets[7] = NAN;
  expect_invalid(Make("xgboost-regressor", {})->Fit(reg, FitContext{}), "row 7 has a NaN or infinite target");
  expect_invalid(Make("gbdt-regressor", {})->Fit(reg, FitContext{}), "NaN");
  data::Table empty;
  empty.cols = 2;
  empty.num_classes = 2;
  expect_invalid(Make("xgboost", {})->Fit(empty, FitContext{}), "xgboost:");
  data::Table weights = s;
  weights.weights.assign(static_cast<size_t>(s.rows), 1.0f);
  weights.weights[3] = -1;
  expect_invalid(Make("xgboost", {})->Fit(weights, FitContext{}), "weight");
  auto est = Make("xgboost", {{"n_estimators", "3"}});
  ASSERT_TRUE(est->Fit(s, FitContext{}).ok());
  data::Table wide = s;
  wide.cols = 1;
  wide.dense.resize(static_cast<size_t>(s.rows));
  auto p = est->Predict(wide, 1);
  ASSERT_FALSE(p.ok());
  expect_invalid(p.status(), "the input has 1 columns, the model was trained on 2");
  EXPECT_EQ(Make("xgboost", {})->Predict(s, 1).status().code(), StatusCode::kFailedPrecondition);
  // Parameter problems name the parameter.
  auto bad = CreateEstimator("xgboost", {{"eta", "0"}, {"grow_policy", "best"}, {"max_bin", "1000"}});
  ASSERT_FALSE(bad.ok());
  for (const char* k : {"algorithm.eta", "algorithm.grow_policy", "algorithm.max_bin"}) {
    EXPECT_NE(bad.status().message().find(k), std::string::npos) << bad.status().ToString();
  }
  expect_invalid(Make("xgboost", {{"max_depth", "0"}})->Fit(s, FitContext{}), "max_depth 0");
}

}  // namespace
}  // namespace geomx::algorithms
