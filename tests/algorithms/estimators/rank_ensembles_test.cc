// Tests of rankboost (algorithms/estimators/rankboost.cc) and adarank (adarank.cc) against naive references written
// here from the papers: RankBoost by a loop over every pair and every threshold, AdaRank by ranking every query with
// every feature through MeanNdcgAt / MeanAveragePrecision; both against the best single feature on letor-synthetic,
// distributed (ThreadCollectiveGroup, whole queries per worker) against one process, the model file, and bad input.
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

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/rank_ensembles.h"
#include "datasets/table.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;
using Pair = std::pair<int64_t, int64_t>;

// Two queries with interleaved rows and few distinct values per feature (so the quantile cuts are every midpoint
// between neighbouring values): qid 1 = rows 0, 2, 3, 6; qid 2 = rows 1, 4, 5, 7.
data::Table TwoQueries() {
  data::Table t;
  t.rows = 8;
  t.cols = 3;
  t.dense = {3, 0, 1,  1, 2, 0,  1, 1, 2,  2, 0, 0,  0, 1, 1,  2, 2, 2,  0, 3, 1,  1, 0, 0};
  t.qids = {1, 2, 1, 1, 2, 2, 1, 2};
  t.targets = {2, 1, 0, 1, 0, 2, 0, 0};
  t.source = "two-queries";
  return t;
}

// `queries` queries of `docs` rows and `d` N(0, 1) features, relevance 0..3 from a noisy linear score.
data::Table RandomQueries(int queries, int docs, int d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0.0, 1.0);
  data::Table t;
  t.cols = d;
  t.source = "random-queries";
  for (int q = 0; q < queries; ++q) {
    for (int k = 0; k < docs; ++k) {
      double s = 0;
      for (int j = 0; j < d; ++j) {
        const double x = n01(rng);
        t.dense.push_back(static_cast<float>(x));
        s += (j % 2 == 0 ? 1.0 : -0.5) * x / (1 + j);
      }
      s += 0.7 * n01(rng);
      t.targets.push_back(static_cast<float>(std::clamp(std::floor(s + 1.5), 0.0, 3.0)));
      t.qids.push_back(100 + q);
      ++t.rows;
    }
  }
  return t;
}

std::unique_ptr<Estimator> Make(const std::string& name, const Params& params) {
  auto e = CreateEstimator(name, params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<Estimator> FitLocal(const std::string& name, const Params& params, const data::Table& t) {
  auto e = Make(name, params);
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

// The weak rankers of a fitted model, read back from its model file.
struct Rankers {
  std::vector<int64_t> features;
  std::vector<float> thresholds;  // rankboost only
  std::vector<float> alphas;
};
Rankers SavedRankers(const Estimator& e, const std::string& prefix) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "model");
  EXPECT_TRUE(r.ok());
  Rankers out;
  EXPECT_TRUE(r->GetInts(prefix + ".features", &out.features).ok());
  EXPECT_TRUE(r->GetFloats(prefix + ".alphas", &out.alphas).ok());
  if (prefix == "rankboost") {
    EXPECT_TRUE(r->GetFloats("rankboost.thresholds", &out.thresholds).ok());
  }
  return out;
}

double Ndcg10(const std::vector<float>& s, const data::Table& t) { return MeanNdcgAt(s, t.targets, t.qids, 10); }

// ---- RankBoost by brute force: every pair, every threshold, every round ----

struct NaiveRankBoost {
  std::vector<Pair> pairs;
  std::vector<double> d;  // the distribution after the last round
  std::vector<int64_t> features;
  std::vector<float> thresholds;
  std::vector<double> alphas;
  double runner_up_gap = 1;  // smallest gap between the best and second-best |r| over the rounds
};

NaiveRankBoost RunNaiveRankBoost(const data::Table& t, int rounds) {
  NaiveRankBoost nb;
  for (int64_t i = 0; i < t.rows; ++i) {
    for (int64_t j = 0; j < t.rows; ++j) {
      if (t.qids[i] == t.qids[j] && t.targets[i] > t.targets[j]) nb.pairs.emplace_back(i, j);
    }
  }
  nb.d.assign(nb.pairs.size(), 1.0 / static_cast<double>(nb.pairs.size()));
  // Thresholds: the midpoints between neighbouring distinct values of each feature.
  std::vector<std::vector<float>> thresholds(static_cast<size_t>(t.cols));
  for (int64_t f = 0; f < t.cols; ++f) {
    std::set<float> values;
    for (int64_t i = 0; i < t.rows; ++i) values.insert(t.Row(i)[f]);
    for (auto it = values.begin(); std::next(it) != values.end(); ++it) {
      thresholds[f].push_back(*it + (*std::next(it) - *it) * 0.5f);
    }
  }
  for (int round = 0; round < rounds; ++round) {
    double best_abs = -1, second = -1, best_r = 0;
    int64_t best_f = -1;
    float best_t = 0;
    for (int64_t f = 0; f < t.cols; ++f) {
      for (float th : thresholds[f]) {
        double r = 0;
        for (size_t k = 0; k < nb.pairs.size(); ++k) {
          const double hi = t.Row(nb.pairs[k].first)[f] >= th ? 1 : 0;
          const double lo = t.Row(nb.pairs[k].second)[f] >= th ? 1 : 0;
          r += nb.d[k] * (hi - lo);
        }
        if (std::fabs(r) > best_abs) {
          second = best_abs;
          best_abs = std::fabs(r);
          best_r = r;
          best_f = f;
          best_t = th;
        } else {
          second = std::max(second, std::fabs(r));
        }
      }
    }
    nb.runner_up_gap = std::min(nb.runner_up_gap, best_abs - second);
    const double alpha = 0.5 * std::log((1 + best_r) / (1 - best_r));
    nb.features.push_back(best_f);
    nb.thresholds.push_back(best_t);
    nb.alphas.push_back(alpha);
    double z = 0;
    for (size_t k = 0; k < nb.pairs.size(); ++k) {
      const double hi = t.Row(nb.pairs[k].first)[best_f] >= best_t ? 1 : 0;
      const double lo = t.Row(nb.pairs[k].second)[best_f] >= best_t ? 1 : 0;
      nb.d[k] *= std::exp(-alpha * (hi - lo));
      z += nb.d[k];
    }
    for (double& v : nb.d) v /= z;
  }
  return nb;
}

TEST(RankBoost, FirstRoundMatchesABruteForceLoopOverPairsAndThresholds) {
  const data::Table t = TwoQueries();
  const NaiveRankBoost naive = RunNaiveRankBoost(t, 1);
  ASSERT_EQ(naive.pairs.size(), 10u);  // qid 1: (0,2) (0,3) (0,6) (3,2) (3,6); qid 2: (1,4) (1,7) (5,1) (5,4) (5,7)
  ASSERT_GT(naive.runner_up_gap, 1e-3) << "the example must have one best weak ranker";
  for (const data::Table& table : {t, t.ToSparse()}) {
    auto e = FitLocal("rankboost", {{"n_estimators", "1"}}, table);
    const Rankers got = SavedRankers(*e, "rankboost");
    ASSERT_EQ(got.features.size(), 1u);
    EXPECT_EQ(got.features[0], naive.features[0]);
    EXPECT_EQ(got.thresholds[0], naive.thresholds[0]);
    EXPECT_NEAR(got.alphas[0], naive.alphas[0], 1e-6);
  }
}

TEST(RankBoost, PairWeightsAfterOneRoundMatchTheNaiveUpdate) {
  const data::Table t = TwoQueries();
  const NaiveRankBoost naive = RunNaiveRankBoost(t, 1);
  auto e = FitLocal("rankboost", {{"n_estimators", "1"}}, t);
  auto got = RankBoostPairWeightsForTesting(*e);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  std::map<Pair, double> expected;
  for (size_t k = 0; k < naive.pairs.size(); ++k) expected[naive.pairs[k]] = naive.d[k];
  ASSERT_EQ(got->pairs.size(), expected.size());
  for (size_t k = 0; k < got->pairs.size(); ++k) {
    ASSERT_TRUE(expected.count(got->pairs[k])) << got->pairs[k].first << "," << got->pairs[k].second;
    EXPECT_NEAR(got->weights[k], expected[got->pairs[k]], 1e-7);
  }
  // The update moved weight: the pairs the weak ranker ordered lost it, the others gained.
  const double uniform = 1.0 / static_cast<double>(expected.size());
  EXPECT_TRUE(std::any_of(got->weights.begin(), got->weights.end(), [&](double w) { return w > uniform * 1.01; }));
  EXPECT_FALSE(RankBoostPairWeightsForTesting(*Make("rankboost", {})).ok());
}

TEST(RankBoost, SeveralRoundsMatchTheNaiveLoop) {
  const data::Table t = RandomQueries(6, 7, 4, 11);
  const int rounds = 6;
  // Few distinct values per feature so the cuts are exactly the midpoints: round to halves.
  data::Table coarse = t;
  for (float& v : coarse.dense) v = std::round(v * 2) / 2;
  const NaiveRankBoost naive = RunNaiveRankBoost(coarse, rounds);
  ASSERT_GT(naive.runner_up_gap, 1e-5) << "the example must have one best weak ranker per round";
  auto e = FitLocal("rankboost", {{"n_estimators", std::to_string(rounds)}}, coarse);
  const Rankers got = SavedRankers(*e, "rankboost");
  ASSERT_EQ(got.features.size(), static_cast<size_t>(rounds));
  for (int k = 0; k < rounds; ++k) {
    EXPECT_EQ(got.features[k], naive.features[k]) << "round " << k;
    EXPECT_EQ(got.thresholds[k], naive.thresholds[k]) << "round " << k;
    EXPECT_NEAR(got.alphas[k], naive.alphas[k], 1e-5) << "round " << k;
  }
  // The scores are sum alpha [x >= theta].
  const std::vector<float> s = Scores(*e, coarse);
  for (int64_t i = 0; i < coarse.rows; ++i) {
    double expect = 0;
    for (int k = 0; k < rounds; ++k) {
      expect += coarse.Row(i)[naive.features[k]] >= naive.thresholds[k] ? naive.alphas[k] : 0;
    }
    EXPECT_NEAR(s[i], expect, 1e-4);
  }
}

// ---- AdaRank by ranking every query with every feature ----

// One query's rows as their own table (for MeanNdcgAt / MeanAveragePrecision).
double QueryE(const std::vector<double>& scores, const data::Table& t, const std::vector<int64_t>& rows, bool map,
              int k) {
  std::vector<float> s, rel;
  std::vector<int64_t> q;
  for (int64_t i : rows) {
    s.push_back(static_cast<float>(scores[i]));
    rel.push_back(t.targets[i]);
    q.push_back(0);
  }
  return map ? MeanAveragePrecision(s, rel, q) : MeanNdcgAt(s, rel, q, k);
}

struct NaiveAdaRank {
  std::vector<int64_t> features;
  std::vector<double> alphas;  // signed
  std::vector<double> p;       // after the last round
  double runner_up_gap = 1;
};

// Per-query z-scores (population std), both directions, max_selections consecutive choices at most.
NaiveAdaRank RunNaiveAdaRank(const data::Table& t, int rounds, bool map, int k, int max_selections) {
  std::map<int64_t, std::vector<int64_t>> by_qid;
  std::vector<int64_t> order;
  for (int64_t i = 0; i < t.rows; ++i) {
    if (!by_qid.count(t.qids[i])) order.push_back(t.qids[i]);
    by_qid[t.qids[i]].push_back(i);
  }
  std::vector<std::vector<int64_t>> queries;
  for (int64_t q : order) queries.push_back(by_qid[q]);
  const int64_t d = t.cols;
  std::vector<double> x(t.dense.begin(), t.dense.end());
  for (const auto& rows : queries) {
    for (int64_t f = 0; f < d; ++f) {
      double mean = 0, var = 0;
      for (int64_t i : rows) mean += x[i * d + f] / rows.size();
      for (int64_t i : rows) var += (x[i * d + f] - mean) * (x[i * d + f] - mean) / rows.size();
      for (int64_t i : rows) x[i * d + f] = var > 0 ? (x[i * d + f] - mean) / std::sqrt(var) : 0;
    }
  }
  NaiveAdaRank nb;
  const size_t nq = queries.size();
  nb.p.assign(nq, 1.0 / nq);
  std::vector<double> f(t.rows, 0.0);
  int64_t last = -1, run = 0;
  for (int round = 0; round < rounds; ++round) {
    double best = -1, second = -1;
    int64_t best_c = -1;
    for (int64_t c = 0; c < 2 * d; ++c) {
      if (c % d == last && run >= max_selections) continue;
      std::vector<double> col(t.rows);
      for (int64_t i = 0; i < t.rows; ++i) col[i] = (c < d ? 1 : -1) * x[i * d + c % d];
      double s = 0;
      for (size_t q = 0; q < nq; ++q) s += nb.p[q] * QueryE(col, t, queries[q], map, k);
      if (s > best) {
        second = best;
        best = s;
        best_c = c;
      } else {
        second = std::max(second, s);
      }
    }
    nb.runner_up_gap = std::min(nb.runner_up_gap, best - second);
    const int64_t feat = best_c % d;
    const double alpha = 0.5 * std::log((1 + best) / (1 - best));  // sum P = 1: sum P(1 +- E) = 1 +- best
    const double coef = best_c < d ? alpha : -alpha;
    for (int64_t i = 0; i < t.rows; ++i) f[i] += coef * x[i * d + feat];
    double z = 0;
    for (size_t q = 0; q < nq; ++q) z += nb.p[q] = std::exp(-QueryE(f, t, queries[q], map, k));
    for (double& v : nb.p) v /= z;
    nb.features.push_back(feat);
    nb.alphas.push_back(coef);
    run = feat == last ? run + 1 : 1;
    last = feat;
  }
  return nb;
}

TEST(AdaRank, FirstRoundFeatureAlphaAndQueryWeightsMatchANaiveComputation) {
  const data::Table t = RandomQueries(5, 8, 4, 21);
  for (const bool map : {false, true}) {
    SCOPED_TRACE(map ? "map" : "ndcg@10");
    const NaiveAdaRank naive = RunNaiveAdaRank(t, 1, map, 10, 5);
    ASSERT_GT(naive.runner_up_gap, 1e-4);
    auto e = FitLocal("adarank", {{"n_estimators", "1"}, {"metric", map ? "map" : "ndcg"}}, t);
    const Rankers got = SavedRankers(*e, "adarank");
    ASSERT_EQ(got.features.size(), 1u);
    EXPECT_EQ(got.features[0], naive.features[0]);
    EXPECT_NEAR(got.alphas[0], naive.alphas[0], 1e-5);
    auto p = AdaRankQueryWeightsForTesting(*e);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->qids, (std::vector<int64_t>{100, 101, 102, 103, 104}));
    ASSERT_EQ(p->weights.size(), naive.p.size());
    for (size_t q = 0; q < naive.p.size(); ++q) EXPECT_NEAR(p->weights[q], naive.p[q], 1e-6) << "query " << q;
  }
}

TEST(AdaRank, SeveralRoundsWithTheSelectionLimitMatchTheNaiveLoop) {
  const data::Table t = RandomQueries(6, 10, 3, 31);
  const int rounds = 5;
  const NaiveAdaRank naive = RunNaiveAdaRank(t, rounds, false, 5, 1);
  ASSERT_GT(naive.runner_up_gap, 1e-5);
  auto e = FitLocal("adarank", {{"n_estimators", std::to_string(rounds)}, {"k", "5"}, {"max_selections", "1"},
                                {"tolerance", "100"}},
                    t);
  const Rankers got = SavedRankers(*e, "adarank");
  ASSERT_EQ(got.features.size(), static_cast<size_t>(rounds));
  for (int k = 0; k < rounds; ++k) {
    EXPECT_EQ(got.features[k], naive.features[k]) << "round " << k;
    EXPECT_NEAR(got.alphas[k], naive.alphas[k], 1e-5) << "round " << k;
    if (k > 0) {
      EXPECT_NE(got.features[k], got.features[k - 1]) << "max_selections 1 forbids a repeat";
    }
  }
  auto p = AdaRankQueryWeightsForTesting(*e);
  ASSERT_TRUE(p.ok());
  for (size_t q = 0; q < naive.p.size(); ++q) EXPECT_NEAR(p->weights[q], naive.p[q], 1e-5) << "query " << q;
}

// ---- against the best single feature on letor-synthetic ----

data::TableSplits Letor(int64_t train_rows, int64_t test_rows, int64_t features) {
  data::DataConfig config;
  config.name = "letor-synthetic";
  config.synthetic_train = train_rows;
  config.synthetic_test = test_rows;
  config.synthetic_shape = {features};
  data::TableOptions options;
  options.task = data::TableTask::kRanking;
  auto s = data::OpenTable(config, options);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(*s);
}

// The feature (and sign) with the best training NDCG@10; its training and test NDCG@10.
std::pair<double, double> BestSingleFeature(const data::Table& train, const data::Table& test) {
  double best_train = -1, best_test = -1;
  for (int64_t f = 0; f < train.cols; ++f) {
    for (const float sign : {1.0f, -1.0f}) {
      std::vector<float> a(train.rows), b(test.rows);
      for (int64_t i = 0; i < train.rows; ++i) a[i] = sign * train.Row(i)[f];
      for (int64_t i = 0; i < test.rows; ++i) b[i] = sign * test.Row(i)[f];
      const double s = Ndcg10(a, train);
      if (s > best_train) {
        best_train = s;
        best_test = Ndcg10(b, test);
      }
    }
  }
  return {best_train, best_test};
}

TEST(RankEnsembles, BothBeatTheBestSingleFeatureOnLetorSynthetic) {
  const data::TableSplits s = Letor(4000, 2000, 46);
  const auto [single_train, single_test] = BestSingleFeature(s.train, s.test);
  for (const std::string name : {"rankboost", "adarank"}) {
    SCOPED_TRACE(name);
    auto e = FitLocal(name, {{"n_estimators", name == "rankboost" ? "150" : "300"}}, s.train);
    const double train = Ndcg10(Scores(*e, s.train), s.train), test = Ndcg10(Scores(*e, s.test), s.test);
    std::printf("%s: NDCG@10 train %.4f test %.4f; best single feature train %.4f test %.4f\n", name.c_str(), train,
                test, single_train, single_test);
    EXPECT_GT(train, single_train + 0.02);
    EXPECT_GT(test, single_test + 0.02);
  }
}

// ---- distributed equals one process ----

std::vector<std::unique_ptr<Estimator>> FitAcross(const std::string& name, const Params& params,
                                                  const data::Table& train, int world) {
  std::vector<std::vector<int64_t>> index(world);
  for (int64_t i = 0; i < train.rows; ++i) index[(train.qids[i] * 7 + 3) % world].push_back(i);
  std::vector<data::Table> shards;
  for (const auto& ix : index) shards.push_back(train.Select(ix));
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> est;
  for (int r = 0; r < world; ++r) est.push_back(Make(name, params));
  std::vector<Status> status(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      FitContext ctx;
      ctx.collective = group.Worker(r);
      status[r] = est[r]->Fit(shards[r], ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& st : status) EXPECT_TRUE(st.ok()) << st.ToString();
  return est;
}

TEST(RankEnsembles, DistributedEqualsOneProcess) {
  const data::TableSplits s = Letor(1200, 400, 12);
  for (const std::string name : {"rankboost", "adarank"}) {
    SCOPED_TRACE(name);
    // adarank: no early stop, so that all 25 rounds are compared.
    const Params p = name == "adarank" ? Params{{"n_estimators", "25"}, {"tolerance", "100"}, {"max_selections", "2"}}
                                       : Params{{"n_estimators", "25"}};
    auto local = FitLocal(name, p, s.train);
    const Rankers want = SavedRankers(*local, name);
    ASSERT_EQ(want.features.size(), 25u);
    for (int world : {2, 3}) {
      auto est = FitAcross(name, p, s.train, world);
      for (int r = 0; r < world; ++r) {
        const Rankers got = SavedRankers(*est[r], name);
        EXPECT_EQ(got.features, want.features) << "world " << world << " rank " << r;
        EXPECT_EQ(got.thresholds, want.thresholds) << "world " << world << " rank " << r;
        ASSERT_EQ(got.alphas.size(), want.alphas.size());
        for (size_t k = 0; k < want.alphas.size(); ++k) EXPECT_NEAR(got.alphas[k], want.alphas[k], 1e-4) << k;
      }
      const std::vector<float> a = Scores(*local, s.test), b = Scores(*est[0], s.test);
      EXPECT_NEAR(Ndcg10(b, s.test), Ndcg10(a, s.test), 1e-3);
    }
  }
}

// ---- model file and errors ----

TEST(RankEnsembles, SaveLoadRoundTrip) {
  const data::Table t = RandomQueries(8, 10, 5, 41);
  for (const std::string name : {"rankboost", "adarank"}) {
    SCOPED_TRACE(name);
    auto e = FitLocal(name, {{"n_estimators", "20"}}, t);
    ModelWriter w;
    e->Save(&w);
    auto r = ModelReader::Parse(w.Encode(), "m");
    ASSERT_TRUE(r.ok());
    auto loaded = Make(name, {});
    ASSERT_TRUE(loaded->Load(*r).ok());
    EXPECT_EQ(Scores(*e, t), Scores(*loaded, t));
    EXPECT_EQ(MetricValue(loaded->ModelMetrics(t, {}), "weak_rankers"),
              MetricValue(e->ModelMetrics(t, {}), "weak_rankers"));

    ModelWriter bad;  // a feature index beyond the columns
    bad.PutNumber(name + ".columns", 2);
    bad.PutInts(name + ".features", std::vector<int64_t>{5});
    bad.PutFloats(name + ".alphas", std::vector<float>{1});
    if (name == "rankboost") bad.PutFloats("rankboost.thresholds", std::vector<float>{0});
    auto rb = ModelReader::Parse(bad.Encode(), "bad");
    ASSERT_TRUE(rb.ok());
    EXPECT_EQ(Make(name, {})->Load(*rb).code(), StatusCode::kDataLoss);
  }
}

TEST(RankEnsembles, BadInputGivesClearErrors) {
  const data::Table t = RandomQueries(4, 6, 3, 51);
  for (const std::string name : {"rankboost", "adarank"}) {
    SCOPED_TRACE(name);
    FitContext ctx;
    data::Table no_qids = t;
    no_qids.qids.clear();
    Status st = Make(name, {})->Fit(no_qids, ctx);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("query ids"), std::string::npos) << st.message();

    data::Table nan = t;
    nan.targets[3] = std::nanf("");
    st = Make(name, {})->Fit(nan, ctx);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("relevance label of row 3"), std::string::npos) << st.message();

    data::Table flat = t;
    std::fill(flat.targets.begin(), flat.targets.end(), 1.0f);
    st = Make(name, {})->Fit(flat, ctx);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("two different relevance levels"), std::string::npos) << st.message();

    data::Table empty;
    empty.cols = 3;
    EXPECT_EQ(Make(name, {})->Fit(empty, ctx).code(), StatusCode::kInvalidArgument);

    auto e = FitLocal(name, {{"n_estimators", "5"}}, t);
    const data::Table narrow = RandomQueries(2, 5, 2, 52);
    auto p = e->Predict(narrow, 1);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("2 feature columns, the model was trained on 3"), std::string::npos)
        << p.status().message();
    EXPECT_EQ(Make(name, {})->Predict(t, 1).status().code(), StatusCode::kFailedPrecondition);

    for (const Params& bad : std::vector<Params>{{{"n_estimators", "0"}}, {{"tolerance", "-1"}}, {{"C", "1"}}}) {
      EXPECT_FALSE(CreateEstimator(name, bad).ok()) << bad.begin()->first;
    }
  }
  EXPECT_FALSE(CreateEstimator("rankboost", {{"max_bin", "1"}}).ok());
  EXPECT_FALSE(CreateEstimator("adarank", {{"metric", "err"}}).ok());
  EXPECT_FALSE(CreateEstimator("adarank", {{"normalize", "l2"}}).ok());
  // Per-query normalisation needs the input's qids.
  auto ada = FitLocal("adarank", {{"n_estimators", "3"}}, t);
  data::Table no_qids = t;
  no_qids.qids.clear();
  auto p = ada->Predict(no_qids, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("qid"), std::string::npos);
  auto plain = FitLocal("adarank", {{"n_estimators", "3"}, {"normalize", "none"}}, t);
  EXPECT_TRUE(plain->Predict(no_qids, 1).ok());
}

}  // namespace
}  // namespace geomx::algorithms
