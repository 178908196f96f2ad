// Tests of the online learners `ftrl` and `ftml` and of their update rules (engine/kernels/online_update.h). The
// expected values of the first steps are worked out by hand in the comments (closed forms of the papers), never by
// calling the code under test.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "engine/kernels/online_update.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

std::unique_ptr<Estimator> Make(const std::string& name, const Params& params) {
  auto e = CreateEstimator(name, params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<Estimator> FitLocal(const std::string& name, const Params& params, const data::Table& t) {
  auto e = Make(name, params);
  Status st = e->Fit(t, FitContext{});
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

std::vector<float> Weights(const Estimator& e, const std::string& name) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "mem");
  EXPECT_TRUE(r.ok());
  std::vector<float> v;
  EXPECT_TRUE(r->GetFloats(name + ".weights", &v).ok());
  return v;
}

double Accuracy(const Estimator& e, const data::Table& t) {
  auto p = e.Predict(t, 1);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  int64_t right = 0;
  for (int64_t i = 0; i < t.rows; ++i) right += static_cast<int>(p->value[i]) == t.labels[i] ? 1 : 0;
  return static_cast<double>(right) / static_cast<double>(t.rows);
}

// One feature per row: the hand-computed examples.
data::Table OneFeature(const std::vector<float>& x, const std::vector<int32_t>& y) {
  data::Table t;
  t.rows = static_cast<int64_t>(x.size());
  t.cols = 1;
  t.num_classes = 2;
  t.dense = x;
  t.labels = y;
  return t;
}

// Binary, class 1 iff w*.x > 0 for a fixed w* over d features (linearly separable, margin-free).
data::Table Separable(int64_t n, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  data::Table t;
  t.rows = n;
  t.cols = d;
  t.num_classes = 2;
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < d; ++j) {
      const float v = noise(rng);
      t.dense.push_back(v);
      s += (j % 2 == 0 ? 1.0 : -0.5) * v;
    }
    t.labels.push_back(s > 0 ? 1 : 0);
  }
  return t;
}

data::Table Blobs(int64_t n, int64_t d, int k, double sep, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<std::vector<double>> centre(static_cast<size_t>(k), std::vector<double>(static_cast<size_t>(d)));
  for (auto& c : centre) {
    for (double& v : c) v = sep * noise(rng);
  }
  data::Table t;
  t.rows = n;
  t.cols = d;
  t.num_classes = k;
  for (int64_t i = 0; i < n; ++i) {
    const int y = static_cast<int>(rng() % static_cast<uint64_t>(k));
    t.labels.push_back(y);
    for (int64_t j = 0; j < d; ++j) t.dense.push_back(static_cast<float>(centre[y][j] + noise(rng)));
  }
  return t;
}


// ---- The update rules against hand-computed steps.

TEST(FtrlUpdateTest, TwoStepsByHand) {
  // alpha 0.5, beta 1, l1 0.1, l2 0.2, from w = z = n = 0.
  const kernels::FtrlUpdate rule{0.5f, 1.0f, 0.1f, 0.2f};
  float w = 0, z = 0, n = 0;
  // g = 0.6: sigma = (sqrt(0.36) - 0) / 0.5 = 1.2; z = 0.6 - 1.2 * 0 = 0.6; n = 0.36;
  // |z| > l1: w = -(0.6 - 0.1) / ((1 + 0.6) / 0.5 + 0.2) = -0.5 / 3.4 = -0.147058823...
  rule(w, 0.6f, z, n);
  EXPECT_NEAR(z, 0.6f, 1e-7);
  EXPECT_NEAR(n, 0.36f, 1e-7);
  EXPECT_NEAR(w, -0.5 / 3.4, 1e-7);
  // g = -0.8: n = 1.0; sigma = (1 - 0.6) / 0.5 = 0.8; z = 0.6 - 0.8 - 0.8 * (-0.5 / 3.4) = -0.0823529...;
  // |z| <= l1 = 0.1, so w = 0 exactly.
  rule(w, -0.8f, z, n);
  EXPECT_NEAR(n, 1.0f, 1e-7);
  EXPECT_NEAR(z, -0.2 + 0.8 * 0.5 / 3.4, 1e-6);
  EXPECT_EQ(w, 0.0f);
  // Weight() is the closed form on its own: |z| = 2 > l1, w = -(2 - 0.1) / ((1 + 2) / 0.5 + 0.2) = -1.9 / 6.2.
  EXPECT_NEAR(rule.Weight(2.0f, 4.0f), -1.9 / 6.2, 1e-7);
  EXPECT_NEAR(rule.Weight(-2.0f, 4.0f), 1.9 / 6.2, 1e-7);
  EXPECT_EQ(rule.Weight(0.1f, 4.0f), 0.0f);
  // A zero gradient changes nothing (what makes lazy updates exact).
  float w2 = 0.3f, z2 = -1.5f, n2 = 2.0f;
  rule(w2, 0.0f, z2, n2);
  EXPECT_EQ(z2, -1.5f);
  EXPECT_EQ(n2, 2.0f);
}

TEST(FtmlUpdateTest, TwoStepsByHand) {
  // lr 0.1, beta1 0.6, beta2 0.999, eps 1e-8, no decay, from w = d = v = z = 0.
  float w = 0, d = 0, v = 0, z = 0;
  // t = 1, g = 0.5: v = 0.001 * 0.25 = 2.5e-4; d = (1 - 0.6) / 0.1 * (sqrt(2.5e-4 / 0.001) + 1e-8) = 4 * 0.50000001
  // = 2.00000004; z = 0.4 * 0.5 - d * 0 = 0.2; w = -0.2 / 2.00000004 = -0.0999999980.
  kernels::FtmlUpdate::Make(0.1f, 0.0f, 0.6f, 0.999f, 1e-8f, 1)(w, 0.5f, d, v, z);
  EXPECT_NEAR(v, 2.5e-4, 1e-8);  // float: 1 - 0.999 is 0.99998713e-3
  EXPECT_NEAR(d, 2.0, 1e-6);
  EXPECT_NEAR(z, 0.2, 1e-7);
  EXPECT_NEAR(w, -0.1, 1e-6);
  // t = 2, g = -0.2: v = 0.999 * 2.5e-4 + 0.001 * 0.04 = 2.8975e-4; bc2 = 1 - 0.999^2 = 0.001999;
  // sqrt(2.8975e-4 / 0.001999) = 0.3807186; d2 = (1 - 0.36) / 0.1 * 0.3807186 = 2.4366;
  // z = 0.6 * 0.2 + 0.4 * (-0.2) - (2.4366 - 0.6 * 2) * (-0.1) = 0.04 + 0.12366 = 0.16366; w = -0.16366 / 2.4366.
  kernels::FtmlUpdate::Make(0.1f, 0.0f, 0.6f, 0.999f, 1e-8f, 2)(w, -0.2f, d, v, z);
  EXPECT_NEAR(v, 2.8975e-4, 1e-8);
  EXPECT_NEAR(d, 2.4366060, 2e-5);
  EXPECT_NEAR(z, 0.1636606, 2e-6);
  EXPECT_NEAR(w, -0.0671674, 2e-6);
}

TEST(FtmlUpdateTest, WeightDecayEntersTheGradient) {
  // wd 0.5: step 1 has w = 0 so g' = g and it equals the undecayed step; step 2 has g' = -0.2 + 0.5 * (-0.1)
  // = -0.25: v = 2.4975e-4 + 0.001 * 0.0625 = 3.1225e-4; d2 = 6.4 * sqrt(3.1225e-4 / 0.001999) = 2.529442;
  // z = 0.12 + 0.4 * (-0.25) + (2.529442 - 1.2) * 0.1 = 0.1529442; w = -0.1529442 / 2.529442 = -0.0604656.
  float w = 0, d = 0, v = 0, z = 0;
  kernels::FtmlUpdate::Make(0.1f, 0.5f, 0.6f, 0.999f, 1e-8f, 1)(w, 0.5f, d, v, z);
  EXPECT_NEAR(w, -0.1, 1e-6);
  kernels::FtmlUpdate::Make(0.1f, 0.5f, 0.6f, 0.999f, 1e-8f, 2)(w, -0.2f, d, v, z);
  EXPECT_NEAR(v, 3.1225e-4, 1e-8);
  EXPECT_NEAR(d, 2.529442, 2e-5);
  EXPECT_NEAR(w, -0.0604656, 2e-6);
}

// ---- ftrl, the estimator.

TEST(FtrlTest, FirstStepsOfTheStreamByHand) {
  // Rows (x = 2, y = 1), (x = 1, y = 0); one weight, no intercept, alpha 0.5, beta 1.
  // Row 1: margin 0, p = 0.5, g = (0.5 - 1) * 2 = -1; n = 1, sigma = 1 / 0.5 = 2, z = -1;
  //        w = 1 / ((1 + 1) / 0.5) = 0.25.
  // Row 2: p = sigmoid(0.25) = 0.5621765, g = 0.5621765; n = 1.3160424; sigma = (sqrt(n) - 1) / 0.5 = 0.2943536;
  //        z = -1 + 0.5621765 - 0.2943536 * 0.25 = -0.5114180; w = 0.5114180 / ((1 + sqrt(n)) / 0.5) = 0.1190901.
  const data::Table t = OneFeature({2.0f, 1.0f}, {1, 0});
  const Params base = {{"alpha", "0.5"}, {"beta", "1"}, {"fit_intercept", "false"}};
  EXPECT_NEAR(Weights(*FitLocal("ftrl", base, t), "ftrl")[0], 0.1190901, 1e-6);
  // With l1 0.3 and l2 0.1: row 1 gives w = (1 - 0.3) / (4 + 0.1) = 0.1707317; row 2: p = 0.5425795,
  // n = 1.2943926, sigma = 0.2755236, z = -1 + 0.5425795 - 0.2755236 * 0.1707317 = -0.5044447 (|z| > l1),
  // w = (0.5044447 - 0.3) / ((1 + sqrt(n)) / 0.5 + 0.1) = 0.0467256.
  Params l1l2 = base;
  l1l2["l1"] = "0.3";
  l1l2["l2"] = "0.1";
  EXPECT_NEAR(Weights(*FitLocal("ftrl", l1l2, t), "ftrl")[0], 0.0467256, 1e-6);
  // One mini-batch of both rows: both see w = 0, g = -1 + 0.5 = -0.5 summed; n = 0.25, sigma = 1, z = -0.5,
  // w = 0.5 / ((1 + 0.5) / 0.5) = 1/6.
  Params batch = base;
  batch["batch_size"] = "2";
  EXPECT_NEAR(Weights(*FitLocal("ftrl", batch, t), "ftrl")[0], 1.0 / 6.0, 1e-6);
}

TEST(FtrlTest, OnePassLearnsASeparableProblem) {
  const data::Table train = Separable(3000, 6, 1), test = Separable(1000, 6, 2);
  auto e = FitLocal("ftrl", {{"alpha", "0.5"}}, train);
  EXPECT_GT(Accuracy(*e, test), 0.95);
  const data::Table blobs = Blobs(1500, 8, 4, 3.0, 3);
  auto ovr = FitLocal("ftrl", {}, blobs);
  EXPECT_GT(Accuracy(*ovr, blobs), 0.95);
  EXPECT_EQ(Weights(*ovr, "ftrl").size(), (8u + 1u) * 4u);  // one-vs-rest: 4 learners, intercept bucket
  auto p = ovr->Predict(blobs, 2);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->proba_columns, 4);
  for (int64_t i = 0; i < blobs.rows; ++i) {
    double s = 0;
    int arg = 0;
    for (int c = 0; c < 4; ++c) {
      s += p->proba[i * 4 + c];
      arg = p->proba[i * 4 + c] > p->proba[i * 4 + arg] ? c : arg;
    }
    EXPECT_NEAR(s, 1.0, 1e-5);
    EXPECT_EQ(arg, static_cast<int>(p->value[i]));
  }
}

TEST(FtrlTest, L1MakesNoiseWeightsExactlyZero) {
  // Two informative features among 30.
  std::mt19937_64 rng(4);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  data::Table t;
  t.rows = 2000;
  t.cols = 30;
  t.num_classes = 2;
  for (int64_t i = 0; i < t.rows; ++i) {
    std::vector<float> x(30);
    for (float& v : x) v = noise(rng);
    t.labels.push_back(2 * x[0] - x[1] > 0.5f * noise(rng) ? 1 : 0);
    t.dense.insert(t.dense.end(), x.begin(), x.end());
  }
  auto sparse_model = FitLocal("ftrl", {{"alpha", "0.3"}, {"l1", "30"}}, t);
  std::vector<float> w = Weights(*sparse_model, "ftrl");
  int zeros = 0;
  for (int j = 2; j < 30; ++j) zeros += w[j] == 0.0f ? 1 : 0;
  EXPECT_GE(zeros, 24);
  EXPECT_GT(w[0], 0.0f);
  EXPECT_LT(w[1], 0.0f);
  EXPECT_GT(Accuracy(*sparse_model, t), 0.85);
  auto dense_model = FitLocal("ftrl", {{"alpha", "0.3"}}, t);
  zeros = 0;
  for (float v : Weights(*dense_model, "ftrl")) zeros += v == 0.0f ? 1 : 0;
  EXPECT_EQ(zeros, 0);
}

TEST(FtrlTest, SparseTableAndHashing) {
  data::Table t = Separable(800, 40, 6);
  for (size_t k = 0; k < t.dense.size(); k += 4) t.dense[k] = 0.0f;
  // The CSR path visits the same non-zeros in the same order: the same model bit for bit.
  for (const char* bits : {"0", "5"}) {
    SCOPED_TRACE(bits);
    const Params params = {{"hash_bits", bits}, {"batch_size", "4"}};
    auto dense = FitLocal("ftrl", params, t);
    auto sparse = FitLocal("ftrl", params, t.ToSparse());
    EXPECT_EQ(Weights(*dense, "ftrl"), Weights(*sparse, "ftrl"));
  }
  auto hashed = FitLocal("ftrl", {{"hash_bits", "5"}}, t);
  EXPECT_EQ(Weights(*hashed, "ftrl").size(), 32u + 1u);  // 2^5 buckets + the intercept
  EXPECT_GT(Accuracy(*hashed, t), 0.6);                   // collisions cost accuracy, but it still learns
  auto p = hashed->Predict(t.ToSparse(), 1);
  auto q = hashed->Predict(t, 1);
  ASSERT_TRUE(p.ok() && q.ok());
  EXPECT_EQ(p->value, q->value);
}

// Fits `world` workers in threads, worker r on shards[r].
std::vector<std::unique_ptr<Estimator>> FitDistributed(const std::string& name, const Params& params,
                                                       const std::vector<data::Table>& shards) {
  const int world = static_cast<int>(shards.size());
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> models;
  for (int r = 0; r < world; ++r) models.push_back(Make(name, params));
  std::vector<Status> status(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      FitContext ctx;
      ctx.collective = group.Worker(r);
      status[r] = models[r]->Fit(shards[r], ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& st : status) EXPECT_TRUE(st.ok()) << st.ToString();
  return models;
}

TEST(OnlineDistributedTest, WorkersEqualOneProcessWithTheUnionBatch) {
  // Two workers with batch 3 each: global step k sums shard 0's rows 3k..3k+2 and shard 1's. The single process
  // with batch 6 on the interleaved stream takes the same steps.
  const data::Table all = Blobs(48, 5, 3, 1.5, 9);
  std::vector<int64_t> idx0, idx1, interleaved;
  for (int64_t i = 0; i < 24; ++i) idx0.push_back(i);
  for (int64_t i = 24; i < 48; ++i) idx1.push_back(i);
  for (int64_t k = 0; k < 8; ++k) {
    for (int64_t j = 0; j < 3; ++j) interleaved.push_back(3 * k + j);
    for (int64_t j = 0; j < 3; ++j) interleaved.push_back(24 + 3 * k + j);
  }
  for (const char* name : {"ftrl", "ftml"}) {
    SCOPED_TRACE(name);
    Params params = {{"batch_size", "3"}, {"epochs", "2"}};
    if (std::string(name) == "ftrl") params["l1"] = "0.5";
    auto models = FitDistributed(name, params, {all.Select(idx0), all.Select(idx1)});
    params["batch_size"] = "6";
    auto local = FitLocal(name, params, all.Select(interleaved));
    const std::vector<float> want = Weights(*local, name), got = Weights(*models[0], name);
    ASSERT_EQ(want.size(), got.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-5) << k;
    EXPECT_EQ(Weights(*models[1], name), got);
  }
}

TEST(OnlineDistributedTest, UnequalShardsFinish) {
  const data::Table all = Separable(300, 4, 3);
  std::vector<int64_t> a, b;
  for (int64_t i = 0; i < 300; ++i) (i < 250 ? a : b).push_back(i);
  auto models =
      FitDistributed("ftrl", {{"batch_size", "8"}, {"alpha", "0.5"}}, {all.Select(a), all.Select(b), all.Select({})});
  EXPECT_GT(Accuracy(*models[0], all), 0.9);
  EXPECT_EQ(Weights(*models[2], "ftrl"), Weights(*models[0], "ftrl"));
}

// ---- ftml, the estimator.

TEST(FtmlTest, FirstStepByHand) {
  // Row (x = 2, y = 1), no intercept, lr 0.1: g = (0.5 - 1) * 2 = -1, so w = -lr * g / (|g| + eps) = 0.1
  // (the FTML first step has size lr whatever the gradient's scale). The second row, all zero, has no feature
  // present and so no update: it only makes the table two-class.
  auto e = FitLocal("ftml", {{"lr", "0.1"}, {"fit_intercept", "false"}}, OneFeature({2.0f, 0.0f}, {1, 0}));
  EXPECT_NEAR(Weights(*e, "ftml")[0], 0.1, 1e-6);
}

TEST(FtmlTest, LearnsToyProblems) {
  const data::Table train = Separable(3000, 6, 1), test = Separable(1000, 6, 2);
  auto e = FitLocal("ftml", {{"lr", "0.01"}, {"epochs", "2"}}, train);
  EXPECT_GT(Accuracy(*e, test), 0.95);
  const data::Table blobs = Blobs(1500, 8, 4, 3.0, 3);
  auto ovr = FitLocal("ftml", {{"lr", "0.01"}}, blobs);
  EXPECT_GT(Accuracy(*ovr, blobs), 0.95);
}

class LossObserver : public FitObserver {
 public:
  void OnStep(int64_t, const Metrics& m) override { loss.push_back(MetricValue(m, "loss")); }
  std::vector<double> loss;
};

TEST(OnlineTest, ProgressiveLossFallsAcrossPasses) {
  const data::Table t = Separable(500, 4, 8);
  for (const char* name : {"ftrl", "ftml"}) {
    LossObserver obs;
    FitContext ctx;
    ctx.observer = &obs;
    ASSERT_TRUE(Make(name, {{"epochs", "3"}})->Fit(t, ctx).ok());
    ASSERT_EQ(obs.loss.size(), 3u);
    EXPECT_LT(obs.loss[2], obs.loss[0]) << name;
  }
}

// ---- Shared contract.

TEST(OnlineTest, SaveLoadRoundTripPredictsIdentically) {
  const data::Table t = Blobs(300, 6, 3, 2.0, 5);
  for (const char* name : {"ftrl", "ftml"}) {
    for (const char* bits : {"0", "4"}) {
      SCOPED_TRACE(std::string(name) + " hash_bits " + bits);
      auto e = FitLocal(name, {{"hash_bits", bits}}, t);
      ModelWriter w;
      e->Save(&w);
      auto reader = ModelReader::Parse(w.Encode(), "model.gxm");
      ASSERT_TRUE(reader.ok());
      auto loaded = Make(name, {});  // the file's own shape wins over the parameter
      ASSERT_TRUE(loaded->Load(*reader).ok());
      auto a = e->Predict(t, 1);
      auto b = loaded->Predict(t.ToSparse(), 2);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->value, b->value);
      EXPECT_EQ(a->proba, b->proba);
    }
  }
}

TEST(OnlineTest, LoadRejectsMalformedSections) {
  ModelWriter w;
  const std::vector<int64_t> shape = {6, 3, 0, 1};
  w.PutInts("ftrl.shape", shape);
  w.PutFloats("ftrl.weights", std::vector<float>(20));  // (6 + 1) x 3 = 21 expected
  auto r = ModelReader::Parse(w.Encode(), "m");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Make("ftrl", {})->Load(*r).code(), StatusCode::kDataLoss);
  ModelWriter bits;
  const std::vector<int64_t> huge = {6, 3, 60, 1};
  bits.PutInts("ftml.shape", huge);
  auto r2 = ModelReader::Parse(bits.Encode(), "m");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(Make("ftml", {})->Load(*r2).code(), StatusCode::kDataLoss);
}

TEST(OnlineTest, PredictRejectsWrongColumnCount) {
  for (const char* name : {"ftrl", "ftml"}) {
    auto e = FitLocal(name, {}, Separable(50, 4, 1));
    auto p = e->Predict(Separable(5, 3, 1), 1);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("3"), std::string::npos);
    EXPECT_NE(p.status().message().find("4"), std::string::npos);
  }
}

TEST(OnlineTest, BadParametersAreRejected) {
  const std::vector<std::pair<std::string, Params>> bad = {
      {"ftrl", {{"alpha", "0"}}},     {"ftrl", {{"beta", "-1"}}},       {"ftrl", {{"l1", "-0.1"}}},
      {"ftrl", {{"hash_bits", "40"}}}, {"ftrl", {{"epochs", "0"}}},     {"ftrl", {{"batch_size", "0"}}},
      {"ftrl", {{"lr", "0.1"}}},       {"ftml", {{"beta1", "1"}}},      {"ftml", {{"beta2", "1.5"}}},
      {"ftml", {{"lr", "0"}}},         {"ftml", {{"epsilon", "0"}}},    {"ftml", {{"alpha", "0.1"}}},
  };
  for (const auto& [name, params] : bad) {
    auto e = CreateEstimator(name, params);
    EXPECT_FALSE(e.ok()) << name << " " << params.begin()->first;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(OnlineTest, BadTablesAreRejected) {
  for (const char* name : {"ftrl", "ftml"}) {
    data::Table empty;
    empty.cols = 2;
    empty.num_classes = 2;
    Status st = Make(name, {})->Fit(empty, FitContext{});
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("empty"), std::string::npos);
    data::Table one = OneFeature({1, 2, 3}, {1, 1, 1});
    EXPECT_EQ(Make(name, {})->Fit(one, FitContext{}).code(), StatusCode::kInvalidArgument);
    one.labels.clear();
    EXPECT_EQ(Make(name, {})->Fit(one, FitContext{}).code(), StatusCode::kInvalidArgument);
    std::atomic<bool> stop{true};
    FitContext ctx;
    ctx.interrupted = &stop;
    EXPECT_EQ(Make(name, {})->Fit(Separable(20, 2, 1), ctx).code(), StatusCode::kCancelled);
  }
}

}  // namespace
}  // namespace geomx::algorithms
