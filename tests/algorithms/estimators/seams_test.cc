// The estimator seams: parameter validation, the model file, the thread collective, the task metrics (against
// hand-computed values), sharding, and the estimator registry's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <thread>

#include "algorithms/estimators/collective.h"
#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/fit_job.h"
#include "algorithms/estimators/model_file.h"
#include "algorithms/estimators/params.h"

namespace geomx::algorithms {
namespace {

std::vector<ParamSpec> Specs() {
  return {PositiveParam("C", 1.0, "c"), ChoiceParam("penalty", "l2", {"l1", "l2"}, "p"),
          IntParam("max_iter", 100, 1, 100000, "m"), BoolParam("fit_intercept", true, "b")};
}

TEST(ParamsTest, ResolvesTypedValuesAndDefaults) {
  std::vector<ParamProblem> problems;
  ParamValues v = ResolveParams(Specs(), {{"C", "1e1"}, {"max_iter", "5.0"}}, &problems);
  ASSERT_TRUE(problems.empty());
  EXPECT_EQ(v.Number("C"), 10);
  EXPECT_EQ(v.Text("C"), "10");  // canonical text
  EXPECT_EQ(v.Int("max_iter"), 5);
  EXPECT_EQ(v.Choice("penalty"), "l2");
  EXPECT_TRUE(v.Bool("fit_intercept"));
  EXPECT_EQ(v.texts().size(), 4u);
}

TEST(ParamsTest, ReportsEveryProblemWithHints) {
  std::vector<ParamProblem> problems;
  ResolveParams(Specs(), {{"c", "1"}, {"penalty", "l3"}, {"C", "0"}, {"max_iter", "2.5"}, {"fit_intercept", "yes"}},
                &problems);
  ASSERT_EQ(problems.size(), 5u);
  std::set<std::string> text;
  for (const auto& p : problems) text.insert(p.name + ": " + p.message);
  EXPECT_TRUE(text.count("c: unknown parameter (did you mean 'C'?)"));
  EXPECT_TRUE(text.count("C: must be > 0, got 0"));
  EXPECT_TRUE(text.count("max_iter: expected an integer, got '2.5'"));
  EXPECT_TRUE(text.count("fit_intercept: expected a boolean (true or false), got 'yes'"));
  bool penalty_hint = false;
  for (const auto& p : problems) penalty_hint |= p.name == "penalty" && p.message.find("did you mean 'l1'") != std::string::npos;
  EXPECT_TRUE(penalty_hint);
}

TEST(ParamsTest, NumberWordsAreAccepted) {
  ParamSpec gamma = PositiveParam("gamma", 1.0, "g");
  gamma.choices = {"scale", "auto"};
  std::vector<ParamProblem> problems;
  ParamValues v = ResolveParams({gamma}, {{"gamma", "scale"}}, &problems);
  ASSERT_TRUE(problems.empty());
  EXPECT_TRUE(v.IsWord("gamma"));
  v = ResolveParams({gamma}, {{"gamma", "0.5"}}, &problems);
  EXPECT_FALSE(v.IsWord("gamma"));
  EXPECT_EQ(v.Number("gamma"), 0.5);
  ResolveParams({gamma}, {{"gamma", "-1"}}, &problems);
  EXPECT_EQ(problems.size(), 1u);
  EXPECT_EQ(ParamAllowedText(gamma), "number > 0, or scale, auto");
}

TEST(ModelFileTest, RoundTripsEverySectionType) {
  ModelWriter w;
  const std::vector<float> f = {1.5f, -2, 3};
  const std::vector<int64_t> i = {7, -8};
  w.PutFloats("w", f);
  w.PutInts("idx", i);
  w.PutString("name", "svm");
  w.PutNumber("rho", 0.25);
  auto r = ModelReader::Parse(w.Encode(), "m.gxm");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> f2;
  std::vector<int64_t> i2;
  std::string s;
  double d = 0;
  ASSERT_TRUE(r->GetFloats("w", &f2, 3).ok());
  ASSERT_TRUE(r->GetInts("idx", &i2).ok());
  ASSERT_TRUE(r->GetString("name", &s).ok());
  ASSERT_TRUE(r->GetNumber("rho", &d).ok());
  EXPECT_EQ(f2, f);
  EXPECT_EQ(i2, i);
  EXPECT_EQ(s, "svm");
  EXPECT_EQ(d, 0.25);
  EXPECT_EQ(r->GetFloats("w", &f2, 4).code(), StatusCode::kDataLoss);   // wrong count
  EXPECT_EQ(r->GetInts("w", &i2).code(), StatusCode::kDataLoss);        // wrong type
  EXPECT_EQ(r->GetFloats("nope", &f2).code(), StatusCode::kDataLoss);   // missing
}

// Empty arrays (a kernel SVM without support vectors, a model with no intercepts) read back empty. UBSan caught the
// reader passing an empty vector's null data() to memcpy (make sanitize, docs/sanitizers.md).
TEST(ModelFileTest, RoundTripsEmptyArrays) {
  ModelWriter w;
  w.PutFloats("none", std::vector<float>{});
  w.PutInts("nothing", std::vector<int64_t>{});
  auto r = ModelReader::Parse(w.Encode(), "m.gxm");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> f;  // data() is null
  std::vector<int64_t> i;
  ASSERT_TRUE(r->GetFloats("none", &f, 0).ok());
  ASSERT_TRUE(r->GetInts("nothing", &i, 0).ok());
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(i.empty());
}

TEST(ModelFileTest, RejectsCorruptTruncatedAndOversizedFiles) {
  ModelWriter w;
  w.PutFloats("w", std::vector<float>(100, 1.0f));
  const std::string good = w.Encode();
  std::string flipped = good;
  flipped[40] ^= 0x10;
  EXPECT_EQ(ModelReader::Parse(flipped, "m").status().code(), StatusCode::kDataLoss);
  for (size_t cut : {size_t{0}, size_t{10}, good.size() / 2, good.size() - 1}) {
    EXPECT_EQ(ModelReader::Parse(good.substr(0, cut), "m").status().code(), StatusCode::kDataLoss) << cut;
  }
  EXPECT_NE(ModelReader::Parse("hello world, not a model", "x.gxm").status().message().find("x.gxm: offset 0"),
            std::string::npos);
}

TEST(ThreadCollectiveTest, SumsAndGathersInRankOrderOverManyRounds) {
  constexpr int kWorld = 3;
  ThreadCollectiveGroup group(kWorld);
  std::vector<std::vector<float>> gathered(kWorld);
  std::vector<int> bad(kWorld, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      Collective* c = group.Worker(r);
      for (int round = 0; round < 200; ++round) {
        std::vector<float> v = {static_cast<float>(r + round), 1.0f};
        if (!c->AllReduceSum("k", v).ok() || v[0] != static_cast<float>(3 * round + 3) || v[1] != 3.0f) ++bad[r];
      }
      auto all = c->AllGather("g", std::vector<float>(static_cast<size_t>(r), static_cast<float>(r)));
      if (all.ok()) gathered[r] = *all;
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(bad[r], 0);
    EXPECT_EQ(gathered[r], (std::vector<float>{1, 2, 2}));
  }
}

TEST(MetricsTest, RankingMetricsMatchHandComputation) {
  // Query 1: relevances 2, 0, 1 scored 0.1, 0.9, 0.5 -> order rel 0, 1, 2.
  // DCG = 0 + 1/log2(3) + 3/log2(4) = 0.63093 + 1.5; IDCG = 3 + 1/log2(3) = 3.63093.
  // Query 2: all zero relevance -> NDCG counted as 1, MAP skipped.
  const std::vector<float> scores = {0.1f, 0.9f, 0.5f, 1, 2};
  const std::vector<float> rel = {2, 0, 1, 0, 0};
  const std::vector<int64_t> q = {1, 1, 1, 2, 2};
  const double ndcg1 = (1 / std::log2(3.0) + 1.5) / (3 + 1 / std::log2(3.0));
  EXPECT_NEAR(MeanNdcgAt(scores, rel, q, 10), (ndcg1 + 1) / 2, 1e-12);
  // Ranked relevant at positions 2 and 3: AP = (1/2 + 2/3) / 2.
  EXPECT_NEAR(MeanAveragePrecision(scores, rel, q), (0.5 + 2.0 / 3) / 2, 1e-12);
  // Ties are pessimistic: equal scores rank the less relevant first.
  EXPECT_NEAR(MeanNdcgAt({1, 1}, {1, 0}, {5, 5}, 10), 1 / std::log2(3.0), 1e-12);
}

TEST(MetricsTest, ClusteringAndRegressionMetrics) {
  // Clusters {0,0,1,1,1} vs labels {0,0,0,1,1}: purity (2 + 2) / 5.
  EXPECT_NEAR(ClusterPurity({0, 0, 1, 1, 1}, {0, 0, 0, 1, 1}), 0.8, 1e-12);
  // NMI of a relabelled identical partition is 1; of independent halves 0.
  EXPECT_NEAR(NormalizedMutualInfo({5, 5, 7, 7}, {1, 1, 0, 0}), 1.0, 1e-12);
  EXPECT_NEAR(NormalizedMutualInfo({0, 1, 0, 1}, {0, 0, 1, 1}), 0.0, 1e-12);
  data::Table truth;
  truth.rows = 4;
  truth.targets = {1, 2, 3, 4};
  Prediction p;
  p.value = {1, 2, 3, 6};  // errors 0, 0, 0, 2: mse 1, mae 0.5, var 5/4 -> r2 = 1 - 4/5
  Metrics m = EvaluateTask(data::TableTask::kRegression, truth, p);
  EXPECT_NEAR(MetricValue(m, "rmse"), 1.0, 1e-12);
  EXPECT_NEAR(MetricValue(m, "mae"), 0.5, 1e-12);
  EXPECT_NEAR(MetricValue(m, "r2"), 0.2, 1e-12);
}

TEST(ShardTest, ShardsPartitionRowsAndKeepQueriesWhole) {
  data::Table t;
  t.rows = 12;
  t.cols = 1;
  for (int i = 0; i < 12; ++i) {
    t.dense.push_back(static_cast<float>(i));
    t.qids.push_back(i / 3);
  }
  std::multiset<float> seen;
  for (int r = 0; r < 3; ++r) {
    const data::Table s = ShardOf(t, r, 3, 7);
    std::set<int64_t> queries(s.qids.begin(), s.qids.end());
    EXPECT_EQ(static_cast<size_t>(s.rows), 3 * queries.size());  // whole queries only
    seen.insert(s.dense.begin(), s.dense.end());
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(std::set<float>(seen.begin(), seen.end()).size(), 12u);
}

TEST(RegistryTest, UnknownAlgorithmAndParameterErrors) {
  auto none = CreateEstimator("no-such-algorithm", {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  for (const EstimatorDef* def : EstimatorRegistry::All()) {
    auto bad = CreateEstimator(def->name, {{"definitely_not_a_param", "1"}});
    ASSERT_FALSE(bad.ok()) << def->name;
    EXPECT_NE(bad.status().message().find("algorithm.definitely_not_a_param: unknown parameter"), std::string::npos);
    EXPECT_TRUE(CreateEstimator(def->name, {}).ok()) << def->name << ": defaults must be valid";
  }
}

}  // namespace
}  // namespace geomx::algorithms
