// Tests of ranksvm (algorithms/estimators/ranksvm.cc) against independent references: pairs listed by hand for a
// small two-query table, the difference rows computed here, a perfectly rankable set (NDCG@10 = 1), LinearSVC's
// formulation (a binary linear SVM without intercept on the materialised differences, half of them negated), and
// the single-process fit for the distributed one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/dual_cd.h"
#include "algorithms/estimators/estimator.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;
using Pair = std::pair<int64_t, int64_t>;


// Two queries with interleaved rows: qid 7 = rows 0, 2, 3 (relevance 2, 0, 1); qid 3 = rows 1, 4, 5 (1, 1, 0).
data::Table TwoQueries() {
  data::Table t;
  t.rows = 6;
  t.cols = 3;
  t.dense = {1, 0, 2,  0, 3, 0,  -1, 1, 0,  0.5f, 0, 0,  2, 2, 2,  0, 0, -4};
  t.qids = {7, 3, 7, 7, 3, 3};
  t.targets = {2, 1, 0, 1, 1, 0};
  t.source = "two-queries";
  return t;
}

// LETOR-like: `queries` queries of `docs` rows, `d` features ~ N(0, 1); relevance 0..2 from a hidden linear score
// plus noise, cut at per-query terciles. With gap > 0 rows whose score falls within gap of a cut are redrawn, so
// the grades are separable by the hidden w.
data::Table Letor(int queries, int docs, int d, double noise, double gap, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0.0, 1.0);
  std::vector<double> hidden(static_cast<size_t>(d));  // the same for every seed: train and test sets agree
  std::mt19937_64 hidden_rng(1234);
  for (double& v : hidden) v = n01(hidden_rng);
  data::Table t;
  t.cols = d;
  t.source = "letor";
  for (int q = 0; q < queries; ++q) {
    for (int k = 0; k < docs;) {
      std::vector<double> x(static_cast<size_t>(d));
      double score = 0;
      for (int j = 0; j < d; ++j) {
        x[static_cast<size_t>(j)] = n01(rng);
        score += hidden[static_cast<size_t>(j)] * x[static_cast<size_t>(j)];
      }
      score += noise * n01(rng);
      if (gap > 0 && (std::fabs(score + 1) < gap || std::fabs(score - 1) < gap)) continue;
      for (double v : x) t.dense.push_back(static_cast<float>(v));
      t.targets.push_back(score > 1 ? 2.0f : (score > -1 ? 1.0f : 0.0f));
      t.qids.push_back(1000 + q);
      ++t.rows;
      ++k;
    }
  }
  return t;
}

std::unique_ptr<Estimator> Make(const Params& params) {
  auto e = CreateEstimator("ranksvm", params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<Estimator> FitLocal(const Params& params, const data::Table& t) {
  auto e = Make(params);
  FitContext ctx;
  Status st = e->Fit(t, ctx);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

std::vector<float> Scores(const Estimator& e, const data::Table& t) {
  auto p = e.Predict(t, 1);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->value : std::vector<float>{};
}

std::vector<float> SavedWeights(const Estimator& e) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "model");
  EXPECT_TRUE(r.ok());
  std::vector<float> out;
  EXPECT_TRUE(r->GetFloats("linear.weights", &out).ok());
  return out;
}

TEST(RankSvmPairs, TwoQueriesByHand) {
  const data::Table t = TwoQueries();
  const std::vector<Pair> expected = {{0, 3}, {0, 2}, {3, 2}, {1, 5}, {4, 5}};
  EXPECT_EQ(RankingPairs(t, 0, 1), expected);
  EXPECT_EQ(RankingPairs(t.ToSparse(), 0, 1), expected);

  // The examples are the differences x_a - x_b, read back through unit vectors.
  for (const data::Table& table : {t, t.ToSparse()}) {
    PairExamples examples(table, expected, 1);
    ASSERT_EQ(examples.size(), 5);
    for (int64_t k = 0; k < 5; ++k) {
      const auto [a, b] = expected[static_cast<size_t>(k)];
      double norm = 0;
      for (int64_t j = 0; j < 3; ++j) {
        const float diff = t.Row(a)[j] - t.Row(b)[j];
        std::vector<float> unit(3, 0.0f);
        unit[static_cast<size_t>(j)] = 1.0f;
        EXPECT_FLOAT_EQ(examples.Dot(k, unit.data()), diff) << "pair " << k << " feature " << j;
        std::vector<float> acc(3, 0.0f);
        examples.Axpy(k, 2.0f, acc.data());
        EXPECT_FLOAT_EQ(acc[static_cast<size_t>(j)], 2 * diff);
        norm += static_cast<double>(diff) * diff;
      }
      EXPECT_NEAR(examples.SquaredNorm(k), norm, 1e-9);
    }
  }
}

TEST(RankSvmPairs, SamplingIsAUniformSubset) {
  const data::Table t = TwoQueries();
  const std::set<Pair> query7 = {{0, 3}, {0, 2}, {3, 2}};
  std::map<Pair, int> hits;
  const int trials = 3000;
  for (int s = 0; s < trials; ++s) {
    const std::vector<Pair> pairs = RankingPairs(t, 2, static_cast<uint64_t>(s));
    ASSERT_EQ(pairs.size(), 4u);  // 2 of query 7's 3, both of query 3's 2
    EXPECT_TRUE(query7.count(pairs[0]) && query7.count(pairs[1]) && pairs[0] != pairs[1]);
    EXPECT_EQ(pairs[2], Pair(1, 5));
    EXPECT_EQ(pairs[3], Pair(4, 5));
    ++hits[pairs[0]];
    ++hits[pairs[1]];
  }
  for (const Pair& p : query7) EXPECT_NEAR(hits[p] / static_cast<double>(trials), 2.0 / 3.0, 0.04);
}

TEST(RankSvm, PerfectlyRankableSetGetsNdcgOne) {
  const data::Table train = Letor(20, 15, 5, 0.0, 0.3, 1);
  auto e = FitLocal({{"C", "10"}, {"tol", "1e-4"}, {"max_iter", "20000"}}, train);
  const std::vector<float> s = Scores(*e, train);
  EXPECT_NEAR(MeanNdcgAt(s, train.targets, train.qids, 10), 1.0, 1e-12);
  const data::Table test = Letor(20, 15, 5, 0.0, 0.3, 2);
  EXPECT_GT(MeanNdcgAt(Scores(*e, test), test.targets, test.qids, 10), 0.95);
}

TEST(RankSvm, MatchesALinearSvmOnTheMaterialisedPairs) {
  // LinearSVC's formulation: a binary SVM without intercept on the difference rows, every other pair negated
  // (label -1, x_b - x_a) so that both classes occur; the problem is the same, so is the optimum.
  const data::Table t = Letor(8, 10, 4, 0.5, 0.0, 3);
  const std::vector<Pair> pairs = RankingPairs(t, 0, 1);
  data::Table diff;
  diff.cols = t.cols;
  diff.num_classes = 2;
  for (size_t k = 0; k < pairs.size(); ++k) {
    const double sign = k % 2 == 0 ? 1.0 : -1.0;
    for (int64_t j = 0; j < t.cols; ++j) {
      diff.dense.push_back(static_cast<float>(sign * (static_cast<double>(t.Row(pairs[k].first)[j]) - t.Row(pairs[k].second)[j])));
    }
    diff.labels.push_back(k % 2 == 0 ? 1 : 0);
    ++diff.rows;
  }
  for (const char* loss : {"squared_hinge", "hinge"}) {
    const Params common = {{"C", "0.5"}, {"loss", loss}, {"tol", "1e-6"}, {"max_iter", "100000"}};
    auto rank = FitLocal(common, t);
    Params svc_params = common;
    svc_params["fit_intercept"] = "false";
    auto svc = CreateEstimator("linear-svm", svc_params);
    ASSERT_TRUE(svc.ok());
    FitContext ctx;
    ASSERT_TRUE((*svc)->Fit(diff, ctx).ok());
    const std::vector<float> a = SavedWeights(*rank), b = SavedWeights(**svc);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-3) << loss << " weight " << j;
    EXPECT_EQ(MetricValue(rank->ModelMetrics(t, {}), "training_pairs"), static_cast<double>(pairs.size()));
  }
}

TEST(RankSvm, DistributedReachesLocalNdcg) {
  const data::Table train = Letor(60, 20, 10, 0.7, 0.0, 4), test = Letor(30, 20, 10, 0.7, 0.0, 5);
  const Params p = {{"C", "0.1"}, {"outer_rounds", "40"}, {"local_epochs", "2"}};
  auto local = FitLocal(p, train);
  const double local_ndcg = MeanNdcgAt(Scores(*local, test), test.targets, test.qids, 10);
  const int world = 2;
  // Whole queries per worker (query q to worker q % 2).
  std::vector<std::vector<int64_t>> index(world);
  for (int64_t i = 0; i < train.rows; ++i) index[static_cast<size_t>((train.qids[static_cast<size_t>(i)] - 1000) % world)].push_back(i);
  std::vector<data::Table> shards;
  for (const auto& ix : index) shards.push_back(train.Select(ix));
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> est;
  for (int r = 0; r < world; ++r) est.push_back(Make(p));
  std::vector<Status> status(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      FitContext ctx;
      ctx.collective = group.Worker(r);
      status[static_cast<size_t>(r)] = est[static_cast<size_t>(r)]->Fit(shards[static_cast<size_t>(r)], ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& s : status) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(SavedWeights(*est[0]), SavedWeights(*est[1]));
  const double ndcg = MeanNdcgAt(Scores(*est[0], test), test.targets, test.qids, 10);
  EXPECT_GE(ndcg, local_ndcg - 0.02);
  EXPECT_GT(local_ndcg, 0.8);
}

TEST(RankSvm, SaveLoadAndErrors) {
  const data::Table t = Letor(5, 8, 4, 0.5, 0.0, 6);
  auto e = FitLocal({}, t);
  ModelWriter w;
  e->Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "m");
  ASSERT_TRUE(r.ok());
  auto loaded = Make({});
  ASSERT_TRUE(loaded->Load(*r).ok());
  EXPECT_EQ(Scores(*e, t), Scores(*loaded, t));

  for (const Params& p : std::vector<Params>{{{"C", "0"}}, {{"loss", "logistic"}}, {{"max_pairs_per_query", "-1"}},
                                             {{"tol", "-1"}}, {{"epsilon", "1"}}}) {
    auto bad = CreateEstimator("ranksvm", p);
    EXPECT_FALSE(bad.ok()) << p.begin()->first;
  }
  const data::Table narrow = Letor(2, 5, 3, 0.5, 0.0, 7);
  auto p = e->Predict(narrow, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);

  FitContext ctx;
  data::Table no_qids = t;
  no_qids.qids.clear();
  EXPECT_EQ(Make({})->Fit(no_qids, ctx).code(), StatusCode::kInvalidArgument);
  data::Table flat = t;
  std::fill(flat.targets.begin(), flat.targets.end(), 1.0f);
  EXPECT_EQ(Make({})->Fit(flat, ctx).code(), StatusCode::kInvalidArgument);
  data::Table empty;
  empty.cols = 4;
  EXPECT_EQ(Make({})->Fit(empty, ctx).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::algorithms
