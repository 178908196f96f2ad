// Tests of linear-svm and linear-svr (algorithms/estimators/linear_svm.cc) and of the dual coordinate descent under
// them (dual_cd.h), against independent references: the KKT conditions and the duality gap of the duals, evaluated
// here in double precision from the returned duals and weights; hand-made separable and noiseless sets; ordinary
// least squares solved here by normal equations (Friedman #1); the single-process fit for the CoCoA one.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/dual_cd.h"
#include "algorithms/estimators/estimator.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

// n rows of d features; class c's rows are drawn around a random centre at scale `sep` (unit Gaussian noise).
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
    for (int64_t j = 0; j < d; ++j) t.dense.push_back(static_cast<float>(centre[static_cast<size_t>(y)][static_cast<size_t>(j)] + noise(rng)));
  }
  return t;
}

// Friedman #1: x ~ U[0,1]^10, y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + N(0, noise^2).
data::Table Friedman1(int64_t n, double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> e(0.0, noise);
  data::Table t;
  t.rows = n;
  t.cols = 10;
  t.source = "friedman1";
  for (int64_t i = 0; i < n; ++i) {
    double x[10];
    for (double& v : x) v = u(rng);
    for (double v : x) t.dense.push_back(static_cast<float>(v));
    const double y = 10 * std::sin(std::numbers::pi * x[0] * x[1]) + 20 * (x[2] - 0.5) * (x[2] - 0.5) + 10 * x[3] + 5 * x[4];
    t.targets.push_back(static_cast<float>(y + e(rng)));
  }
  return t;
}


// Row i with the constant 1 appended (the bias feature), in double.
std::vector<double> Augmented(const data::Table& t, int64_t i) {
  std::vector<double> x(static_cast<size_t>(t.cols) + 1, 1.0);
  for (int64_t j = 0; j < t.cols; ++j) x[static_cast<size_t>(j)] = t.Row(i)[j];
  return x;
}

double DotD(const std::vector<double>& a, std::span<const float> b) {
  double s = 0;
  for (size_t j = 0; j < a.size(); ++j) s += a[j] * b[j];
  return s;
}

std::unique_ptr<Estimator> Make(const std::string& name, const Params& params) {
  auto e = CreateEstimator(name, params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<Estimator> FitLocal(const std::string& name, const Params& params, const data::Table& t,
                                    int threads = 1) {
  auto e = Make(name, params);
  FitContext ctx;
  ctx.threads = threads;
  Status st = e->Fit(t, ctx);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

std::vector<float> PredictValues(const Estimator& e, const data::Table& t) {
  auto p = e.Predict(t, 2);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->value : std::vector<float>{};
}

double Accuracy(const std::vector<float>& pred, const data::Table& t) {
  int64_t ok = 0;
  for (int64_t i = 0; i < t.rows; ++i) ok += static_cast<int32_t>(pred[static_cast<size_t>(i)]) == t.labels[static_cast<size_t>(i)];
  return static_cast<double>(ok) / static_cast<double>(t.rows);
}

double R2(const std::vector<float>& pred, const data::Table& t) {
  double mean = 0;
  for (float y : t.targets) mean += y;
  mean /= static_cast<double>(t.rows);
  double ss_res = 0, ss_tot = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    const double y = t.targets[static_cast<size_t>(i)];
    ss_res += (y - pred[static_cast<size_t>(i)]) * (y - pred[static_cast<size_t>(i)]);
    ss_tot += (y - mean) * (y - mean);
  }
  return 1.0 - ss_res / ss_tot;
}

// The saved weights (rows of cols + 1: features, intercept).
std::vector<float> SavedWeights(const Estimator& e) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "model");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> out;
  EXPECT_TRUE(r->GetFloats("linear.weights", &out).ok());
  return out;
}

// Fits `name` on every shard as a worker of a ThreadCollectiveGroup; returns the workers' estimators.
std::vector<std::unique_ptr<Estimator>> FitDistributed(const std::string& name, const Params& params,
                                                       const std::vector<data::Table>& shards) {
  const int world = static_cast<int>(shards.size());
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> est;
  for (int r = 0; r < world; ++r) est.push_back(Make(name, params));
  std::vector<Status> status(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      FitContext ctx;
      ctx.collective = group.Worker(r);
      ctx.seed = 7;
      status[static_cast<size_t>(r)] = est[static_cast<size_t>(r)]->Fit(shards[static_cast<size_t>(r)], ctx);
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : status) EXPECT_TRUE(s.ok()) << s.ToString();
  return est;
}

std::vector<data::Table> Shards(const data::Table& t, int world) {
  std::vector<std::vector<int64_t>> index(static_cast<size_t>(world));
  for (int64_t i = 0; i < t.rows; ++i) index[static_cast<size_t>(i % world)].push_back(i);
  std::vector<data::Table> out;
  for (const auto& ix : index) out.push_back(t.Select(ix));
  return out;
}

// ---- The solver: KKT conditions and duality gap, computed here from the returned duals.

struct SvcSolution {
  std::vector<double> alpha;
  std::vector<float> w;
};

SvcSolution SolveBinary(const data::Table& t, const std::vector<float>& y, double c, SvmLoss loss) {
  RowExamples examples(t, 1.0f, 1);
  std::vector<std::vector<float>> cost = {std::vector<float>(static_cast<size_t>(t.rows), static_cast<float>(c))};
  auto task = MakeSvcTask(examples, {y}, cost, loss, 1e-7, 3);
  DualCdOptions options;
  options.max_iter = 200000;
  FitContext ctx;
  auto report = RunDualCd(task.get(), options, ctx, "test", nullptr);
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report->converged);
  auto a = task->coefficients(0);
  return {std::vector<double>(a.begin(), a.end()), std::vector<float>(task->w(0).begin(), task->w(0).end())};
}

std::vector<float> BinaryLabels(const data::Table& t) {
  std::vector<float> y;
  for (int32_t l : t.labels) y.push_back(l == 1 ? 1.0f : -1.0f);
  return y;
}

TEST(DualCdSvc, HingeLossKktAndDualityGap) {
  const data::Table t = Blobs(80, 4, 2, 0.8, 11);  // overlapping classes: every kind of dual variable occurs
  const std::vector<float> y = BinaryLabels(t);
  const double c = 0.5;  // exact in float, as the solver stores costs
  const SvcSolution s = SolveBinary(t, y, c, SvmLoss::kHinge);

  // w = sum_i alpha_i y_i x_i (with the bias feature).
  std::vector<double> w(static_cast<size_t>(t.cols) + 1, 0.0);
  for (int64_t i = 0; i < t.rows; ++i) {
    const std::vector<double> x = Augmented(t, i);
    for (size_t j = 0; j < x.size(); ++j) w[j] += s.alpha[static_cast<size_t>(i)] * y[static_cast<size_t>(i)] * x[j];
  }
  for (size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(s.w[j], w[j], 1e-4 * (1 + std::fabs(w[j])));

  const double eps = 1e-3;
  int at_zero = 0, free = 0, at_c = 0;
  double primal = 0, dual = 0, norm = 0;
  for (double v : w) norm += v * v;
  for (int64_t i = 0; i < t.rows; ++i) {
    const double a = s.alpha[static_cast<size_t>(i)];
    const double margin = y[static_cast<size_t>(i)] * DotD(Augmented(t, i), s.w);
    ASSERT_GE(a, 0.0);
    ASSERT_LE(a, c);
    if (a == 0) {
      EXPECT_GE(margin, 1 - eps) << "row " << i;
      ++at_zero;
    } else if (a < c) {
      EXPECT_NEAR(margin, 1.0, eps) << "row " << i;
      ++free;
    } else {
      EXPECT_LE(margin, 1 + eps) << "row " << i;
      ++at_c;
    }
    primal += c * std::max(0.0, 1 - margin);
    dual += a;
  }
  primal += 0.5 * norm;
  dual -= 0.5 * norm;
  EXPECT_GT(at_zero, 0);
  EXPECT_GT(free, 0);
  EXPECT_GT(at_c, 0);
  EXPECT_GE(primal, dual - 1e-6 * std::fabs(primal));  // weak duality, up to rounding
  EXPECT_LT(primal - dual, 1e-3 * std::fabs(primal));
}

TEST(DualCdSvc, SquaredHingeKktAndDualityGap) {
  const data::Table t = Blobs(80, 4, 2, 0.8, 12);
  const std::vector<float> y = BinaryLabels(t);
  const double c = 2.0;
  const SvcSolution s = SolveBinary(t, y, c, SvmLoss::kSquaredHinge);
  double primal = 0, dual = 0, norm = 0;
  for (float v : s.w) norm += static_cast<double>(v) * v;
  for (int64_t i = 0; i < t.rows; ++i) {
    const double a = s.alpha[static_cast<size_t>(i)];
    const double margin = y[static_cast<size_t>(i)] * DotD(Augmented(t, i), s.w);
    // Stationarity of the L2-loss dual: alpha_i = 2 C max(0, 1 - margin_i).
    EXPECT_NEAR(a, 2 * c * std::max(0.0, 1 - margin), 1e-3 * (1 + a)) << "row " << i;
    const double slack = std::max(0.0, 1 - margin);
    primal += c * slack * slack;
    dual += a - a * a / (4 * c);
  }
  primal += 0.5 * norm;
  dual -= 0.5 * norm;
  EXPECT_GE(primal, dual - 1e-6 * std::fabs(primal));  // weak duality, up to rounding
  EXPECT_LT(primal - dual, 1e-3 * std::fabs(primal));
}

TEST(LinearSvm, EstimatorReachesTheSolverOptimum) {
  // The primal is strongly convex, so the estimator (its own seed and wiring of labels, costs and bias) must land
  // on the same w as the solver run above from the labels written here.
  const data::Table t = Blobs(80, 4, 2, 0.8, 13);
  const SvcSolution s = SolveBinary(t, BinaryLabels(t), 0.5, SvmLoss::kHinge);
  auto e = FitLocal("linear-svm", {{"C", "0.5"}, {"loss", "hinge"}, {"tol", "1e-7"}, {"max_iter", "200000"}}, t);
  const std::vector<float> w = SavedWeights(*e);
  ASSERT_EQ(w.size(), s.w.size());
  for (size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(w[j], s.w[j], 2e-3);
}

TEST(LinearSvm, SeparableToyHasFullMarginAndAccuracy) {
  // Two clouds on either side of x0 + x1 = 0 with a gap: a large C gives the hard-margin SVM.
  data::Table t;
  t.cols = 2;
  t.num_classes = 2;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-3, 3);
  while (t.rows < 60) {
    const double a = u(rng), b = u(rng);
    if (std::fabs(a + b) < 1.0) continue;
    t.dense.push_back(static_cast<float>(a));
    t.dense.push_back(static_cast<float>(b));
    t.labels.push_back(a + b > 0 ? 1 : 0);
    ++t.rows;
  }
  for (const char* loss : {"hinge", "squared_hinge"}) {
    auto e = FitLocal("linear-svm", {{"C", "1000"}, {"loss", loss}, {"tol", "1e-5"}, {"max_iter", "100000"}}, t);
    EXPECT_EQ(Accuracy(PredictValues(*e, t), t), 1.0) << loss;
    const std::vector<float> w = SavedWeights(*e);
    for (int64_t i = 0; i < t.rows; ++i) {
      const double y = t.labels[static_cast<size_t>(i)] == 1 ? 1 : -1;
      EXPECT_GE(y * (t.Row(i)[0] * w[0] + t.Row(i)[1] * w[1] + w[2]), 1 - 1e-2) << loss << " row " << i;
    }
  }
}

TEST(LinearSvm, OneVsRestOnThreeClasses) {
  // Same seed: the same centres; rows 300.. are fresh draws around them.
  const data::Table all = Blobs(600, 5, 3, 3.0, 21);
  std::vector<int64_t> first, second;
  for (int64_t i = 0; i < all.rows; ++i) (i < 300 ? first : second).push_back(i);
  const data::Table train = all.Select(first), fresh = all.Select(second);
  auto e = FitLocal("linear-svm", {}, train, /*threads=*/2);
  const std::vector<float> pred = PredictValues(*e, fresh);
  EXPECT_GE(Accuracy(pred, fresh), 0.95);
  EXPECT_GE(Accuracy(PredictValues(*e, train), train), 0.95);
  // Three weight vectors; the prediction is the argmax of the decision values computed here.
  const std::vector<float> w = SavedWeights(*e);
  ASSERT_EQ(w.size(), 3u * 6u);
  for (int64_t i = 0; i < fresh.rows; ++i) {
    int best = 0;
    double best_score = -1e300;
    for (int c = 0; c < 3; ++c) {
      double s = w[static_cast<size_t>(c * 6 + 5)];
      for (int j = 0; j < 5; ++j) s += static_cast<double>(fresh.Row(i)[j]) * w[static_cast<size_t>(c * 6 + j)];
      if (s > best_score) {
        best_score = s;
        best = c;
      }
    }
    EXPECT_EQ(pred[static_cast<size_t>(i)], best) << "row " << i;
  }
}

TEST(LinearSvm, ThreadsReachTheSameOptimum) {
  // Large enough for the one-vs-rest problems to be spread over threads; the optimum is unique.
  const data::Table t = Blobs(2000, 50, 4, 0.5, 35);
  const Params p = {{"C", "0.1"}, {"tol", "1e-4"}, {"max_iter", "100000"}};
  auto one = FitLocal("linear-svm", p, t, 1);
  auto two = FitLocal("linear-svm", p, t, 2);
  const std::vector<float> a = SavedWeights(*one), b = SavedWeights(*two);
  ASSERT_EQ(a.size(), 4u * 51u);
  for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-3);
}

TEST(LinearSvm, SparseInputGivesTheSameModel) {
  data::Table t = Blobs(120, 6, 3, 2.0, 31);
  for (size_t k = 0; k < t.dense.size(); k += 3) t.dense[k] = 0.0f;  // some real zeros
  const Params p = {{"tol", "1e-6"}, {"max_iter", "100000"}};
  auto dense = FitLocal("linear-svm", p, t);
  auto sparse = FitLocal("linear-svm", p, t.ToSparse());
  const std::vector<float> a = SavedWeights(*dense), b = SavedWeights(*sparse);
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-3);
  EXPECT_EQ(PredictValues(*dense, t), PredictValues(*sparse, t.ToSparse()));
}

TEST(LinearSvm, BalancedClassWeightMovesTheBoundaryTowardsTheMajority) {
  // 9:1 imbalance with overlap: balancing must raise the recall of the minority class.
  data::Table t = Blobs(400, 2, 2, 0.7, 41);
  std::vector<int64_t> keep;
  int minority = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    if (t.labels[static_cast<size_t>(i)] == 0 || (minority++ % 9) == 0) keep.push_back(i);
  }
  t = t.Select(keep);
  auto recall = [&](const Estimator& e) {
    const std::vector<float> pred = PredictValues(e, t);
    int64_t hit = 0, total = 0;
    for (int64_t i = 0; i < t.rows; ++i) {
      if (t.labels[static_cast<size_t>(i)] != 1) continue;
      ++total;
      hit += pred[static_cast<size_t>(i)] == 1.0f;
    }
    return static_cast<double>(hit) / static_cast<double>(total);
  };
  auto plain = FitLocal("linear-svm", {}, t);
  auto balanced = FitLocal("linear-svm", {{"class_weight", "balanced"}}, t);
  EXPECT_GT(recall(*balanced), recall(*plain));
}

TEST(LinearSvm, DistributedReachesLocalAccuracy) {
  const data::Table all = Blobs(1200, 8, 3, 1.2, 51);
  std::vector<int64_t> tr, te;
  for (int64_t i = 0; i < all.rows; ++i) (i % 4 == 0 ? te : tr).push_back(i);
  const data::Table train = all.Select(tr), test = all.Select(te);
  const Params p = {{"C", "0.1"}, {"outer_rounds", "40"}, {"local_epochs", "2"}};
  auto local = FitLocal("linear-svm", p, train);
  const double local_acc = Accuracy(PredictValues(*local, test), test);
  for (int world : {2, 3}) {
    auto workers = FitDistributed("linear-svm", p, Shards(train, world));
    const double acc = Accuracy(PredictValues(*workers[0], test), test);
    EXPECT_GE(acc, local_acc - 0.02) << world << " workers";
    // Every worker ends with the same model.
    for (int r = 1; r < world; ++r) EXPECT_EQ(SavedWeights(*workers[0]), SavedWeights(*workers[static_cast<size_t>(r)]));
  }
}

TEST(LinearSvm, SaveLoadRoundTrip) {
  const data::Table t = Blobs(150, 4, 3, 2.0, 61);
  auto e = FitLocal("linear-svm", {}, t);
  ModelWriter w;
  e->Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "m");
  ASSERT_TRUE(r.ok());
  auto loaded = Make("linear-svm", {});
  ASSERT_TRUE(loaded->Load(*r).ok());
  EXPECT_EQ(PredictValues(*e, t), PredictValues(*loaded, t));
  EXPECT_EQ(MetricValue(loaded->ModelMetrics(t, {}), "support_vectors"),
            MetricValue(e->ModelMetrics(t, {}), "support_vectors"));

  // A weights section of the wrong size is data loss, not a crash.
  ModelWriter bad;
  const std::vector<int64_t> shape = {3, 4};
  bad.PutInts("linear.shape", shape);
  bad.PutFloats("linear.weights", std::vector<float>(7, 0.0f));
  auto rb = ModelReader::Parse(bad.Encode(), "bad");
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(Make("linear-svm", {})->Load(*rb).code(), StatusCode::kDataLoss);
  ModelWriter huge;
  const std::vector<int64_t> huge_shape = {int64_t{1} << 40, int64_t{1} << 40};
  huge.PutInts("linear.shape", huge_shape);
  auto rh = ModelReader::Parse(huge.Encode(), "huge");
  ASSERT_TRUE(rh.ok());
  EXPECT_EQ(Make("linear-svm", {})->Load(*rh).code(), StatusCode::kDataLoss);
}

TEST(LinearSvm, RejectsBadParamsAndData) {
  for (const Params& p : std::vector<Params>{{{"C", "0"}}, {{"C", "-1"}}, {{"loss", "log"}}, {{"tol", "0"}},
                                             {{"max_iter", "0"}}, {{"class_weight", "auto"}}, {{"fit_intercept", "maybe"}},
                                             {{"outer_rounds", "0"}}, {{"gamma", "1"}}}) {
    auto e = CreateEstimator("linear-svm", p);
    EXPECT_FALSE(e.ok()) << p.begin()->first;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    }
  }
  const data::Table t = Blobs(30, 3, 2, 2.0, 71);
  auto e = FitLocal("linear-svm", {}, t);
  const data::Table wide = Blobs(10, 4, 2, 2.0, 72);
  auto p = e->Predict(wide, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("4"), std::string::npos);
  EXPECT_NE(p.status().message().find("3"), std::string::npos);

  FitContext ctx;
  data::Table empty;
  empty.cols = 3;
  empty.num_classes = 2;
  EXPECT_EQ(Make("linear-svm", {})->Fit(empty, ctx).code(), StatusCode::kInvalidArgument);
  data::Table one = t;
  for (int32_t& l : one.labels) l = 1;
  EXPECT_EQ(Make("linear-svm", {})->Fit(one, ctx).code(), StatusCode::kInvalidArgument);
  data::Table unlabelled = t;
  unlabelled.labels.clear();
  EXPECT_EQ(Make("linear-svm", {})->Fit(unlabelled, ctx).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Make("linear-svm", {})->Predict(t, 1).status().code(), StatusCode::kFailedPrecondition);
}

TEST(LinearSvm, InterruptedFitIsCancelled) {
  const data::Table t = Blobs(100, 4, 3, 0.5, 81);
  std::atomic<bool> stop{true};
  FitContext ctx;
  ctx.interrupted = &stop;
  EXPECT_EQ(Make("linear-svm", {{"tol", "1e-9"}})->Fit(t, ctx).code(), StatusCode::kCancelled);
}

class CountingObserver : public FitObserver {
 public:
  void OnStep(int64_t, const Metrics& metrics) override {
    ++steps;
    if (MetricValue(metrics, "accuracy") >= 0) ++with_eval;
  }
  int steps = 0, with_eval = 0;
};

TEST(LinearSvm, ReportsProgress) {
  const data::Table t = Blobs(100, 4, 3, 2.0, 91);
  CountingObserver observer;
  FitContext ctx;
  ctx.observer = &observer;
  ctx.eval = &t;
  ASSERT_TRUE(Make("linear-svm", {})->Fit(t, ctx).ok());
  EXPECT_GT(observer.steps, 0);
  EXPECT_GT(observer.with_eval, 0);
}

// ---- linear-svr

struct SvrSolution {
  std::vector<double> beta;
  std::vector<float> w;
};

SvrSolution SolveSvr(const data::Table& t, double c, double epsilon) {
  RowExamples examples(t, 1.0f, 1);
  auto task = MakeSvrTask(examples, t.targets, std::vector<float>(static_cast<size_t>(t.rows), static_cast<float>(c)),
                          SvmLoss::kHinge, epsilon, 1e-8, 5);
  DualCdOptions options;
  options.max_iter = 200000;
  FitContext ctx;
  auto report = RunDualCd(task.get(), options, ctx, "test", nullptr);
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report->converged);
  auto b = task->coefficients(0);
  return {std::vector<double>(b.begin(), b.end()), std::vector<float>(task->w(0).begin(), task->w(0).end())};
}

TEST(DualCdSvr, L1LossKktAndDualityGap) {
  const data::Table t = Friedman1(100, 1.0, 101);
  const double c = 1.0 / 16, epsilon = 1.0;  // c exact in float, as the solver stores costs
  const SvrSolution s = SolveSvr(t, c, epsilon);
  std::vector<double> w(static_cast<size_t>(t.cols) + 1, 0.0);
  for (int64_t i = 0; i < t.rows; ++i) {
    const std::vector<double> x = Augmented(t, i);
    for (size_t j = 0; j < x.size(); ++j) w[j] += s.beta[static_cast<size_t>(i)] * x[j];
  }
  for (size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(s.w[j], w[j], 1e-4 * (1 + std::fabs(w[j])));

  const double tol = 2e-3;
  int inside = 0, on_tube = 0, at_c = 0;
  double norm = 0, primal = 0, dual = 0;
  for (double v : w) norm += v * v;
  for (int64_t i = 0; i < t.rows; ++i) {
    const double b = s.beta[static_cast<size_t>(i)];
    const double y = t.targets[static_cast<size_t>(i)];
    const double r = y - DotD(Augmented(t, i), s.w);
    ASSERT_LE(std::fabs(b), c);
    if (b == 0) {
      EXPECT_LE(std::fabs(r), epsilon + tol) << "row " << i;
      ++inside;
    } else if (std::fabs(b) < c) {
      EXPECT_NEAR(std::fabs(r), epsilon, tol) << "row " << i;
      EXPECT_GT(r * b, 0) << "row " << i;
      ++on_tube;
    } else {
      EXPECT_GE(std::fabs(r), epsilon - tol) << "row " << i;
      EXPECT_GT(r * b, 0) << "row " << i;
      ++at_c;
    }
    primal += c * std::max(0.0, std::fabs(r) - epsilon);
    dual += y * b - epsilon * std::fabs(b);
  }
  primal += 0.5 * norm;
  dual -= 0.5 * norm;
  EXPECT_GT(inside, 0);
  EXPECT_GT(on_tube, 0);
  EXPECT_GT(at_c, 0);
  EXPECT_GE(primal, dual - 1e-6 * std::fabs(primal));  // weak duality, up to rounding
  EXPECT_LT(primal - dual, 1e-3 * std::fabs(primal));
}

TEST(LinearSvr, NoiselessLinearDataRecoversWeights) {
  data::Table t;
  t.cols = 3;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  const double truth[4] = {2.0, -3.0, 0.5, 1.0};  // w, then intercept
  for (int i = 0; i < 200; ++i) {
    double y = truth[3];
    for (int j = 0; j < 3; ++j) {
      const double x = u(rng);
      t.dense.push_back(static_cast<float>(x));
      y += truth[j] * x;
    }
    t.targets.push_back(static_cast<float>(y));
    ++t.rows;
  }
  for (const char* loss : {"epsilon_insensitive", "squared_epsilon_insensitive"}) {
    auto e = FitLocal("linear-svr", {{"C", "100"}, {"epsilon", "0"}, {"loss", loss}, {"tol", "1e-6"},
                                     {"max_iter", "100000"}},
                      t);
    const std::vector<float> w = SavedWeights(*e);
    ASSERT_EQ(w.size(), 4u);
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(w[static_cast<size_t>(j)], truth[j], 1e-2) << loss << " weight " << j;
  }
}

// Ordinary least squares with intercept, by normal equations in double (Gaussian elimination, partial pivoting).
std::vector<double> Ols(const data::Table& t) {
  const size_t d = static_cast<size_t>(t.cols) + 1;
  std::vector<std::vector<double>> a(d, std::vector<double>(d + 1, 0.0));
  for (int64_t i = 0; i < t.rows; ++i) {
    const std::vector<double> x = Augmented(t, i);
    for (size_t j = 0; j < d; ++j) {
      for (size_t k = 0; k < d; ++k) a[j][k] += x[j] * x[k];
      a[j][d] += x[j] * t.targets[static_cast<size_t>(i)];
    }
  }
  for (size_t col = 0; col < d; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < d; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    }
    std::swap(a[col], a[pivot]);
    for (size_t r = 0; r < d; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (size_t k = col; k <= d; ++k) a[r][k] -= f * a[col][k];
    }
  }
  std::vector<double> w(d);
  for (size_t j = 0; j < d; ++j) w[j] = a[j][d] / a[j][j];
  return w;
}

TEST(LinearSvr, FriedmanR2IsThatOfALinearModel) {
  const data::Table train = Friedman1(1000, 1.0, 111), test = Friedman1(500, 1.0, 112);
  auto e = FitLocal("linear-svr", {{"C", "1"}, {"epsilon", "0.1"}}, train);
  const double r2 = R2(PredictValues(*e, test), test);
  const std::vector<double> ols = Ols(train);
  std::vector<float> ols_pred;
  for (int64_t i = 0; i < test.rows; ++i) {
    double s = ols.back();
    for (int64_t j = 0; j < test.cols; ++j) s += ols[static_cast<size_t>(j)] * test.Row(i)[j];
    ols_pred.push_back(static_cast<float>(s));
  }
  const double ols_r2 = R2(ols_pred, test);
  EXPECT_GT(ols_r2, 0.6);  // the reference itself: a linear model explains ~0.7 of Friedman #1
  EXPECT_GT(r2, ols_r2 - 0.05);
  EXPECT_LT(r2, ols_r2 + 0.05);
  // The standard metrics agree with the R^2 computed here.
  auto p = e->Predict(test, 1);
  EXPECT_NEAR(MetricValue(EvaluateTask(data::TableTask::kRegression, test, *p), "r2"), r2, 1e-6);
}

TEST(LinearSvr, DistributedReachesLocalR2) {
  const data::Table train = Friedman1(900, 1.0, 121), test = Friedman1(300, 1.0, 122);
  const Params p = {{"outer_rounds", "60"}, {"local_epochs", "2"}, {"tol", "0.01"}};
  auto local = FitLocal("linear-svr", p, train);
  const double local_r2 = R2(PredictValues(*local, test), test);
  for (int world : {2, 3}) {
    auto workers = FitDistributed("linear-svr", p, Shards(train, world));
    EXPECT_GE(R2(PredictValues(*workers[0], test), test), local_r2 - 0.02) << world << " workers";
    for (int r = 1; r < world; ++r) EXPECT_EQ(SavedWeights(*workers[0]), SavedWeights(*workers[static_cast<size_t>(r)]));
  }
}

TEST(LinearSvr, SaveLoadAndErrors) {
  const data::Table t = Friedman1(100, 1.0, 131);
  auto e = FitLocal("linear-svr", {}, t);
  ModelWriter w;
  e->Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "m");
  ASSERT_TRUE(r.ok());
  auto loaded = Make("linear-svr", {});
  ASSERT_TRUE(loaded->Load(*r).ok());
  EXPECT_EQ(PredictValues(*e, t), PredictValues(*loaded, t));

  for (const Params& p : std::vector<Params>{{{"epsilon", "-0.1"}}, {{"loss", "hinge"}}, {{"C", "0"}}, {{"tol", "x"}}}) {
    EXPECT_FALSE(CreateEstimator("linear-svr", p).ok()) << p.begin()->second;
  }
  data::Table narrow = t;
  narrow.cols = 9;
  narrow.dense.resize(static_cast<size_t>(narrow.rows * 9));
  EXPECT_EQ(e->Predict(narrow, 1).status().code(), StatusCode::kInvalidArgument);
  data::Table no_targets = t;
  no_targets.targets.clear();
  FitContext ctx;
  EXPECT_EQ(Make("linear-svr", {})->Fit(no_targets, ctx).code(), StatusCode::kInvalidArgument);
  data::Table empty;
  empty.cols = 10;
  EXPECT_EQ(Make("linear-svr", {})->Fit(empty, ctx).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::algorithms
