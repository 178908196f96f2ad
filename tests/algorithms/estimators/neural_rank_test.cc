// Tests of ranknet and listnet (algorithms/estimators/neural_rank.cc) against independent references: the losses and
// gradients of a hand-built query of 3 documents (values worked out from the papers' formulas outside the code), the
// whole objective of a linear scorer on that query, the MLP's gradient against finite differences, a perfectly
// rankable set (NDCG@10 = 1), the model file, and N fits as threads against one fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/neural_rank.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

// One query of three documents: relevance 2, 0, 1; under w = (-2, 3, 2) the linear scores are 2, 1, 0.5.
data::Table ThreeDocuments() {
  data::Table t;
  t.rows = 3;
  t.cols = 3;
  t.dense = {1, 0, 2,  0, 1, -1,  0.5f, 0.5f, 0};
  t.qids = {9, 9, 9};
  t.targets = {2, 0, 1};
  t.source = "three-documents";
  return t;
}

// LETOR-like: `queries` queries of `docs` rows, `d` features ~ N(0, 1); relevance 0..2 from a hidden linear score
// plus noise, cut at -1 and 1. With gap > 0 rows whose score falls within gap of a cut are redrawn, so the grades
// are separable by the hidden w.
data::Table Letor(int queries, int docs, int d, double noise, double gap, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0.0, 1.0);
  std::vector<double> hidden(static_cast<size_t>(d));
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

std::unique_ptr<Estimator> Make(const std::string& name, const Params& params) {
  auto e = CreateEstimator(name, params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::vector<float> Scores(const Estimator& e, const data::Table& t) {
  auto p = e.Predict(t, 2);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->value : std::vector<float>{};
}

std::vector<float> SavedParams(const Estimator& e, const std::string& name) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "model");
  EXPECT_TRUE(r.ok());
  std::vector<float> out;
  EXPECT_TRUE(r->GetFloats(name + ".params", &out).ok());
  return out;
}

const std::vector<double> kScores = {2.0, 1.0, 0.5};
const std::vector<float> kRelevance = {2, 0, 1};

// The pairs are (0, 1), (0, 2), (2, 1) with score differences 1, 1.5, -0.5.
TEST(NeuralRankLoss, RankNetOnThreeDocumentsByHand) {
  std::vector<double> grad(3);
  double weight = 0;
  // sigma 1, unit weights: log(1 + e^-1) + log(1 + e^-1.5) + log(1 + e^0.5); d/ds_i = sum of -1 / (1 + e^d) over
  // the pairs where i is the more relevant document, + 1 / (1 + e^d) where it is the less relevant one.
  const double loss = RankNetQueryLoss(kScores, kRelevance, {}, 1.0, grad, &weight);
  EXPECT_NEAR(loss, 1.488751949681082, 1e-12);
  EXPECT_EQ(weight, 3.0);
  EXPECT_NEAR(grad[0], -0.45136694517635145, 1e-12);
  EXPECT_NEAR(grad[1], 0.8914007525718497, 1e-12);
  EXPECT_NEAR(grad[2], -0.44003380739549824, 1e-12);

  // sigma 2, row weights 1, 3, 2: the pairs weigh 2, 1.5, 2.5 (the means of their rows').
  const std::vector<float> rows = {1, 3, 2};
  const double weighted = RankNetQueryLoss(kScores, kRelevance, rows, 2.0, grad, &weight);
  EXPECT_NEAR(weighted, 3.609891268242115, 1e-12);
  EXPECT_EQ(weight, 6.0);
  EXPECT_NEAR(grad[0], -0.6190893076211705, 1e-12);
  EXPECT_NEAR(grad[1], 4.132104581238495, 1e-12);
  EXPECT_NEAR(grad[2], -3.513015273617324, 1e-12);

  // No two relevance levels: nothing to learn.
  const std::vector<float> flat = {1, 1, 1};
  EXPECT_EQ(RankNetQueryLoss(kScores, flat, {}, 1.0, grad, &weight), 0.0);
  EXPECT_EQ(weight, 0.0);
  EXPECT_EQ(grad, std::vector<double>(3, 0.0));
}

TEST(NeuralRankLoss, ListNetOnThreeDocumentsByHand) {
  std::vector<double> grad(3);
  double weight = 0;
  // P_y = softmax(2, 0, 1), P_s = softmax(2, 1, 0.5); loss -sum P_y log P_s, d/ds = P_s - P_y.
  double loss = ListNetQueryLoss(kScores, kRelevance, 1.0, false, grad, &weight);
  EXPECT_NEAR(loss, 0.9214920638605216, 1e-12);
  EXPECT_EQ(weight, 1.0);
  EXPECT_NEAR(grad[0], -0.036709236563059355, 1e-12);
  EXPECT_NEAR(grad[1], 0.1411933244517686, 1e-12);
  EXPECT_NEAR(grad[2], -0.10448408788870914, 1e-12);

  // Gains 2^rel - 1 = 3, 0, 1, and a query weight of 2 scaling loss and gradient.
  loss = ListNetQueryLoss(kScores, kRelevance, 2.0, true, grad, &weight);
  EXPECT_NEAR(loss, 2 * 0.6776716493189024, 1e-12);
  EXPECT_EQ(weight, 2.0);
  EXPECT_NEAR(grad[0], 2 * -0.21526301526957692, 1e-12);
  EXPECT_NEAR(grad[1], 2 * 0.18921383148808302, 1e-12);
  EXPECT_NEAR(grad[2], 2 * 0.026049183781494026, 1e-12);

  // Shifting every score changes nothing; a constant relevance gives no loss.
  const std::vector<double> shifted = {102.0, 101.0, 100.5};
  EXPECT_NEAR(ListNetQueryLoss(shifted, kRelevance, 1.0, false, grad, &weight), 0.9214920638605216, 1e-9);
  const std::vector<float> flat = {3, 3, 3};
  EXPECT_EQ(ListNetQueryLoss(kScores, flat, 1.0, false, grad, &weight), 0.0);
  EXPECT_EQ(weight, 0.0);
}

// A linear scorer (hidden 0) on the hand-built query: the objective is the mean pair loss (RankNet) or the query's
// cross-entropy (ListNet), and d/dw = sum_i dL/ds_i x_i divided by the normaliser.
TEST(NeuralRankObjective, LinearScorerOnThreeDocumentsByHand) {
  const data::Table t = ThreeDocuments();
  const std::vector<float> w = {-2, 3, 2};
  std::vector<double> grad;
  const double ranknet = NeuralRankObjectiveForTesting("ranknet", {{"hidden", "0"}}, t, w, &grad);
  EXPECT_NEAR(ranknet, 1.488751949681082 / 3, 1e-7);
  ASSERT_EQ(grad.size(), 3u);
  EXPECT_NEAR(grad[0], -0.22379461629136688, 1e-6);
  EXPECT_NEAR(grad[1], 0.22379461629136688, 1e-6);
  EXPECT_NEAR(grad[2], -0.5980448809748509, 1e-6);

  const double listnet = NeuralRankObjectiveForTesting("listnet", {{"hidden", "0"}}, t, w, &grad);
  EXPECT_NEAR(listnet, 0.9214920638605216, 1e-7);
  EXPECT_NEAR(grad[0], -0.08895128050741392, 1e-6);
  EXPECT_NEAR(grad[1], 0.08895128050741404, 1e-6);
  EXPECT_NEAR(grad[2], -0.21461179757788731, 1e-6);
}

// The MLP's backward pass (two hidden relu layers) against central differences of the objective.
TEST(NeuralRankObjective, MlpGradientMatchesFiniteDifferences) {
  const data::Table t = Letor(3, 6, 4, 0.5, 0.0, 11);
  for (const std::string name : {"ranknet", "listnet"}) {
    const Params p = {{"hidden", "5"}, {"layers", "2"}};
    // 4x5 + 5, 5x5 + 5, 5 output weights.
    const size_t size = 4 * 5 + 5 + 5 * 5 + 5 + 5;
    std::mt19937_64 rng(7);
    std::normal_distribution<float> n01(0.0f, 0.6f);
    std::vector<float> theta(size);
    for (float& v : theta) v = n01(rng);
    std::vector<double> grad, unused;
    NeuralRankObjectiveForTesting(name, p, t, theta, &grad);
    ASSERT_EQ(grad.size(), size);
    for (size_t j = 0; j < size; ++j) {
      const float eps = 1e-3f;
      std::vector<float> up = theta, down = theta;
      up[j] += eps;
      down[j] -= eps;
      const double fd = (NeuralRankObjectiveForTesting(name, p, t, up, &unused) -
                         NeuralRankObjectiveForTesting(name, p, t, down, &unused)) /
                        (2.0 * eps);
      EXPECT_NEAR(grad[j], fd, 2e-3 + 2e-2 * std::fabs(fd)) << name << " parameter " << j;
    }
  }
}

TEST(NeuralRank, PerfectlyRankableSetGetsNdcgOne) {
  const data::Table train = Letor(20, 15, 5, 0.0, 0.3, 1);
  for (const std::string name : {"ranknet", "listnet"}) {
    auto e = Make(name, {{"hidden", "16"}, {"epochs", "150"}, {"lr", "0.01"}});
    FitContext ctx;
    ctx.threads = 2;
    ASSERT_TRUE(e->Fit(train, ctx).ok()) << name;
    EXPECT_NEAR(MeanNdcgAt(Scores(*e, train), train.targets, train.qids, 10), 1.0, 1e-12) << name;
  }
}

TEST(NeuralRank, SaveLoadRoundTripAndErrors) {
  const data::Table t = Letor(6, 8, 4, 0.5, 0.0, 6);
  for (const std::string name : {"ranknet", "listnet"}) {
    auto e = Make(name, {{"hidden", "8"}, {"layers", "2"}, {"epochs", "3"}});
    FitContext ctx;
    ASSERT_TRUE(e->Fit(t, ctx).ok());
    ModelWriter w;
    e->Save(&w);
    auto r = ModelReader::Parse(w.Encode(), "m");
    ASSERT_TRUE(r.ok());
    auto loaded = Make(name, {});  // the shape comes from the file, not the parameters
    ASSERT_TRUE(loaded->Load(*r).ok());
    EXPECT_EQ(Scores(*e, t), Scores(*loaded, t));
    EXPECT_EQ(MetricValue(e->ModelMetrics(t, {}), "parameters"), 4 * 8 + 8 + 8 * 8 + 8 + 8);

    // A shape that does not match the weights, or an impossible one, is kDataLoss.
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{4, 8, 1}, {4, 0, 1}, {0, 8, 2}}) {
      ModelWriter bad;
      bad.PutInts(name + ".shape", shape);
      bad.PutFloats(name + ".params", SavedParams(*e, name));
      auto rb = ModelReader::Parse(bad.Encode(), "bad");
      ASSERT_TRUE(rb.ok());
      EXPECT_EQ(Make(name, {})->Load(*rb).code(), StatusCode::kDataLoss) << shape[0] << shape[1] << shape[2];
    }

    const data::Table narrow = Letor(2, 5, 3, 0.5, 0.0, 7);
    auto p = e->Predict(narrow, 1);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Make(name, {})->Predict(t, 1).status().code(), StatusCode::kFailedPrecondition);

    data::Table no_qids = t;
    no_qids.qids.clear();
    EXPECT_EQ(Make(name, {})->Fit(no_qids, ctx).code(), StatusCode::kInvalidArgument);
    data::Table flat = t;
    std::fill(flat.targets.begin(), flat.targets.end(), 1.0f);
    EXPECT_EQ(Make(name, {})->Fit(flat, ctx).code(), StatusCode::kInvalidArgument);
    data::Table empty;
    empty.cols = 4;
    EXPECT_EQ(Make(name, {})->Fit(empty, ctx).code(), StatusCode::kInvalidArgument);
  }
  for (const Params& p : std::vector<Params>{{{"hidden", "-1"}}, {{"layers", "0"}}, {{"lr", "0"}}, {{"epochs", "0"}},
                                             {{"batch_size", "0"}}, {{"solver", "lbfgs"}}, {{"target", "gain"}}}) {
    EXPECT_FALSE(CreateEstimator("ranknet", p).ok()) << p.begin()->first;
  }
  EXPECT_FALSE(CreateEstimator("listnet", {{"sigma", "2"}}).ok());
  EXPECT_TRUE(CreateEstimator("listnet", {{"target", "gain"}}).ok());
}

// A sparse (CSR) table fits and scores exactly as its dense twin; the `seed` parameter replaces the run's seed.
TEST(NeuralRank, SparseEqualsDenseAndSeedsDecide) {
  const data::Table t = Letor(8, 10, 6, 0.5, 0.0, 8);
  const data::Table sparse = t.ToSparse();
  for (const std::string name : {"ranknet", "listnet"}) {
    const Params p = {{"hidden", "8"}, {"epochs", "4"}};
    auto fit = [&](const data::Table& table, const Params& params, uint64_t run_seed) {
      auto e = Make(name, params);
      FitContext ctx;
      ctx.seed = run_seed;
      EXPECT_TRUE(e->Fit(table, ctx).ok());
      return e;
    };
    auto dense = fit(t, p, 42), csr = fit(sparse, p, 42);
    EXPECT_EQ(SavedParams(*dense, name), SavedParams(*csr, name)) << name;
    EXPECT_EQ(Scores(*dense, sparse), Scores(*dense, t)) << name;
    Params seeded = p;
    seeded["seed"] = "42";
    EXPECT_EQ(SavedParams(*fit(t, seeded, 7), name), SavedParams(*dense, name)) << name;
    EXPECT_NE(SavedParams(*fit(t, p, 7), name), SavedParams(*dense, name)) << name;
  }
}

// N workers (threads) each holding whole queries (query q on worker q % N). Returns every worker's model.
std::vector<std::unique_ptr<Estimator>> FitAcross(const std::string& name, const Params& p, const data::Table& train,
                                                  int world) {
  std::vector<std::vector<int64_t>> index(static_cast<size_t>(world));
  for (int64_t i = 0; i < train.rows; ++i) {
    index[static_cast<size_t>((train.qids[static_cast<size_t>(i)] - 1000) % world)].push_back(i);
  }
  std::vector<data::Table> shards;
  for (const auto& ix : index) shards.push_back(train.Select(ix));
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> est;
  for (int r = 0; r < world; ++r) est.push_back(Make(name, p));
  std::vector<Status> status(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      FitContext ctx;
      ctx.collective = group.Worker(r);
      status[static_cast<size_t>(r)] = est[static_cast<size_t>(r)]->Fit(shards[static_cast<size_t>(r)], ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& s : status) EXPECT_TRUE(s.ok()) << s.ToString();
  return est;
}

// A shard that one worker rejects (a NaN relevance) stops every worker, none waits for the others; a query split
// over two workers is refused by all of them.
TEST(NeuralRank, BadShardsStopEveryWorker) {
  const data::Table train = Letor(6, 5, 3, 0.5, 0.0, 9);
  auto fit_shards = [&](const std::vector<data::Table>& shards) {
    ThreadCollectiveGroup group(static_cast<int>(shards.size()));
    std::vector<Status> status(shards.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < shards.size(); ++r) {
      threads.emplace_back([&, r] {
        FitContext ctx;
        ctx.collective = group.Worker(static_cast<int>(r));
        status[r] = Make("ranknet", {{"epochs", "2"}})->Fit(shards[r], ctx);
      });
    }
    for (auto& th : threads) th.join();
    return status;
  };
  std::vector<int64_t> first, second;
  for (int64_t i = 0; i < train.rows; ++i) (i < 15 ? first : second).push_back(i);
  data::Table bad = train.Select(second);
  bad.targets[0] = std::nanf("");
  for (const Status& s : fit_shards({train.Select(first), bad})) EXPECT_FALSE(s.ok());
  // Rows 0-14 are queries 1000-1002; row 12 (query 1002) moves to the second worker.
  first.erase(first.begin() + 12);
  second.insert(second.begin(), 12);
  for (const Status& s : fit_shards({train.Select(first), train.Select(second)})) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  }
}

// With one batch holding every query, every step of the distributed fit sums the same per-query gradients as the
// single-process step (in another order): the models agree up to float rounding, and the workers' models are
// identical. With mini-batches the steps differ (each worker draws its own queries), so only the quality agrees.
TEST(NeuralRank, DistributedEqualsOneProcessOnFullBatches) {
  const data::Table train = Letor(12, 10, 6, 0.5, 0.0, 4);
  for (const std::string name : {"ranknet", "listnet"}) {
    const Params p = {{"hidden", "8"}, {"epochs", "15"}, {"lr", "0.01"}, {"batch_size", "100"}};
    auto local = Make(name, p);
    FitContext ctx;
    ASSERT_TRUE(local->Fit(train, ctx).ok());
    const std::vector<float> one = SavedParams(*local, name);
    for (int world : {2, 3}) {
      auto est = FitAcross(name, p, train, world);
      const std::vector<float> first = SavedParams(*est[0], name);
      for (int r = 1; r < world; ++r) EXPECT_EQ(SavedParams(*est[static_cast<size_t>(r)], name), first);
      ASSERT_EQ(first.size(), one.size());
      for (size_t j = 0; j < one.size(); ++j) {
        EXPECT_NEAR(first[j], one[j], 1e-4 * std::max(1.0f, std::fabs(one[j]))) << name << " " << world << " " << j;
      }
    }
  }
}

TEST(NeuralRank, DistributedMiniBatchesReachLocalNdcg) {
  const data::Table train = Letor(60, 20, 10, 0.7, 0.0, 4), test = Letor(30, 20, 10, 0.7, 0.0, 5);
  for (const std::string name : {"ranknet", "listnet"}) {
    // Two workers of 2 queries per step take the same number of queries per step as one process of 4.
    Params p = {{"hidden", "16"}, {"epochs", "30"}, {"lr", "0.003"}, {"batch_size", "4"}};
    auto local = Make(name, p);
    FitContext ctx;
    ASSERT_TRUE(local->Fit(train, ctx).ok());
    const double local_ndcg = MeanNdcgAt(Scores(*local, test), test.targets, test.qids, 10);
    p["batch_size"] = "2";
    auto est = FitAcross(name, p, train, 2);
    EXPECT_EQ(SavedParams(*est[0], name), SavedParams(*est[1], name));
    const double ndcg = MeanNdcgAt(Scores(*est[0], test), test.targets, test.qids, 10);
    EXPECT_GT(local_ndcg, 0.8) << name;
    EXPECT_NEAR(ndcg, local_ndcg, 0.02) << name;
  }
}

}  // namespace
}  // namespace geomx::algorithms
