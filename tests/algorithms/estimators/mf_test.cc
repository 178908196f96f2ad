// Tests of `mf`, biased matrix factorisation by SGD (algorithms/estimators/mf.cc): SGD steps worked out by hand,
// the noise floor of ratings-synthetic, the fallback for unseen users and items, Save/Load, bad input, and the
// distributed form (N fits as threads) against the single-process fit, with its row traffic counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/fit_job.h"
#include "datasets/ratings.h"
#include "engine/base/rng.h"
#include "tests/algorithms/estimators/forwarding_collective.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

std::unique_ptr<Estimator> Make(const Params& params) {
  auto e = CreateEstimator("mf", params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<Estimator> FitLocal(const Params& params, const data::Table& t) {
  auto e = Make(params);
  Status st = e->Fit(t, FitContext{});
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

std::vector<float> Section(const Estimator& e, const std::string& name) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "mem");
  EXPECT_TRUE(r.ok());
  std::vector<float> v;
  EXPECT_TRUE(r->GetFloats(name, &v).ok()) << name;
  return v;
}

double Rmse(const Estimator& e, const data::Table& t) {
  auto p = e.Predict(t, 2);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  double sq = 0;
  for (int64_t i = 0; i < t.rows; ++i) sq += std::pow(p->value[i] - t.targets[i], 2);
  return std::sqrt(sq / static_cast<double>(t.rows));
}

data::Table Ratings(const std::vector<int64_t>& u, const std::vector<int64_t>& i, const std::vector<float>& r) {
  return data::RatingsTable(u, i, r, "hand");
}

data::TableSplits Synthetic(std::vector<int64_t> shape, int64_t train, int64_t test, uint64_t seed) {
  data::DataConfig c;
  c.name = "ratings-synthetic";
  c.synthetic_shape = std::move(shape);
  c.synthetic_train = train;
  c.synthetic_test = test;
  c.synthetic_seed = seed;
  data::TableOptions o;
  o.task = data::TableTask::kRegression;
  auto s = data::OpenTable(c, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(*s);
}

// ---- by hand ----

TEST(MfTest, BiasStepsByHand) {
  // init_scale 0: factors stay 0 (their gradients e q + reg p are 0), so only the biases move. Ratings 4 and 2 of
  // user 0 / item 0, mu = 3, per-rating steps (batch 1) in table order, lr 0.1, reg 0.5.
  //   step 1: e = 3 - 4 = -1;  b_u = b_i = 0 - 0.1 (-1 + 0.5 * 0) = 0.1
  //   step 2: e = 3 + 0.2 - 2 = 1.2;  b_u = b_i = 0.1 - 0.1 (1.2 + 0.5 * 0.1) = -0.025
  // prediction: 3 - 0.025 - 0.025 = 2.95.
  const data::Table t = Ratings({0, 0}, {0, 0}, {4, 2});
  auto e = FitLocal({{"rank", "2"}, {"init_scale", "0"}, {"lr", "0.1"}, {"reg", "0.5"}, {"epochs", "1"},
                     {"shuffle", "false"}},
                    t);
  EXPECT_NEAR(Section(*e, "mf.mean")[0], 3.0f, 1e-6);
  EXPECT_NEAR(Section(*e, "mf.user_bias")[0], -0.025f, 1e-6);
  EXPECT_NEAR(Section(*e, "mf.item_bias")[0], -0.025f, 1e-6);
  EXPECT_EQ(Section(*e, "mf.user_factors"), std::vector<float>(2, 0.0f));
  auto p = e->Predict(t, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->value[0], 2.95f, 1e-6);
}

TEST(MfTest, FactorStepByHand) {
  // One mini-batch step (batch 2) over ratings 4 and 2 of user 0 / item 0, rank 2, lr 0.1, reg 0.5. The initial
  // factors are the documented stream: Rng(seed ^ 0x6d66) draws p_0 (2 values) then q_0, each init_scale x N(0,1).
  const double s = 0.5;
  Rng init(7 ^ 0x6d66);
  double p0[2], q0[2];
  for (double& v : p0) v = static_cast<float>(s * init.Normal());
  for (double& v : q0) v = static_cast<float>(s * init.Normal());
  // mu = 3; both errors use the same parameters: e1 = 3 + d - 4, e2 = 3 + d - 2 with d = p0 . q0, sum 2d.
  // b_u = b_i = 0 - 0.1 (2d + 2 * 0.5 * 0) = -0.2 d
  // p = p0 - 0.1 (2d q0 + 2 * 0.5 p0),  q = q0 - 0.1 (2d p0 + 2 * 0.5 q0).
  const double d = p0[0] * q0[0] + p0[1] * q0[1];
  const data::Table t = Ratings({0, 0}, {0, 0}, {4, 2});
  auto e = FitLocal({{"rank", "2"}, {"init_scale", "0.5"}, {"seed", "7"}, {"lr", "0.1"}, {"reg", "0.5"},
                     {"epochs", "1"}, {"batch_size", "2"}, {"shuffle", "false"}},
                    t);
  EXPECT_NEAR(Section(*e, "mf.user_bias")[0], -0.2 * d, 1e-6);
  EXPECT_NEAR(Section(*e, "mf.item_bias")[0], -0.2 * d, 1e-6);
  const std::vector<float> p = Section(*e, "mf.user_factors"), q = Section(*e, "mf.item_factors");
  ASSERT_EQ(p.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(p[k], p0[k] - 0.1 * (2 * d * q0[k] + p0[k]), 1e-6) << k;
    EXPECT_NEAR(q[k], q0[k] - 0.1 * (2 * d * p0[k] + q0[k]), 1e-6) << k;
  }
}

TEST(MfTest, UnseenUsersAndItemsFallBackToTheBiasesThatExist) {
  // Users 0, 1 and items 0, 1 rated; user 2 and item 2 never (but within the table's ids).
  const data::Table t = Ratings({0, 0, 1, 1, 2}, {0, 1, 0, 1, 2}, {5, 3, 4, 2, 1});
  data::Table train = t.Select({0, 1, 2, 3});
  auto e = FitLocal({{"rank", "3"}, {"epochs", "20"}, {"lr", "0.05"}}, train);
  const float mu = Section(*e, "mf.mean")[0];
  const std::vector<float> bu = Section(*e, "mf.user_bias"), bi = Section(*e, "mf.item_bias");
  EXPECT_FLOAT_EQ(mu, 3.5f);
  EXPECT_EQ(bu[2], 0.0f);
  EXPECT_EQ(bi[2], 0.0f);
  const data::Table q = Ratings({2, 0, 2}, {0, 2, 2}, {0, 0, 0});
  auto p = e->Predict(q, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_FLOAT_EQ(p->value[0], mu + bi[0]);
  EXPECT_FLOAT_EQ(p->value[1], mu + bu[0]);
  EXPECT_FLOAT_EQ(p->value[2], mu);
  // Ids above the model's: the same fallback.
  data::Table wide = Ratings({40}, {1}, {0});
  auto w = e->Predict(wide, 1);
  ASSERT_TRUE(w.ok());
  EXPECT_FLOAT_EQ(w->value[0], mu + bi[1]);
}

// ---- the noise floor ----

TEST(MfTest, TestRmseWithinTenPercentOfTheNoiseFloor) {
  const data::TableSplits s = Synthetic({300, 200, 3}, 60000, 10000, 11);
  auto e = FitLocal({{"rank", "3"}, {"epochs", "40"}, {"lr", "0.01"}, {"reg", "0.02"}}, s.train);
  const double rmse = Rmse(*e, s.test);
  EXPECT_LT(rmse, 1.1 * data::kRatingsNoiseSd);
  EXPECT_GT(rmse, 0.9 * data::kRatingsNoiseSd);  // no model beats the noise by much on 10,000 fresh ratings
}

// ---- the model file and bad input ----

TEST(MfTest, SaveLoadRoundTripPredictsIdentically) {
  const data::TableSplits s = Synthetic({40, 30, 2}, 2000, 300, 3);
  auto e = FitLocal({{"rank", "4"}, {"epochs", "5"}}, s.train);
  ModelWriter w;
  e->Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "m");
  ASSERT_TRUE(r.ok());
  auto loaded = Make({});
  ASSERT_TRUE(loaded->Load(*r).ok());
  auto a = e->Predict(s.test, 1);
  auto b = loaded->Predict(s.test, 3);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->value, b->value);
}

TEST(MfTest, LoadRejectsMalformedSections) {
  auto load = [](const std::vector<int64_t>& shape, int64_t factors) {
    ModelWriter w;
    w.PutInts("mf.shape", shape);
    w.PutFloats("mf.mean", std::vector<float>{1});
    const int64_t span = std::clamp<int64_t>(shape[0], 0, 8);  // the sections as written, whatever the shape says
    w.PutFloats("mf.user_bias", std::vector<float>(static_cast<size_t>(span)));
    w.PutFloats("mf.item_bias", std::vector<float>(static_cast<size_t>(span)));
    w.PutFloats("mf.user_factors", std::vector<float>(static_cast<size_t>(factors)));
    w.PutFloats("mf.item_factors", std::vector<float>(static_cast<size_t>(factors)));
    auto r = ModelReader::Parse(w.Encode(), "m");
    EXPECT_TRUE(r.ok());
    return Make({})->Load(*r);
  };
  EXPECT_TRUE(load({3, 2}, 6).ok());
  EXPECT_EQ(load({3, 2}, 5).code(), StatusCode::kDataLoss);
  EXPECT_EQ(load({0, 2}, 0).code(), StatusCode::kDataLoss);
  EXPECT_EQ(load({3, 0}, 0).code(), StatusCode::kDataLoss);
  EXPECT_EQ(load({int64_t{1} << 40, 2}, 6).code(), StatusCode::kDataLoss);
}

TEST(MfTest, BadTablesAndParametersAreRejected) {
  data::Table dense;
  dense.rows = 2;
  dense.cols = 2;
  dense.dense = {0, 1, 1, 0};
  dense.targets = {1, 2};
  Status st = Make({})->Fit(dense, FitContext{});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("ratings table"), std::string::npos) << st.ToString();
  data::Table no_targets = Ratings({0}, {0}, {});
  EXPECT_EQ(Make({})->Fit(no_targets, FitContext{}).code(), StatusCode::kInvalidArgument);
  data::Table huge = Ratings({(int64_t{1} << 24) - 1}, {0}, {1});
  st = Make({{"rank", "64"}})->Fit(huge, FitContext{});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("renumber"), std::string::npos) << st.ToString();
  EXPECT_FALSE(CreateEstimator("mf", {{"rank", "0"}}).ok());
  EXPECT_FALSE(CreateEstimator("mf", {{"lr", "0"}}).ok());
  EXPECT_FALSE(CreateEstimator("mf", {{"reg", "-1"}}).ok());
  EXPECT_EQ(Make({})->Predict(no_targets, 1).status().code(), StatusCode::kFailedPrecondition);
}

// ---- across workers ----

// Forwards to a ThreadCollectiveGroup member and counts the rows of every row-table round.
class CountingCollective final : public ForwardingCollective {
 public:
  using ForwardingCollective::ForwardingCollective;
  Result<RowUpdate> PushRowGradients(const RowTableSpec& t, std::span<const uint64_t> rows,
                                     std::span<const float> grads) override {
    table_rows = t.rows;
    width = t.width;
    pushed.push_back(static_cast<int64_t>(rows.size()));
    auto r = ForwardingCollective::PushRowGradients(t, rows, grads);
    if (r.ok()) answered.push_back(static_cast<int64_t>(r->rows.size()));
    return r;
  }
  std::vector<int64_t> pushed, answered;
  uint64_t table_rows = 0, width = 0;
};

struct Distributed {
  std::vector<std::unique_ptr<Estimator>> models;
  std::vector<std::unique_ptr<CountingCollective>> counters;
};

// Fits one worker per shard in threads (data centres of the given sizes), shards by user as the job cuts them.
Distributed FitDistributed(const Params& params, const data::Table& all, std::vector<int> centres) {
  int world = 0;
  for (int c : centres) world += c;
  ThreadCollectiveGroup group(centres);
  Distributed d;
  std::vector<data::Table> shards;
  for (int r = 0; r < world; ++r) {
    d.models.push_back(Make(params));
    d.counters.push_back(std::make_unique<CountingCollective>(group.Worker(r)));
    shards.push_back(ShardOf(all, r, world, 42));
  }
  std::vector<Status> status(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      FitContext ctx;
      ctx.collective = d.counters[r].get();
      status[r] = d.models[r]->Fit(shards[r], ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& st : status) EXPECT_TRUE(st.ok()) << st.ToString();
  // Every user's ratings sit on one worker.
  std::map<int64_t, int> owner;
  for (int r = 0; r < world; ++r) {
    for (int64_t q : shards[r].qids) EXPECT_EQ(owner.emplace(q, r).first->second, r) << "user " << q;
  }
  return d;
}

void ExpectSameModel(const Estimator& got, const Estimator& want, float tol) {
  for (const char* name : {"mf.mean", "mf.user_bias", "mf.item_bias", "mf.user_factors", "mf.item_factors"}) {
    const std::vector<float> a = Section(got, name), b = Section(want, name);
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], tol) << name << " " << k;
  }
}

TEST(MfDistributedTest, OneStepOfTwoByTwoWorkersEqualsTheSingleProcessStep) {
  // Batch >= every shard: one step per worker, whose item deltas the servers sum; the single process takes the
  // same step on the union (the same parameters, the same summed gradients).
  const data::TableSplits s = Synthetic({60, 50, 2}, 1500, 10, 5);
  const Params params = {{"rank", "3"}, {"epochs", "1"}, {"batch_size", "5000"}, {"lr", "0.002"}, {"seed", "3"}};
  auto local = FitLocal(params, s.train);
  Distributed d = FitDistributed(params, s.train, {2, 2});
  for (const auto& m : d.models) ExpectSameModel(*m, *local, 2e-6f);
}

TEST(MfDistributedTest, ManyStepsMatchTheSingleProcessFigureAndMoveOnlyTouchedRows) {
  const data::TableSplits s = Synthetic({300, 2000, 3}, 30000, 4000, 8);
  const Params params = {{"rank", "3"}, {"epochs", "12"}, {"batch_size", "8"}, {"lr", "0.01"}, {"reg", "0.02"}};
  auto local = FitLocal(params, s.train);
  Distributed d = FitDistributed(params, s.train, {2, 2});
  const double want = Rmse(*local, s.test), got = Rmse(*d.models[0], s.test);
  EXPECT_NEAR(got, want, 0.01);
  EXPECT_EQ(Section(*d.models[3], "mf.item_factors"), Section(*d.models[0], "mf.item_factors"));
  EXPECT_EQ(Section(*d.models[3], "mf.user_factors"), Section(*d.models[0], "mf.user_factors"));
  // Traffic: a worker pushes at most its batch's items (8 of a 2000-row table) and gets back at most the items of
  // the 4 workers' batches, each row rank + 1 floats wide.
  for (const auto& c : d.counters) {
    EXPECT_EQ(c->table_rows, 2000u);
    EXPECT_EQ(c->width, 4u);
    ASSERT_FALSE(c->pushed.empty());
    EXPECT_LE(*std::max_element(c->pushed.begin(), c->pushed.end()), 8);
    EXPECT_LE(*std::max_element(c->answered.begin(), c->answered.end()), 32);
    int64_t total = 0;
    for (int64_t n : c->answered) total += n;
    EXPECT_LE(total, 32 * static_cast<int64_t>(c->answered.size()));
  }
}

}  // namespace
}  // namespace geomx::algorithms
