// Tests of the random forest (trees/forest.h, "random-forest" and "random-forest-regressor"): root splits against a
// brute-force gini / entropy / squared-error search, a perfect fit of separable data by one full tree, leaf values
// against the in-bag rows of each tree's bootstrap, the out-of-bag score against an independent computation, save /
// load, the same forest for any thread count, the distributed fit against the trees grown on each shard by hand,
// clear errors, and accuracy on scikit-learn's digits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/fit_job.h"
#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/forest.h"
#include "datasets/table.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

using trees::Forest;
using trees::ForestOptions;

std::unique_ptr<Estimator> Make(const std::string& name, const std::map<std::string, std::string>& params) {
  auto est = CreateEstimator(name, params);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  return est.ok() ? std::move(est).value() : nullptr;
}

// The fitted forest of `est` through its model file (what a loaded model predicts with); `oob` <- its stored score.
Forest ForestOf(const Estimator& est, const std::string& prefix, double* oob = nullptr) {
  ModelWriter w;
  est.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "model");
  EXPECT_TRUE(r.ok());
  Forest f;
  double score = 0;
  EXPECT_TRUE(f.Load(prefix, *r, &score).ok());
  if (oob != nullptr) *oob = score;
  return f;
}

// Two interleaved spirals, `classes` arms (labels = arm), values rounded to 1/64 so the bins are exact.
data::Table Spirals(int per_class, int classes, uint64_t seed) {
  Rng rng(seed);
  data::Table t;
  t.cols = 2;
  t.num_classes = classes;
  for (int c = 0; c < classes; ++c) {
    for (int i = 0; i < per_class; ++i) {
      const double r = 0.2 + 3.0 * i / per_class;
      const double a = r * 2.2 + 2 * M_PI * c / classes + 0.1 * rng.Normal();
      t.dense.push_back(static_cast<float>(std::round(r * std::cos(a) * 64) / 64));
      t.dense.push_back(static_cast<float>(std::round(r * std::sin(a) * 64) / 64));
      t.labels.push_back(c);
      ++t.rows;
    }
  }
  return t;
}

// Small integer-valued features; labels (classification) and targets (regression) depending on the first two.
data::Table Small(int rows, int cols, int classes, uint64_t seed, bool weighted) {
  Rng rng(seed);
  data::Table t;
  t.cols = cols;
  t.num_classes = classes;
  for (int i = 0; i < rows; ++i) {
    std::vector<float> x(static_cast<size_t>(cols));
    for (float& v : x) v = static_cast<float>(rng.Below(12));
    t.dense.insert(t.dense.end(), x.begin(), x.end());
    const double s = x[0] + 0.5 * x[1] + 3 * rng.Uniform();
    t.labels.push_back(std::min(classes - 1, static_cast<int>(s / (20.0 / classes))));
    t.targets.push_back(static_cast<float>(s + 0.1 * x[2 % cols]));
    if (weighted) t.weights.push_back(static_cast<float>(1 + rng.Below(3)));
    ++t.rows;
  }
  return t;
}

// Node impurity x weight of rows `idx`: gini, entropy (bits) or squared error.
double WeightedImpurity(const data::Table& t, const std::vector<int64_t>& idx, const std::string& criterion) {
  double w = 0;
  std::vector<double> cw(static_cast<size_t>(std::max(t.num_classes, 1)), 0.0);
  double sy = 0, syy = 0;
  for (int64_t i : idx) {
    const double wi = t.weight(i);
    w += wi;
    if (criterion == "squared_error") {
      sy += wi * t.targets[static_cast<size_t>(i)];
      syy += wi * t.targets[static_cast<size_t>(i)] * t.targets[static_cast<size_t>(i)];
    } else {
      cw[static_cast<size_t>(t.labels[static_cast<size_t>(i)])] += wi;
    }
  }
  if (w == 0) return 0;
  if (criterion == "squared_error") return syy - sy * sy / w;
  double imp = criterion == "gini" ? 1 : 0;
  for (double c : cw) {
    const double p = c / w;
    if (criterion == "gini") imp -= p * p;
    if (criterion == "entropy" && p > 0) imp -= p * std::log2(p);
  }
  return w * imp;
}

TEST(ForestTest, RootSplitMatchesABruteForceSearch) {
  for (const std::string criterion : {"gini", "entropy", "squared_error"}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(criterion + " seed " + std::to_string(seed));
      const data::Table t = Small(40, 3, 3, seed, /*weighted=*/seed != 1);
      std::vector<int64_t> all;
      for (int64_t i = 0; i < t.rows; ++i) all.push_back(i);
      // Brute force: every feature, every threshold between two distinct values.
      double best = 1e300;
      for (int64_t f = 0; f < t.cols; ++f) {
        for (int v = 1; v < 12; ++v) {
          std::vector<int64_t> l, r;
          for (int64_t i : all) (t.dense[static_cast<size_t>(i * t.cols + f)] < v ? l : r).push_back(i);
          if (l.empty() || r.empty()) continue;
          best = std::min(best, WeightedImpurity(t, l, criterion) + WeightedImpurity(t, r, criterion));
        }
      }
      ForestOptions o;
      o.criterion = criterion == "gini"      ? trees::ForestCriterion::kGini
                    : criterion == "entropy" ? trees::ForestCriterion::kEntropy
                                             : trees::ForestCriterion::kSquaredError;
      o.trees = 1;
      o.max_depth = 1;
      o.bootstrap = false;
      o.max_features_rule = trees::MaxFeaturesRule::kFraction;
      o.max_features = 1;
      auto fit = trees::FitForest(o, t, FitContext{});
      ASSERT_TRUE(fit.ok()) << fit.status().ToString();
      const trees::Tree& tree = fit->forest.trees[0];
      ASSERT_EQ(tree.nodes.size(), 3u);
      const trees::TreeNode& root = tree.nodes[0];
      std::vector<int64_t> l, r;
      for (int64_t i : all) {
        (t.dense[static_cast<size_t>(i * t.cols + root.feature)] < root.threshold ? l : r).push_back(i);
      }
      const double got = WeightedImpurity(t, l, criterion) + WeightedImpurity(t, r, criterion);
      EXPECT_NEAR(got, best, 1e-9 * std::max(1.0, best));
      EXPECT_NEAR(root.gain, WeightedImpurity(t, all, criterion) - best, 1e-4 * std::max(1.0, best));
      double total_w = 0;
      for (int64_t i : all) total_w += t.weight(i);
      EXPECT_FLOAT_EQ(root.cover, static_cast<float>(total_w));
    }
  }
}

TEST(ForestTest, OneFullTreeWithoutBootstrapFitsSeparableDataPerfectly) {
  const data::Table t = Spirals(80, 3, 5);  // 240 rows: fewer distinct values than bins
  for (const std::string max_features : {"all", "sqrt"}) {
    auto est = Make("random-forest", {{"n_estimators", "1"}, {"bootstrap", "false"}, {"max_features", max_features}});
    ASSERT_TRUE(est->Fit(t, FitContext{}).ok());
    auto p = est->Predict(t, 1);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(MetricValue(EvaluateTask(data::TableTask::kClassification, t, *p), "accuracy"), 1.0) << max_features;
    for (float v : p->proba) EXPECT_TRUE(v == 0.0f || v == 1.0f);  // pure leaves
  }
}

// Leaf ordinal of node `id` of `tree` (leaves counted in node order), independent of Forest::IndexLeaves.
int64_t LeafOrdinal(const trees::Tree& tree, int32_t id) {
  int64_t n = 0;
  for (int32_t i = 0; i < id; ++i) n += tree.nodes[static_cast<size_t>(i)].is_leaf() ? 1 : 0;
  return n;
}

TEST(ForestTest, LeavesHoldTheirInBagRowsMeansAndDistributions) {
  const data::Table t = Small(300, 4, 3, 11, /*weighted=*/true);
  for (const std::string name : {"random-forest", "random-forest-regressor"}) {
    SCOPED_TRACE(name);
    auto est = Make(name, {{"n_estimators", "5"}, {"max_depth", "3"}, {"max_samples", "0.7"}});
    FitContext ctx;
    ctx.seed = 77;
    ASSERT_TRUE(est->Fit(t, ctx).ok());
    const Forest f = ForestOf(*est, name);
    const bool cls = name == "random-forest";
    for (size_t k = 0; k < f.trees.size(); ++k) {
      const trees::Tree& tree = f.trees[k];
      const std::vector<uint32_t> counts =
          trees::BootstrapCounts(t.rows, 0.7, trees::ForestTreeSeed(77, static_cast<int64_t>(k)));
      std::map<int32_t, std::vector<double>> sums;  // leaf -> class weights, or (weight, weighted target sum)
      for (int64_t i = 0; i < t.rows; ++i) {
        const double w = counts[static_cast<size_t>(i)] * t.weight(i);
        if (w == 0) continue;
        std::vector<double>& s = sums[tree.LeafOf(t.Row(i))];
        s.resize(cls ? 3 : 2, 0.0);
        if (cls) {
          s[static_cast<size_t>(t.labels[static_cast<size_t>(i)])] += w;
        } else {
          s[0] += w;
          s[1] += w * t.targets[static_cast<size_t>(i)];
        }
      }
      EXPECT_EQ(static_cast<int32_t>(sums.size()), tree.Leaves()) << "every leaf holds in-bag rows";
      for (const auto& [leaf, s] : sums) {
        if (cls) {
          const double w = s[0] + s[1] + s[2];
          const float* p = f.leaf_proba[k].data() + LeafOrdinal(tree, leaf) * 3;
          for (int c = 0; c < 3; ++c) EXPECT_NEAR(p[c], s[static_cast<size_t>(c)] / w, 1e-6);
        } else {
          EXPECT_NEAR(tree.nodes[static_cast<size_t>(leaf)].value, s[1] / s[0], 1e-4);
        }
      }
    }
  }
}

TEST(ForestTest, OutOfBagScoreMatchesAnIndependentComputation) {
  const data::Table t = Small(250, 4, 3, 21, /*weighted=*/false);
  for (const std::string name : {"random-forest", "random-forest-regressor"}) {
    SCOPED_TRACE(name);
    const bool cls = name == "random-forest";
    auto est = Make(name, {{"n_estimators", "12"}, {"oob_score", "true"}});
    FitContext ctx;
    ctx.seed = 5;
    ASSERT_TRUE(est->Fit(t, ctx).ok());
    auto p = est->Predict(t, 1);
    ASSERT_TRUE(p.ok());
    const double reported = MetricValue(est->ModelMetrics(t, *p), "oob_score", -99);
    const Forest f = ForestOf(*est, name);
    // Every row: the trees whose bootstrap missed it, each walked here by hand.
    double correct = 0, rows = 0, ss_res = 0, sy = 0, syy = 0;
    std::vector<std::vector<uint32_t>> counts;
    for (int64_t k = 0; k < 12; ++k) counts.push_back(trees::BootstrapCounts(t.rows, 1, trees::ForestTreeSeed(5, k)));
    for (int64_t i = 0; i < t.rows; ++i) {
      std::vector<double> acc(3, 0.0);
      int used = 0;
      for (size_t k = 0; k < f.trees.size(); ++k) {
        if (counts[k][static_cast<size_t>(i)] > 0) continue;
        const trees::Tree& tree = f.trees[k];
        int32_t n = 0;
        while (!tree.nodes[static_cast<size_t>(n)].is_leaf()) {
          const trees::TreeNode& node = tree.nodes[static_cast<size_t>(n)];
          n = t.Row(i)[node.feature] < node.threshold ? node.left : node.right;
        }
        ++used;
        if (cls) {
          const float* dist = f.leaf_proba[k].data() + LeafOrdinal(tree, n) * 3;
          for (int c = 0; c < 3; ++c) acc[static_cast<size_t>(c)] += dist[c];
        } else {
          acc[0] += tree.nodes[static_cast<size_t>(n)].value;
        }
      }
      if (used == 0) continue;
      rows += 1;
      const double y = cls ? t.labels[static_cast<size_t>(i)] : t.targets[static_cast<size_t>(i)];
      if (cls) {
        correct += (std::max_element(acc.begin(), acc.end()) - acc.begin()) == y ? 1 : 0;
      } else {
        ss_res += (y - acc[0] / used) * (y - acc[0] / used);
        sy += y;
        syy += y * y;
      }
    }
    EXPECT_GT(rows, 0.9 * t.rows);  // (1 - 1/e)^12 of the rows are in every bootstrap: almost none
    const double want = cls ? correct / rows : 1 - ss_res / (syy - sy * sy / rows);
    EXPECT_NEAR(reported, want, 1e-6);
    EXPECT_GT(want, cls ? 0.5 : 0.5);  // well above chance / the mean
    // And the OOB estimate is not the training score (every row in the bootstrap of some tree).
    const double train_score =
        MetricValue(EvaluateTask(cls ? data::TableTask::kClassification : data::TableTask::kRegression, t, *p),
                    cls ? "accuracy" : "r2");
    EXPECT_GT(train_score, want);
  }
}

TEST(ForestTest, SaveLoadGivesIdenticalPredictionsAndTheSameForestForAnyThreadCount) {
  const data::Table t = Spirals(80, 3, 9);
  auto est = Make("random-forest", {{"n_estimators", "9"}, {"criterion", "entropy"}, {"oob_score", "true"}});
  FitContext ctx;
  ctx.threads = 1;
  ASSERT_TRUE(est->Fit(t, ctx).ok());
  auto want = est->Predict(t, 2);
  ASSERT_TRUE(want.ok());
  ModelWriter w;
  est->Save(&w);
  auto reader = ModelReader::Parse(w.Encode(), "model");
  ASSERT_TRUE(reader.ok());
  auto loaded = Make("random-forest", {});
  ASSERT_TRUE(loaded->Load(*reader).ok());
  auto got = loaded->Predict(t, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value, want->value);
  EXPECT_EQ(got->proba, want->proba);
  EXPECT_EQ(MetricValue(loaded->ModelMetrics(t, *got), "oob_score"),
            MetricValue(est->ModelMetrics(t, *want), "oob_score"));
  // A regression model does not load as a classifier.
  EXPECT_EQ(Make("random-forest-regressor", {})->Load(*reader).code(), StatusCode::kDataLoss);
  // Three threads grow the same trees.
  auto three = Make("random-forest", {{"n_estimators", "9"}, {"criterion", "entropy"}, {"oob_score", "true"}});
  ctx.threads = 3;
  ASSERT_TRUE(three->Fit(t, ctx).ok());
  auto p3 = three->Predict(t, 1);
  ASSERT_TRUE(p3.ok());
  EXPECT_EQ(p3->proba, want->proba);
  const Forest a = ForestOf(*est, "random-forest"), b = ForestOf(*three, "random-forest");
  ASSERT_EQ(a.trees.size(), b.trees.size());
  for (size_t k = 0; k < a.trees.size(); ++k) {
    ASSERT_EQ(a.trees[k].nodes.size(), b.trees[k].nodes.size());
    EXPECT_EQ(a.leaf_proba[k], b.leaf_proba[k]);
  }
  // Importances: a distribution over the two features, both used by the spirals.
  const std::vector<double> imp = a.Importance();
  ASSERT_EQ(imp.size(), 2u);
  EXPECT_NEAR(imp[0] + imp[1], 1.0, 1e-9);
  EXPECT_GT(imp[0], 0.2);
  EXPECT_GT(imp[1], 0.2);
}

// The trees of tree ids r, r + world, ... grown by hand on shard r, as a single process would.
void ExpectSameTree(const trees::Tree& a, const std::vector<float>& pa, const trees::Tree& b,
                    const std::vector<float>& pb) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const trees::TreeNode &x = a.nodes[i], &y = b.nodes[i];
    EXPECT_EQ(x.left, y.left);
    EXPECT_EQ(x.feature, y.feature);
    EXPECT_EQ(x.threshold, y.threshold);
    EXPECT_EQ(x.value, y.value);
    EXPECT_EQ(x.gain, y.gain);
  }
  EXPECT_EQ(pa, pb);
}

TEST(ForestTest, DistributedFitConcatenatesTheTreesGrownOnEachShard) {
  data::Table t = Small(600, 5, 3, 31, /*weighted=*/false);
  t.dense[17] = NAN;  // a missing value travels too
  for (const std::string name : {"random-forest", "random-forest-regressor"}) {
    const bool cls = name == "random-forest";
    const std::map<std::string, std::string> params = {{"n_estimators", "7"}, {"oob_score", "true"}};
    for (int world : {2, 3}) {
      SCOPED_TRACE(name + " with " + std::to_string(world) + " workers");
      ThreadCollectiveGroup group(world);
      std::vector<Forest> got(static_cast<size_t>(world));
      std::vector<double> oob(static_cast<size_t>(world), 0);
      std::vector<Status> status(static_cast<size_t>(world), Status::Internal("not run"));
      std::vector<std::thread> workers;
      for (int r = 0; r < world; ++r) {
        workers.emplace_back([&, r] {
          auto est = CreateEstimator(name, params);
          if (!est.ok()) return;
          FitContext ctx;
          ctx.collective = group.Worker(r);
          ctx.threads = 1 + r % 2;
          ctx.seed = 8;
          const data::Table shard = ShardOf(t, r, world, 42);
          status[static_cast<size_t>(r)] = (*est)->Fit(shard, ctx);
          const size_t s = static_cast<size_t>(r);
          if (status[s].ok()) got[s] = ForestOf(**est, name, &oob[s]);
        });
      }
      for (auto& w : workers) w.join();
      for (const Status& s : status) ASSERT_TRUE(s.ok()) << s.ToString();
      ForestOptions o;
      o.name = name;
      o.trees = 7;
      if (!cls) {
        o.criterion = trees::ForestCriterion::kSquaredError;
        o.max_features_rule = trees::MaxFeaturesRule::kFraction;
      }
      for (int r = 0; r < world; ++r) {
        const data::Table shard = ShardOf(t, r, world, 42);
        trees::SketchOptions sketch;
        auto cuts = trees::ComputeCuts(shard, {}, sketch, nullptr, 1);
        ASSERT_TRUE(cuts.ok());
        const trees::BinMatrix bins = trees::BinTable(shard, *cuts, 1);
        const trees::ForestGrower grower(&shard, &bins, &*cuts, o, cls ? 3 : 0);
        for (int64_t k = r; k < 7; k += world) {
          trees::Tree tree;
          std::vector<float> proba;
          std::vector<uint32_t> counts;
          grower.Grow(trees::ForestTreeSeed(8, k), &tree, &proba, &counts);
          for (const Forest& f : got) {
            ExpectSameTree(tree, proba, f.trees[static_cast<size_t>(k)],
                           cls ? f.leaf_proba[static_cast<size_t>(k)] : std::vector<float>{});
          }
        }
      }
      for (int r = 1; r < world; ++r) EXPECT_EQ(oob[static_cast<size_t>(r)], oob[0]);
      EXPECT_GT(oob[0], cls ? 0.4 : 0.3);
    }
  }
}

TEST(ForestTest, BadParametersAndInputGiveClearErrors) {
  auto expect_invalid = [](const Status& st, const std::string& needle) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  };
  auto bad = CreateEstimator("random-forest", {{"max_features", "0"}, {"criterion", "mse"}});
  ASSERT_FALSE(bad.ok());
  expect_invalid(bad.status(), "max_features");
  expect_invalid(bad.status(), "must be in (0, 1]");
  expect_invalid(bad.status(), "criterion");
  expect_invalid(bad.status(), "gini, entropy");
  expect_invalid(CreateEstimator("random-forest-regressor", {{"criterion", "gini"}}).status(), "criterion");
  expect_invalid(CreateEstimator("random-forest", {{"max_features", "cube"}}).status(), "sqrt, log2, all");
  expect_invalid(CreateEstimator("random-forest", {{"min_samples_split", "1"}}).status(), "min_samples_split");

  const data::Table s = Spirals(30, 3, 8);
  expect_invalid(Make("random-forest", {{"bootstrap", "false"}, {"oob_score", "true"}})->Fit(s, FitContext{}),
                 "oob_score needs bootstrap");
  data::Table one = s.Select({0, 1, 2, 3});  // class 0 only
  expect_invalid(Make("random-forest", {})->Fit(one, FitContext{}), "at least two classes");
  data::Table reg = s;
  for (int32_t y : reg.labels) reg.targets.push_back(static_cast<float>(y));
  reg.targets[7] = NAN;
  expect_invalid(Make("random-forest-regressor", {})->Fit(reg, FitContext{}), "row 7 has a NaN or infinite target");
  data::Table empty;
  empty.cols = 2;
  empty.num_classes = 2;
  expect_invalid(Make("random-forest", {})->Fit(empty, FitContext{}), "random-forest:");
  auto est = Make("random-forest", {{"n_estimators", "3"}});
  EXPECT_EQ(est->Predict(s, 1).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(est->Fit(s, FitContext{}).ok());
  data::Table narrow = s;
  narrow.cols = 1;
  narrow.dense.resize(static_cast<size_t>(s.rows));
  auto p = est->Predict(narrow, 1);
  ASSERT_FALSE(p.ok());
  expect_invalid(p.status(), "random-forest: the input has 1 columns, the model was trained on 2");
}

TEST(ForestTest, DigitsFromScikitLearn) {
  const std::string path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not installed";
  data::DataConfig config;
  config.name = "csv";
  config.header = false;
  auto t = data::ReadTableFile(path, config, data::TableTask::kClassification, 64, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  t->num_classes = 10;
  std::vector<int64_t> train_rows, test_rows;
  for (int64_t i = 0; i < t->rows; ++i) (i < 1400 ? train_rows : test_rows).push_back(i);
  const data::Table train = t->Select(train_rows), test = t->Select(test_rows);
  FitContext ctx;
  ctx.threads = 2;
  auto rf = Make("random-forest", {{"n_estimators", "100"}, {"oob_score", "true"}});
  ASSERT_TRUE(rf->Fit(train, ctx).ok());
  auto p = rf->Predict(test, 2);
  ASSERT_TRUE(p.ok());
  // scikit-learn 1.2.1 RandomForestClassifier(100 trees, same rows, random_state 0..2): test accuracy 0.917 to
  // 0.927, OOB 0.970 to 0.974; chance is 0.1.
  EXPECT_GE(MetricValue(EvaluateTask(data::TableTask::kClassification, test, *p), "accuracy"), 0.89);
  EXPECT_GE(MetricValue(rf->ModelMetrics(train, *p), "oob_score"), 0.94);
}

}  // namespace
}  // namespace geomx::algorithms
