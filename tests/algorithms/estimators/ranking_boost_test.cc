// Tests of the learning-to-rank boosters - "lambdamart", "xgboost-ranker" (rank:ndcg, rank:pairwise) and "gbrank" -
// and of their per-query gradients (trees/rank_objective.h): values worked out by hand for a 3-document query, a
// naive reference (double loops over the pairs, delta NDCG by computing NDCG@k of the swapped ranking directly) on
// interleaved weighted queries, learning on letor-synthetic, the distributed fit against the single-process one,
// save/load, and clear errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/fit_job.h"
#include "algorithms/estimators/trees/rank_objective.h"
#include "algorithms/estimators/trees/tree.h"
#include "datasets/table.h"
#include "engine/base/rng.h"
#include "tests/algorithms/estimators/tree_model_util.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

std::unique_ptr<Estimator> Make(const std::string& name, const Params& params) {
  auto est = CreateEstimator(name, params);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  return est.ok() ? std::move(est).value() : nullptr;
}

// ---- the gradients ----

// Naive LambdaRank / RankNet gradients of `t` under `s`: every ordered pair of rows of a query with y_a > y_b, the
// ranking as an explicit permutation, NDCG@k of it and of it with a and b swapped.
void NaiveGradients(const data::Table& t, const std::vector<float>& s, bool ndcg, int k, std::vector<double>* g,
                    std::vector<double>* h) {
  g->assign(static_cast<size_t>(t.rows), 0.0);
  h->assign(static_cast<size_t>(t.rows), 0.0);
  std::vector<int64_t> qids = t.qids;
  std::sort(qids.begin(), qids.end());
  qids.erase(std::unique(qids.begin(), qids.end()), qids.end());
  for (int64_t q : qids) {
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < t.rows; ++i) {
      if (t.qids[static_cast<size_t>(i)] == q) rows.push_back(i);
    }
    std::vector<int64_t> perm = rows;  // by descending score, ties in row order
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return s[a] > s[b]; });
    const int64_t size = static_cast<int64_t>(rows.size());
    const int64_t kk = k > 0 ? std::min<int64_t>(k, size) : size;
    auto dcg = [&](const std::vector<int64_t>& order) {
      double sum = 0;
      for (int64_t p = 0; p < kk; ++p) {
        sum += (std::pow(2.0, t.targets[static_cast<size_t>(order[static_cast<size_t>(p)])]) - 1) / std::log2(p + 2.0);
      }
      return sum;
    };
    std::vector<int64_t> ideal = rows;
    std::stable_sort(ideal.begin(), ideal.end(), [&](int64_t a, int64_t b) {
      return t.targets[static_cast<size_t>(a)] > t.targets[static_cast<size_t>(b)];
    });
    const double idcg = dcg(ideal);
    if (ndcg && idcg == 0) continue;
    for (int64_t a : rows) {
      for (int64_t b : rows) {
        if (!(t.targets[static_cast<size_t>(a)] > t.targets[static_cast<size_t>(b)])) continue;
        double z = 1;
        if (ndcg) {
          std::vector<int64_t> swapped = perm;
          auto pa = std::find(swapped.begin(), swapped.end(), a), pb = std::find(swapped.begin(), swapped.end(), b);
          std::iter_swap(pa, pb);
          z = std::fabs(dcg(perm) - dcg(swapped)) / idcg;
        }
        const double w = 0.5 * (t.weight(a) + t.weight(b)) * z;
        const double p = 1 / (1 + std::exp(-(static_cast<double>(s[a]) - s[b])));
        (*g)[static_cast<size_t>(a)] += w * (p - 1);
        (*g)[static_cast<size_t>(b)] -= w * (p - 1);
        (*h)[static_cast<size_t>(a)] += 2 * w * p * (1 - p);
        (*h)[static_cast<size_t>(b)] += 2 * w * p * (1 - p);
      }
    }
  }
}

void Gradients(const data::Table& t, const std::vector<float>& s, trees::RankLoss loss, int k, int threads,
               std::vector<float>* g, std::vector<float>* h) {
  trees::RankGradientOptions o;
  o.loss = loss;
  o.ndcg_truncation = k;
  trees::RankGradients(o, t, trees::GroupQueries(t.qids), s.data(), threads, g, h);
}

// One query of three rows, relevance 0, 1, 2, all scores 0 (so the ranking is the row order).
data::Table ThreeDocs() {
  data::Table t;
  t.rows = 3;
  t.cols = 1;
  t.dense = {0, 1, 2};
  t.targets = {0, 1, 2};
  t.qids = {5, 5, 5};
  return t;
}

TEST(RankGradientsTest, HandComputedThreeDocumentQuery) {
  const data::Table t = ThreeDocs();
  const std::vector<float> s = {0, 0, 0};
  std::vector<float> g, h;
  // Pairwise: every pair has p = 1/2: lambda -1/2 on the better row, +1/2 on the worse; hessian 2 x 1/4 = 1/2.
  Gradients(t, s, trees::RankLoss::kPairwise, 0, 1, &g, &h);
  EXPECT_NEAR(g[0], 1.0, 1e-6);
  EXPECT_NEAR(g[1], 0.0, 1e-6);
  EXPECT_NEAR(g[2], -1.0, 1e-6);
  for (float x : h) EXPECT_NEAR(x, 1.0, 1e-6);
  // NDCG: gains 0, 1, 3 at positions 0, 1, 2; IDCG = 3 + 1/log2(3) = 3.630930.
  //   (1 over 0): |1 x (1 - 1/log2 3)| / IDCG = 0.101646;  (2 over 0): |3 x (1 - 1/2)| / IDCG = 0.413115;
  //   (2 over 1): |2 x (1/log2 3 - 1/2)| / IDCG = 0.072119.  g = -Z/2 on the better row, +Z/2 on the worse; h = Z/2.
  Gradients(t, s, trees::RankLoss::kNdcg, 0, 1, &g, &h);
  EXPECT_NEAR(g[0], 0.5 * (0.101646 + 0.413115), 1e-5);
  EXPECT_NEAR(g[1], 0.5 * (-0.101646 + 0.072119), 1e-5);
  EXPECT_NEAR(g[2], -0.5 * (0.413115 + 0.072119), 1e-5);
  EXPECT_NEAR(h[0], 0.5 * (0.101646 + 0.413115), 1e-5);
  EXPECT_NEAR(h[1], 0.5 * (0.101646 + 0.072119), 1e-5);
  EXPECT_NEAR(h[2], 0.5 * (0.413115 + 0.072119), 1e-5);
  // NDCG@1: only swaps with position 0 change it; IDCG@1 = 3. (1 over 0): 1/3; (2 over 0): 1.
  Gradients(t, s, trees::RankLoss::kNdcg, 1, 1, &g, &h);
  EXPECT_NEAR(g[0], 0.5 * (1.0 / 3 + 1.0), 1e-5);
  EXPECT_NEAR(g[1], -0.5 / 3, 1e-5);
  EXPECT_NEAR(g[2], -0.5, 1e-5);
  // A query without a relevant row gives nothing under NDCG.
  data::Table zero = t;
  zero.targets = {0, 0, 0};
  Gradients(zero, s, trees::RankLoss::kNdcg, 0, 1, &g, &h);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(g[i], 0.0f);
}

TEST(RankGradientsTest, MatchANaiveImplementationOnInterleavedWeightedQueries) {
  Rng rng(3);
  data::Table t;
  t.cols = 1;
  for (int i = 0; i < 200; ++i) {  // 9 queries of varied sizes, rows interleaved
    t.qids.push_back(static_cast<int64_t>(rng.Below(9)) * 7 - 20);
    t.targets.push_back(static_cast<float>(rng.Below(5)));
    t.weights.push_back(static_cast<float>(0.5 + rng.Uniform()));
    t.dense.push_back(0);
    ++t.rows;
  }
  std::vector<float> s(static_cast<size_t>(t.rows));
  for (float& x : s) x = static_cast<float>(rng.Below(7)) * 0.5f - 1.5f;  // with ties
  for (const auto& [loss, k] : std::vector<std::pair<trees::RankLoss, int>>{
           {trees::RankLoss::kPairwise, 0}, {trees::RankLoss::kNdcg, 0}, {trees::RankLoss::kNdcg, 5},
           {trees::RankLoss::kNdcg, 10}, {trees::RankLoss::kNdcg, 1000}}) {
    SCOPED_TRACE("ndcg " + std::to_string(loss == trees::RankLoss::kNdcg) + " k " + std::to_string(k));
    std::vector<double> want_g, want_h;
    NaiveGradients(t, s, loss == trees::RankLoss::kNdcg, k, &want_g, &want_h);
    for (int threads : {1, 3}) {
      std::vector<float> g, h;
      Gradients(t, s, loss, k, threads, &g, &h);
      ASSERT_EQ(g.size(), want_g.size());
      double norm = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_NEAR(g[i], want_g[i], 1e-5 * (1 + std::fabs(want_g[i]))) << "row " << i;
        EXPECT_NEAR(h[i], want_h[i], 1e-5 * (1 + std::fabs(want_h[i]))) << "row " << i;
        norm += std::fabs(want_g[i]);
      }
      EXPECT_GT(norm, 0.1);  // not a vacuous comparison
    }
  }
}

TEST(RankGradientsTest, PairwiseLossAndNdcgSums) {
  const data::Table t = ThreeDocs();
  double loss = 0, weight = 0;
  const std::vector<float> s = {0, 1, 3};
  trees::PairwiseLogLoss(t, trees::GroupQueries(t.qids), s.data(), &loss, &weight);
  EXPECT_NEAR(loss, std::log1p(std::exp(-1.0)) + std::log1p(std::exp(-3.0)) + std::log1p(std::exp(-2.0)), 1e-9);
  EXPECT_EQ(weight, 3);
  EXPECT_NEAR(trees::SumNdcgAt(t, trees::GroupQueries(t.qids), s, 10), 1.0, 1e-9);
}

// ---- the estimators ----

struct Letor {
  data::Table train, test;
};

Letor LetorSynthetic(int64_t train_rows, int64_t test_rows) {
  data::DataConfig config;
  config.name = "letor-synthetic";
  config.synthetic_train = train_rows;
  config.synthetic_test = test_rows;
  config.synthetic_shape = {20};
  data::TableOptions options;
  options.task = data::TableTask::kRanking;
  auto splits = data::OpenTable(config, options);
  EXPECT_TRUE(splits.ok()) << splits.status().ToString();
  if (!splits.ok()) return {};
  return {std::move(splits->train), std::move(splits->test)};
}

double TestNdcg(const Estimator& est, const data::Table& t) {
  auto p = est.Predict(t, 2);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? MeanNdcgAt(p->value, t.targets, t.qids, 10) : 0;
}

class MetricLog : public FitObserver {
 public:
  explicit MetricLog(std::string name) : name_(std::move(name)) {}
  void OnStep(int64_t, const Metrics& m) override { values.push_back(MetricValue(m, name_, std::nan(""))); }
  std::vector<double> values;

 private:
  std::string name_;
};

struct Case {
  std::string name;
  Params params;
  std::string tree_prefix;  // the model file's section prefix
};

std::vector<Case> Cases(int rounds) {
  const std::string r = std::to_string(rounds);
  return {{"lambdamart", {{"n_estimators", r}, {"num_leaves", "16"}, {"min_child_weight", "1"}}, "lambdamart"},
          {"lambdamart",
           {{"n_estimators", r}, {"num_leaves", "16"}, {"second_order", "false"}, {"lambdarank_truncation_level", "10"},
            {"min_child_weight", "5"}},
           "lambdamart"},
          {"xgboost-ranker", {{"n_estimators", r}, {"max_depth", "4"}, {"eta", "0.1"}}, "xgboost-ranker"},
          {"xgboost-ranker",
           {{"n_estimators", r}, {"max_depth", "4"}, {"eta", "0.1"}, {"objective", "rank:pairwise"}},
           "xgboost-ranker"},
          {"gbrank", {{"n_estimators", r}, {"max_depth", "4"}, {"tau", "0.5"}}, "gbrank"},
          {"gbrank", {{"n_estimators", r}, {"max_depth", "3"}, {"trees_per_round", "3"}}, "gbrank"}};
}

TEST(RankingBoostTest, LearnsLetorSyntheticAndTrainingNdcgRises) {
  const Letor d = LetorSynthetic(4000, 2000);
  ASSERT_GT(d.train.rows, 0);
  // A random order's NDCG@10 on the test queries.
  Rng rng(11);
  std::vector<float> random(static_cast<size_t>(d.test.rows));
  for (float& x : random) x = static_cast<float>(rng.Uniform());
  const double random_ndcg = MeanNdcgAt(random, d.test.targets, d.test.qids, 10);
  for (const Case& c : Cases(30)) {
    SCOPED_TRACE(c.name + " " + (c.params.count("objective") ? c.params.at("objective") : "") +
                 (c.params.count("second_order") ? " first-order" : ""));
    auto est = Make(c.name, c.params);
    ASSERT_NE(est, nullptr);
    MetricLog train_ndcg("train_ndcg@10"), eval_ndcg("ndcg@10");
    FitContext ctx;
    ctx.threads = 2;
    ctx.observer = c.name == "gbrank" ? &eval_ndcg : &train_ndcg;
    ctx.eval = &d.test;
    ASSERT_TRUE(est->Fit(d.train, ctx).ok());
    const std::vector<double>& curve = c.name == "gbrank" ? eval_ndcg.values : train_ndcg.values;
    ASSERT_EQ(curve.size(), 30u);
    EXPECT_GT(curve[29], curve[0] + 0.03) << "NDCG@10 after 1 and 30 rounds";
    EXPECT_GT(curve[29], curve[4]);
    const double ndcg = TestNdcg(*est, d.test);
    EXPECT_GT(ndcg, random_ndcg + 0.15) << "test NDCG@10 " << ndcg << " vs random order " << random_ndcg;
    if (c.name == "gbrank") {
      EXPECT_NEAR(ndcg, curve.back(), 1e-6);  // the final scaling keeps the order
    }
  }
}

TEST(RankingBoostTest, EarlyStoppingOnEvalNdcgKeepsTheBestRound) {
  const Letor d = LetorSynthetic(1000, 1000);
  auto est = Make("lambdamart", {{"n_estimators", "300"}, {"learning_rate", "0.9"}, {"num_leaves", "64"},
                                 {"min_child_weight", "0"}, {"early_stopping_round", "5"}});
  MetricLog log("ndcg@10");
  FitContext ctx;
  ctx.eval = &d.test;
  ctx.observer = &log;
  ASSERT_TRUE(est->Fit(d.train, ctx).ok());
  ASSERT_LT(log.values.size(), 300u);
  const size_t best = static_cast<size_t>(std::max_element(log.values.begin(), log.values.end()) - log.values.begin());
  EXPECT_EQ(log.values.size(), best + 6);
  EXPECT_NEAR(TestNdcg(*est, d.test), log.values[best], 1e-6);
}

using testing::EnsembleOf;

// Integer features (fewer distinct values than a sketch holds, so every worker count gets the same bins), queries of
// 6..14 rows with relevance 0..3 from the features plus noise.
data::Table IntegerQueries(int queries, uint64_t seed) {
  Rng rng(seed);
  data::Table t;
  t.cols = 5;
  for (int q = 0; q < queries; ++q) {
    const int docs = 6 + static_cast<int>(rng.Below(9));
    for (int d = 0; d < docs; ++d) {
      int score = 0;
      for (int j = 0; j < 5; ++j) {
        const int v = static_cast<int>(rng.Below(20));
        t.dense.push_back(static_cast<float>(v));
        if (j < 3) score += v * (j + 1);
      }
      score += static_cast<int>(rng.Below(15));
      t.targets.push_back(static_cast<float>(std::min(3, score / 30)));
      t.qids.push_back(1000 + q);
      ++t.rows;
    }
  }
  return t;
}

// Workers as threads, each holding `shards[r]`; every worker's ensemble (or its error).
std::vector<Result<trees::Ensemble>> FitAcross(const Case& c, const std::vector<data::Table>& shards) {
  const int world = static_cast<int>(shards.size());
  ThreadCollectiveGroup group(world);
  std::vector<Result<trees::Ensemble>> out(static_cast<size_t>(world), Status::Internal("not run"));
  std::vector<std::thread> workers;
  for (int r = 0; r < world; ++r) {
    workers.emplace_back([&, r] {
      auto est = CreateEstimator(c.name, c.params);
      if (!est.ok()) return;
      FitContext ctx;
      ctx.collective = group.Worker(r);
      ctx.threads = 1 + r % 2;
      const Status st = (*est)->Fit(shards[static_cast<size_t>(r)], ctx);
      out[static_cast<size_t>(r)] = st.ok() ? Result<trees::Ensemble>(EnsembleOf(**est, c.tree_prefix)) : st;
    });
  }
  for (auto& w : workers) w.join();
  return out;
}

void ExpectSameTrees(const trees::Ensemble& a, const trees::Ensemble& b, double leaf_tol) {
  ASSERT_EQ(a.trees.size(), b.trees.size());
  for (size_t t = 0; t < a.trees.size(); ++t) {
    ASSERT_EQ(a.trees[t].nodes.size(), b.trees[t].nodes.size()) << "tree " << t;
    for (size_t i = 0; i < a.trees[t].nodes.size(); ++i) {
      const trees::TreeNode &x = a.trees[t].nodes[i], &y = b.trees[t].nodes[i];
      EXPECT_EQ(x.feature, y.feature) << "tree " << t << " node " << i;
      EXPECT_EQ(x.threshold, y.threshold) << "tree " << t << " node " << i;
      EXPECT_NEAR(x.value, y.value, leaf_tol * std::max(1.0f, std::fabs(x.value))) << "tree " << t << " node " << i;
    }
  }
}

TEST(RankingBoostTest, DistributedFitGrowsTheSingleProcessTrees) {
  const data::Table t = IntegerQueries(120, 5);
  for (const Case& c : Cases(4)) {
    SCOPED_TRACE(c.name + " " + (c.params.count("objective") ? c.params.at("objective") : "") +
                 (c.params.count("second_order") ? " first-order" : ""));
    Case small = c;
    if (c.name != "gbrank") small.params["max_bin"] = "32";
    auto single = Make(small.name, small.params);
    ASSERT_TRUE(single->Fit(t, FitContext{}).ok());
    const trees::Ensemble want = EnsembleOf(*single, small.tree_prefix);
    ASSERT_EQ(want.trees.size(), small.params.count("trees_per_round") ? 12u : 4u);
    ASSERT_GT(want.trees[0].nodes.size(), 3u);
    for (int world : {2, 3, 4}) {
      SCOPED_TRACE(std::to_string(world) + " workers");
      std::vector<data::Table> shards;
      for (int r = 0; r < world; ++r) shards.push_back(ShardOf(t, r, world, 42));  // whole queries (fit_job)
      for (const data::Table& s : shards) {
        for (int64_t i = 0; i < s.rows; ++i) {
          const int64_t q = s.qids[static_cast<size_t>(i)];
          EXPECT_EQ(std::count(s.qids.begin(), s.qids.end(), q), std::count(t.qids.begin(), t.qids.end(), q));
        }
      }
      const std::vector<Result<trees::Ensemble>> got = FitAcross(small, shards);
      for (const auto& e : got) {
        ASSERT_TRUE(e.ok()) << e.status().ToString();
        ExpectSameTrees(want, *e, 1e-4);
      }
      for (size_t r = 1; r < got.size(); ++r) ExpectSameTrees(*got[0], *got[r], 0);
    }
  }
}

TEST(RankingBoostTest, AQuerySplitAcrossWorkersIsRejectedByEveryWorker) {
  const data::Table t = IntegerQueries(20, 6);
  std::vector<int64_t> even, odd;  // by row: queries split in two
  for (int64_t i = 0; i < t.rows; ++i) (i % 2 == 0 ? even : odd).push_back(i);
  for (const Case& c : Cases(2)) {
    const std::vector<Result<trees::Ensemble>> got = FitAcross(c, {t.Select(even), t.Select(odd)});
    for (const auto& e : got) {
      ASSERT_FALSE(e.ok()) << c.name;
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << e.status().ToString();
      EXPECT_NE(e.status().message().find("whole on one worker"), std::string::npos) << e.status().ToString();
    }
  }
}

TEST(RankingBoostTest, SaveLoadGivesIdenticalScores) {
  const data::Table t = IntegerQueries(60, 7);
  for (const Case& c : Cases(5)) {
    SCOPED_TRACE(c.name);
    auto est = Make(c.name, c.params);
    ASSERT_TRUE(est->Fit(t, FitContext{}).ok());
    ModelWriter w;
    est->Save(&w);
    auto r = ModelReader::Parse(w.Encode(), "m");
    ASSERT_TRUE(r.ok());
    auto loaded = Make(c.name, c.params);
    ASSERT_TRUE(loaded->Load(*r).ok());
    auto a = est->Predict(t, 1), b = loaded->Predict(t, 2);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->value, b->value);
    std::vector<float> first(a->value.begin(), a->value.begin() + 10);
    EXPECT_NE(*std::max_element(first.begin(), first.end()), *std::min_element(first.begin(), first.end()));
    // A model file without its trees is a clear error.
    ModelWriter partial;
    if (c.name == "gbrank") {
      partial.PutInts("gbrank.state", std::vector<int64_t>{5, 0});
    } else {
      partial.PutInts(c.tree_prefix + ".objective", std::vector<int64_t>{4, 1, -1});
    }
    auto pr = ModelReader::Parse(partial.Encode(), "partial");
    ASSERT_TRUE(pr.ok());
    EXPECT_EQ(Make(c.name, c.params)->Load(*pr).code(), StatusCode::kDataLoss);
  }
}

TEST(RankingBoostTest, BadInputGivesClearErrors) {
  const data::Table t = IntegerQueries(10, 8);
  auto expect_invalid = [](const Status& st, const std::string& needle) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  };
  for (const Case& c : Cases(3)) {
    SCOPED_TRACE(c.name);
    data::Table no_qids = t;
    no_qids.qids.clear();
    expect_invalid(Make(c.name, c.params)->Fit(no_qids, FitContext{}), "query ids");
    data::Table nan = t;
    nan.targets[4] = NAN;
    expect_invalid(Make(c.name, c.params)->Fit(nan, FitContext{}), "row 4 has a NaN or infinite relevance");
    data::Table no_targets = t;
    no_targets.targets.clear();
    expect_invalid(Make(c.name, c.params)->Fit(no_targets, FitContext{}), "relevance");
    data::Table empty;
    empty.cols = 2;
    expect_invalid(Make(c.name, c.params)->Fit(empty, FitContext{}), c.name + ":");
    auto est = Make(c.name, c.params);
    EXPECT_EQ(est->Predict(t, 1).status().code(), StatusCode::kFailedPrecondition);
    ASSERT_TRUE(est->Fit(t, FitContext{}).ok());
    data::Table narrow = t;
    narrow.cols = 1;
    narrow.dense.resize(static_cast<size_t>(t.rows));
    expect_invalid(est->Predict(narrow, 1).status(), "the input has 1 columns, the model was trained on 5");
  }
  data::Table negative = t;
  negative.targets[2] = -1;
  expect_invalid(Make("lambdamart", {})->Fit(negative, FitContext{}), "row 2 has relevance");
  // rank:pairwise accepts any finite relevance.
  EXPECT_TRUE(Make("xgboost-ranker", {{"objective", "rank:pairwise"}, {"n_estimators", "2"}})
                  ->Fit(negative, FitContext{})
                  .ok());
  auto bad = CreateEstimator("lambdamart", {{"lambdarank_truncation_level", "-1"}, {"learning_rate", "0"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("algorithm.lambdarank_truncation_level"), std::string::npos);
  EXPECT_NE(CreateEstimator("gbrank", {{"tau", "0"}}).status().message().find("algorithm.tau"), std::string::npos);
  EXPECT_FALSE(CreateEstimator("xgboost-ranker", {{"objective", "binary:logistic"}}).ok());
}

}  // namespace
}  // namespace geomx::algorithms
