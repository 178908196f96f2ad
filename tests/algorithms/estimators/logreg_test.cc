// Tests of the `logreg` estimator against independent references: a naive objective written here (double
// precision, one row at a time) and its finite differences, the optimality condition at the fitted model, hand-made
// separable sets, the single-process fit for the distributed one.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "algorithms/estimators/estimator.h"

namespace geomx::algorithms {
// Defined in algorithms/estimators/logreg.cc (test hook).
double LogRegObjectiveForTesting(const data::Table& table, const std::map<std::string, std::string>& params,
                                 const std::vector<double>& theta, std::vector<double>* grad);
void LogRegUsePortableKernelsForTesting(bool portable);
}  // namespace geomx::algorithms

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

// n rows of d features; class c's rows are drawn around a centre at distance `sep` along a per-class direction.
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
  t.source = "blobs";
  for (int64_t i = 0; i < n; ++i) {
    const int y = static_cast<int>(i % k);
    t.labels.push_back(y);
    for (int64_t j = 0; j < d; ++j) t.dense.push_back(static_cast<float>(centre[y][j] + noise(rng)));
  }
  return t;
}


std::unique_ptr<Estimator> Make(const Params& params) {
  auto e = CreateEstimator("logreg", params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<Estimator> FitLocal(const Params& params, const data::Table& t, int threads = 1) {
  auto e = Make(params);
  FitContext ctx;
  ctx.threads = threads;
  Status st = e->Fit(t, ctx);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

// A section of the estimator's saved model.
std::vector<float> Section(const Estimator& e, const std::string& name) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "mem");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> v;
  EXPECT_TRUE(r->GetFloats(name, &v).ok());
  return v;
}

double Accuracy(const Estimator& e, const data::Table& t) {
  auto p = e.Predict(t, 1);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  int64_t right = 0;
  for (int64_t i = 0; i < t.rows; ++i) right += static_cast<int>(p->value[i]) == t.labels[i] ? 1 : 0;
  return static_cast<double>(right) / static_cast<double>(t.rows);
}

// The documented objective, written independently: theta = [W (d x m, feature-major), b (m) if intercept].
// f = (1/S) [sum_i s_i nll_i + ||W||^2 / (2C)]   (l2)   or without the penalty (none).
double NaiveObjective(const data::Table& t, const std::vector<double>& theta, bool intercept, double C, bool l2) {
  const int64_t d = t.cols;
  const int64_t m = t.num_classes == 2 ? 1 : t.num_classes;
  double total = 0, weight = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    std::vector<double> z(static_cast<size_t>(m), 0.0);
    for (int64_t c = 0; c < m; ++c) {
      z[c] = intercept ? theta[d * m + c] : 0.0;
      for (int64_t j = 0; j < d; ++j) z[c] += theta[j * m + c] * t.Row(i)[j];
    }
    double nll;
    if (m == 1) {
      const double p1 = 1.0 / (1.0 + std::exp(-z[0]));
      nll = t.labels[i] == 1 ? -std::log(p1) : -std::log(1.0 - p1);
    } else {
      double norm = 0;
      for (double v : z) norm += std::exp(v);
      nll = -std::log(std::exp(z[t.labels[i]]) / norm);
    }
    total += t.weight(i) * nll;
    weight += t.weight(i);
  }
  if (l2) {
    double sq = 0;
    for (int64_t j = 0; j < d * m; ++j) sq += theta[j] * theta[j];
    total += sq / (2.0 * C);
  }
  return total / weight;
}

struct ObjectiveCase {
  int classes;
  bool intercept;
  std::string penalty;
};

// Both block-kernel flavours (SIMD where the CPU has it, and the portable loops), dense and sparse tables, and
// column counts that leave remainders in the SIMD tiles (19 = 16 + 3, 9 rows = 2 x 4 + 1).
class LogRegObjectiveTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  void SetUp() override { LogRegUsePortableKernelsForTesting(std::get<0>(GetParam())); }
  void TearDown() override { LogRegUsePortableKernelsForTesting(false); }
};

TEST_P(LogRegObjectiveTest, ObjectiveAndGradientMatchNaiveAndFiniteDifferences) {
  const bool sparse = std::get<1>(GetParam());
  for (const ObjectiveCase& c : {ObjectiveCase{3, true, "l2"}, ObjectiveCase{2, true, "l2"},
                                 ObjectiveCase{2, false, "none"}, ObjectiveCase{7, false, "l2"}}) {
    SCOPED_TRACE(std::to_string(c.classes) + " classes, penalty " + c.penalty);
    data::Table t = Blobs(9, 19, c.classes, 0.5, 7);
    for (size_t k = 0; k < t.dense.size(); k += 5) t.dense[k] = 0.0f;
    for (int64_t i = 0; i < t.rows; ++i) t.weights.push_back(0.5f + 0.25f * static_cast<float>(i % 3));
    const int64_t m = c.classes == 2 ? 1 : c.classes;
    const int64_t n = t.cols * m + (c.intercept ? m : 0);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-0.7, 0.7);
    std::vector<double> theta(static_cast<size_t>(n));
    for (double& v : theta) v = static_cast<float>(u(rng));  // float-representable: the model computes in float
    const Params params = {{"C", "0.8"}, {"penalty", c.penalty}, {"fit_intercept", c.intercept ? "true" : "false"}};
    std::vector<double> grad;
    const double f = LogRegObjectiveForTesting(sparse ? t.ToSparse() : t, params, theta, &grad);
    const bool l2 = c.penalty == "l2";
    EXPECT_NEAR(f, NaiveObjective(t, theta, c.intercept, 0.8, l2), 1e-6);
    ASSERT_EQ(static_cast<int64_t>(grad.size()), n);
    for (int64_t k = 0; k < n; ++k) {
      const double h = 1e-5;
      std::vector<double> plus = theta, minus = theta;
      plus[k] += h;
      minus[k] -= h;
      const double fd =
          (NaiveObjective(t, plus, c.intercept, 0.8, l2) - NaiveObjective(t, minus, c.intercept, 0.8, l2)) / (2 * h);
      EXPECT_NEAR(grad[k], fd, 1e-5 + 1e-4 * std::fabs(fd)) << "coordinate " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, LogRegObjectiveTest, ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// Gradient of the naive objective by central differences, at the fitted model's parameters.
std::vector<double> NaiveGradient(const data::Table& t, const std::vector<double>& theta, double C) {
  std::vector<double> g(theta.size());
  for (size_t k = 0; k < theta.size(); ++k) {
    std::vector<double> plus = theta, minus = theta;
    plus[k] += 1e-5;
    minus[k] -= 1e-5;
    g[k] = (NaiveObjective(t, plus, true, C, true) - NaiveObjective(t, minus, true, C, true)) / 2e-5;
  }
  return g;
}

TEST(LogRegTest, LbfgsReachesTheOptimum) {
  data::Table t = Blobs(300, 5, 3, 0.8, 11);
  auto e = FitLocal({{"C", "0.5"}, {"tol", "1e-7"}, {"max_iter", "500"}}, t);
  std::vector<float> coef = Section(*e, "logreg.coef"), icpt = Section(*e, "logreg.intercept");
  std::vector<double> theta(coef.begin(), coef.end());
  theta.insert(theta.end(), icpt.begin(), icpt.end());
  for (double g : NaiveGradient(t, theta, 0.5)) EXPECT_NEAR(g, 0.0, 2e-5);
}

TEST(LogRegTest, SeparableBinaryAndMulticlassAreLearnt) {
  // Binary: class 1 iff x0 + x1 > 0, margin 1.
  data::Table t;
  t.cols = 2;
  t.num_classes = 2;
  for (int a = -5; a <= 5; ++a) {
    for (int b = -5; b <= 5; ++b) {
      if (std::abs(a + b) < 1) continue;
      t.dense.push_back(static_cast<float>(a));
      t.dense.push_back(static_cast<float>(b));
      t.labels.push_back(a + b > 0 ? 1 : 0);
      ++t.rows;
    }
  }
  for (const char* solver : {"lbfgs", "sgd", "adam"}) {
    SCOPED_TRACE(solver);
    auto e = FitLocal({{"solver", solver}, {"C", "100"}, {"lr", "0.1"}, {"batch_size", "16"}, {"max_iter", "200"}}, t);
    EXPECT_EQ(Accuracy(*e, t), 1.0);
    auto p = e->Predict(t, 2);
    ASSERT_TRUE(p.ok());
    ASSERT_EQ(p->proba_columns, 2);
    for (int64_t i = 0; i < t.rows; ++i) {
      EXPECT_NEAR(p->proba[i * 2] + p->proba[i * 2 + 1], 1.0, 1e-6);
      EXPECT_EQ(p->proba[i * 2 + 1] > 0.5f, p->value[i] == 1.0f);
    }
    // The separating direction is (1, 1): the two weights agree in sign and nearly in size.
    std::vector<float> coef = Section(*e, "logreg.coef");
    ASSERT_EQ(coef.size(), 2u);
    EXPECT_GT(coef[0], 0);
    EXPECT_NEAR(coef[0] / coef[1], 1.0, 0.2);
  }
  data::Table blobs = Blobs(240, 6, 4, 4.0, 5);
  auto e = FitLocal({}, blobs);
  EXPECT_EQ(Accuracy(*e, blobs), 1.0);
  auto p = e->Predict(blobs, 1);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->proba_columns, 4);
  for (int64_t i = 0; i < blobs.rows; ++i) {
    double s = 0;
    for (int c = 0; c < 4; ++c) s += p->proba[i * 4 + c];
    EXPECT_NEAR(s, 1.0, 1e-5);
  }
}

TEST(LogRegTest, SparseTableGivesTheDenseModel) {
  data::Table t = Blobs(1100, 8, 3, 1.0, 2);
  for (size_t k = 0; k < t.dense.size(); k += 3) t.dense[k] = 0.0f;  // some real zeros
  const Params params = {{"tol", "1e-6"}, {"max_iter", "200"}};
  auto dense = FitLocal(params, t, 2);  // two threads: the per-thread partial sums
  auto sparse = FitLocal(params, t.ToSparse(), 1);
  std::vector<float> a = Section(*dense, "logreg.coef"), b = Section(*sparse, "logreg.coef");
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-3);
  auto pd = dense->Predict(t.ToSparse(), 1);
  auto ps = sparse->Predict(t, 1);
  ASSERT_TRUE(pd.ok() && ps.ok());
  EXPECT_EQ(pd->value, ps->value);
}

// Fits `world` workers in threads, worker r on shards[r]; returns rank 0's model and checks all statuses.
std::vector<std::unique_ptr<Estimator>> FitDistributed(const Params& params, const std::vector<data::Table>& shards) {
  const int world = static_cast<int>(shards.size());
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> models;
  for (int r = 0; r < world; ++r) models.push_back(Make(params));
  std::vector<Status> status(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      FitContext ctx;
      ctx.threads = 1;
      ctx.collective = group.Worker(r);
      status[r] = models[r]->Fit(shards[r], ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& st : status) EXPECT_TRUE(st.ok()) << st.ToString();
  return models;
}

std::vector<data::Table> Shard(const data::Table& t, const std::vector<int64_t>& sizes) {
  std::vector<data::Table> shards;
  int64_t at = 0;
  for (int64_t n : sizes) {
    std::vector<int64_t> index;
    for (int64_t i = 0; i < n; ++i) index.push_back(at + i);
    shards.push_back(t.Select(index));
    at += n;
  }
  EXPECT_EQ(at, t.rows);
  return shards;
}

TEST(LogRegTest, DistributedLbfgsEqualsSingleProcessOnTheUnion) {
  data::Table t = Blobs(180, 6, 3, 0.7, 21);
  for (int64_t i = 0; i < t.rows; ++i) t.weights.push_back(1.0f + static_cast<float>(i % 4) * 0.5f);
  const Params params = {{"C", "2"}, {"tol", "1e-7"}, {"max_iter", "400"}};
  auto local = FitLocal(params, t);
  // Unequal shards, one of them empty.
  auto models = FitDistributed(params, Shard(t, {70, 0, 110}));
  std::vector<float> want = Section(*local, "logreg.coef");
  std::vector<float> rank0 = Section(*models[0], "logreg.coef");
  ASSERT_EQ(want.size(), rank0.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(rank0[k], want[k], 2e-4);
  std::vector<float> want_b = Section(*local, "logreg.intercept"), got_b = Section(*models[0], "logreg.intercept");
  for (size_t k = 0; k < want_b.size(); ++k) EXPECT_NEAR(got_b[k], want_b[k], 2e-4);
  // Every worker holds exactly the same model.
  for (size_t r = 1; r < models.size(); ++r) EXPECT_EQ(Section(*models[r], "logreg.coef"), rank0);
}

TEST(LogRegTest, DistributedAdamMatchesSingleProcessAccuracy) {
  data::Table t = Blobs(400, 5, 3, 1.2, 4);
  const Params params = {{"solver", "adam"}, {"lr", "0.05"}, {"batch_size", "20"}, {"max_iter", "30"}};
  auto local = FitLocal(params, t);
  auto models = FitDistributed(params, Shard(t, {200, 200}));
  EXPECT_NEAR(Accuracy(*models[0], t), Accuracy(*local, t), 0.03);
  EXPECT_GT(Accuracy(*models[0], t), 0.8);
  EXPECT_EQ(Section(*models[0], "logreg.coef"), Section(*models[1], "logreg.coef"));
}

TEST(LogRegTest, L1GivesExactZerosOnNoiseFeatures) {
  // Two informative features, eighteen of pure noise.
  std::mt19937_64 rng(9);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  data::Table t;
  t.cols = 20;
  t.num_classes = 2;
  t.rows = 400;
  for (int64_t i = 0; i < t.rows; ++i) {
    std::vector<float> x(20);
    for (float& v : x) v = noise(rng);
    t.labels.push_back(x[0] + 0.5f * x[1] > 0.3f * noise(rng) ? 1 : 0);
    t.dense.insert(t.dense.end(), x.begin(), x.end());
  }
  for (const char* solver : {"sgd", "adam"}) {
    SCOPED_TRACE(solver);
    auto e = FitLocal({{"penalty", "l1"}, {"C", "0.02"}, {"solver", solver}, {"lr", "0.05"}, {"batch_size", "50"},
                       {"max_iter", "60"}},
                      t);
    std::vector<float> coef = Section(*e, "logreg.coef");
    int zeros = 0;
    for (int j = 2; j < 20; ++j) zeros += coef[j] == 0.0f ? 1 : 0;
    EXPECT_GE(zeros, 12);
    EXPECT_GT(coef[0], 0.1f);
    EXPECT_GT(Accuracy(*e, t), 0.85);
  }
  auto l2 = FitLocal({{"C", "0.02"}}, t);
  int zeros = 0;
  for (float v : Section(*l2, "logreg.coef")) zeros += v == 0.0f ? 1 : 0;
  EXPECT_EQ(zeros, 0);
}

TEST(LogRegTest, SaveLoadRoundTripPredictsIdentically) {
  data::Table t = Blobs(150, 7, 3, 1.0, 8);
  auto e = FitLocal({}, t);
  ModelWriter w;
  e->Save(&w);
  auto reader = ModelReader::Parse(w.Encode(), "model.gxm");
  ASSERT_TRUE(reader.ok());
  auto loaded = Make({});
  ASSERT_TRUE(loaded->Load(*reader).ok());
  for (const data::Table& input : {t, t.ToSparse()}) {
    auto a = e->Predict(input, 1);
    auto b = loaded->Predict(input, 2);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->value, b->value);
    EXPECT_EQ(a->proba, b->proba);
  }
}

TEST(LogRegTest, LoadRejectsMalformedSections) {
  ModelWriter bad_count;
  const std::vector<int64_t> shape = {4, 3, 3};
  bad_count.PutInts("logreg.shape", shape);
  bad_count.PutFloats("logreg.coef", std::vector<float>(11));  // 4 x 3 expected
  bad_count.PutFloats("logreg.intercept", std::vector<float>(3));
  auto r = ModelReader::Parse(bad_count.Encode(), "m");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Make({})->Load(*r).code(), StatusCode::kDataLoss);

  ModelWriter bad_shape;
  const std::vector<int64_t> huge = {int64_t{1} << 40, 3, 3};
  bad_shape.PutInts("logreg.shape", huge);
  auto r2 = ModelReader::Parse(bad_shape.Encode(), "m");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(Make({})->Load(*r2).code(), StatusCode::kDataLoss);

  ModelWriter missing;
  auto r3 = ModelReader::Parse(missing.Encode(), "m");
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(Make({})->Load(*r3).code(), StatusCode::kDataLoss);
}

TEST(LogRegTest, PredictRejectsWrongColumnCount) {
  data::Table t = Blobs(60, 4, 2, 1.0, 1);
  auto e = FitLocal({}, t);
  data::Table wide = Blobs(5, 5, 2, 1.0, 1);
  auto p = e->Predict(wide, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("5"), std::string::npos);
  EXPECT_NE(p.status().message().find("4"), std::string::npos);
  EXPECT_EQ(Make({})->Predict(t, 1).status().code(), StatusCode::kFailedPrecondition);
}

TEST(LogRegTest, BadParametersAreRejected) {
  for (const Params& p : std::vector<Params>{{{"C", "0"}},
                                             {{"C", "-1"}},
                                             {{"C", "abc"}},
                                             {{"penalty", "elasticnet"}},
                                             {{"solver", "newton-cg"}},
                                             {{"max_iter", "0"}},
                                             {{"batch_size", "0"}},
                                             {{"lr", "0"}},
                                             {{"tol", "-1"}},
                                             {{"c", "1"}}}) {
    auto e = CreateEstimator("logreg", p);
    EXPECT_FALSE(e.ok()) << p.begin()->first << "=" << p.begin()->second;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    }
  }
  // l1 with lbfgs is a combination the parameter table cannot reject: Fit does.
  auto e = Make({{"penalty", "l1"}});
  Status st = e->Fit(Blobs(20, 2, 2, 1.0, 1), FitContext{});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("lbfgs"), std::string::npos);
}

TEST(LogRegTest, BadTablesAreRejected) {
  data::Table empty;
  empty.cols = 3;
  empty.num_classes = 2;
  Status st = Make({})->Fit(empty, FitContext{});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("empty"), std::string::npos);

  data::Table one = Blobs(10, 2, 2, 1.0, 1);
  for (int32_t& y : one.labels) y = 1;
  EXPECT_EQ(Make({})->Fit(one, FitContext{}).code(), StatusCode::kInvalidArgument);
  one.num_classes = 1;
  for (int32_t& y : one.labels) y = 0;
  EXPECT_EQ(Make({})->Fit(one, FitContext{}).code(), StatusCode::kInvalidArgument);

  data::Table out_of_range = Blobs(10, 2, 2, 1.0, 1);
  out_of_range.labels[3] = 2;
  EXPECT_EQ(Make({})->Fit(out_of_range, FitContext{}).code(), StatusCode::kInvalidArgument);

  data::Table unlabelled = Blobs(10, 2, 2, 1.0, 1);
  unlabelled.labels.clear();
  EXPECT_EQ(Make({})->Fit(unlabelled, FitContext{}).code(), StatusCode::kInvalidArgument);
}

TEST(LogRegTest, InterruptCancelsTheFit) {
  std::atomic<bool> stop{true};
  for (const char* solver : {"lbfgs", "adam"}) {
    FitContext ctx;
    ctx.interrupted = &stop;
    EXPECT_EQ(Make({{"solver", solver}})->Fit(Blobs(50, 3, 2, 1.0, 1), ctx).code(), StatusCode::kCancelled);
  }
}

class CountingObserver : public FitObserver {
 public:
  void OnStep(int64_t, const Metrics& m) override {
    ++calls;
    loss = MetricValue(m, "loss");
  }
  int calls = 0;
  double loss = -1;
};

TEST(LogRegTest, ReportsProgress) {
  data::Table t = Blobs(100, 3, 3, 1.0, 3);
  CountingObserver obs;
  FitContext ctx;
  ctx.observer = &obs;
  ctx.eval = &t;
  ASSERT_TRUE(Make({{"max_iter", "5"}, {"tol", "0"}})->Fit(t, ctx).ok());
  EXPECT_GE(obs.calls, 1);
  EXPECT_LE(obs.calls, 5);
  EXPECT_GT(obs.loss, 0);
}

}  // namespace
}  // namespace geomx::algorithms
