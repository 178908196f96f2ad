// Tests of the SMO solver (smo.h) and the `svm` / `svr` estimators (kernel_svm.cc). References are independent of
// the code under test: the KKT conditions of the duals checked with a naive double-precision kernel sum, a
// hand-computed max-margin hyperplane, XOR, gamma=scale by hand, and a manual one-vs-one vote over binary solves.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/smo.h"
#include "comm/handlers/payloads.h"
#include "comm/handlers/reducer.h"

namespace geomx::algorithms {
namespace {

using smo::KernelSpec;
using smo::KernelType;

data::Table Dense(int64_t cols, const std::vector<std::vector<float>>& rows) {
  data::Table t;
  t.rows = static_cast<int64_t>(rows.size());
  t.cols = cols;
  for (const auto& r : rows) t.dense.insert(t.dense.end(), r.begin(), r.end());
  return t;
}

data::Table ToCsr(const data::Table& d) {
  data::Table t = d;
  t.sparse = true;
  t.dense.clear();
  t.row_ptr = {0};
  for (int64_t i = 0; i < d.rows; ++i) {
    for (int64_t c = 0; c < d.cols; ++c) {
      const float v = d.dense[i * d.cols + c];
      if (v != 0) {
        t.col_index.push_back(static_cast<int32_t>(c));
        t.values.push_back(v);
      }
    }
    t.row_ptr.push_back(static_cast<int64_t>(t.values.size()));
  }
  return t;
}

// Gaussian blobs: `per` points around each centre, labels 0..K-1.
data::Table Blobs(const std::vector<std::vector<float>>& centres, int per, double sd, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, sd);
  data::Table t;
  t.cols = static_cast<int64_t>(centres[0].size());
  t.num_classes = static_cast<int>(centres.size());
  for (int i = 0; i < per; ++i) {
    for (size_t k = 0; k < centres.size(); ++k) {
      for (float c : centres[k]) t.dense.push_back(static_cast<float>(c + noise(gen)));
      t.labels.push_back(static_cast<int32_t>(k));
      ++t.rows;
    }
  }
  return t;
}

// Naive double-precision kernel: the reference the tests compare the float solver against.
double NaiveKernel(const KernelSpec& k, const data::Table& a, int64_t i, const data::Table& b, int64_t j) {
  double dot = 0, d2 = 0;
  for (int64_t c = 0; c < a.cols; ++c) {
    const double x = a.dense[i * a.cols + c], z = b.dense[j * b.cols + c];
    dot += x * z;
    d2 += (x - z) * (x - z);
  }
  switch (k.type) {
    case KernelType::kLinear: return dot;
    case KernelType::kPoly: return std::pow(k.gamma * dot + k.coef0, k.degree);
    case KernelType::kRbf: return std::exp(-k.gamma * d2);
    case KernelType::kSigmoid: return std::tanh(k.gamma * dot + k.coef0);
  }
  return 0;
}

// f(x_j) = sum_i coef_i K(x_i, x_j) - rho.
std::vector<double> NaiveDecision(const KernelSpec& k, const data::Table& pts, const smo::SolveResult& r,
                                  const data::Table& at) {
  std::vector<double> f(static_cast<size_t>(at.rows), -r.rho);
  for (int64_t j = 0; j < at.rows; ++j) {
    for (int64_t i = 0; i < pts.rows; ++i) {
      if (r.coef[i] != 0) f[j] += r.coef[i] * NaiveKernel(k, pts, i, at, j);
    }
  }
  return f;
}

std::unique_ptr<Estimator> Make(const std::string& name, const std::map<std::string, std::string>& params) {
  auto est = CreateEstimator(name, params);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  return std::move(*est);
}

double Accuracy(const Prediction& p, const data::Table& t) {
  int64_t ok = 0;
  for (int64_t i = 0; i < t.rows; ++i) ok += static_cast<int32_t>(p.value[i]) == t.labels[i];
  return static_cast<double>(ok) / static_cast<double>(t.rows);
}

TEST(Smo, CsvcSatisfiesKkt) {
  data::Table t = Blobs({{0, 0}, {1.2f, 0.8f}}, 40, 0.6, 1);
  std::vector<double> y(t.rows), upper(t.rows, 1.0);
  for (int64_t i = 0; i < t.rows; ++i) y[i] = t.labels[i] == 0 ? 1 : -1;
  const KernelSpec k{.type = KernelType::kRbf, .gamma = 0.7};
  const double tol = 1e-3;
  smo::SolveResult r = smo::SolveCsvc(t, y, upper, k, {.tol = tol});
  ASSERT_TRUE(r.converged);
  double balance = 0;
  int free = 0, at_c = 0;
  const std::vector<double> f = NaiveDecision(k, t, r, t);
  for (int64_t i = 0; i < t.rows; ++i) {
    const double a = r.alpha[i], margin = y[i] * f[i];
    ASSERT_GE(a, 0);
    ASSERT_LE(a, 1.0);
    EXPECT_DOUBLE_EQ(r.coef[i], y[i] * a);
    balance += y[i] * a;
    if (a == 0) {
      EXPECT_GE(margin, 1 - 2 * tol) << i;
    } else if (a == 1.0) {
      EXPECT_LE(margin, 1 + 2 * tol) << i;
      ++at_c;
    } else {
      EXPECT_NEAR(margin, 1, 2 * tol) << i;
      ++free;
    }
  }
  EXPECT_NEAR(balance, 0, 1e-9);
  EXPECT_GT(free, 0);
  EXPECT_GT(at_c, 0);  // overlapping blobs: some points inside the margin
  // The objective reported is the dual's, recomputed naively.
  double obj = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    for (int64_t j = 0; j < t.rows; ++j) obj += 0.5 * r.coef[i] * r.coef[j] * NaiveKernel(k, t, i, t, j);
    obj -= r.alpha[i];
  }
  EXPECT_NEAR(r.objective, obj, 1e-4 * std::fabs(obj));
}

TEST(Smo, EpsilonSvrSatisfiesKkt) {
  std::mt19937 gen(2);
  std::uniform_real_distribution<double> u(-3, 3);
  std::normal_distribution<double> noise(0, 0.1);
  data::Table t;
  t.cols = 1;
  std::vector<double> z;
  for (int i = 0; i < 60; ++i) {
    const double x = u(gen);
    t.dense.push_back(static_cast<float>(x));
    z.push_back(std::sin(x) + noise(gen));
    ++t.rows;
  }
  const double C = 5, eps = 0.1, tol = 1e-3;
  const KernelSpec k{.type = KernelType::kRbf, .gamma = 0.5};
  std::vector<double> upper(t.rows, C);
  smo::SolveResult r = smo::SolveEpsilonSvr(t, z, upper, eps, k, {.tol = tol});
  ASSERT_TRUE(r.converged);
  ASSERT_EQ(r.alpha.size(), 2u * t.rows);
  const std::vector<double> f = NaiveDecision(k, t, r, t);
  double balance = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    const double a = r.alpha[i], as = r.alpha[i + t.rows], resid = z[i] - f[i];
    ASSERT_GE(a, 0);
    ASSERT_LE(a, C);
    ASSERT_GE(as, 0);
    ASSERT_LE(as, C);
    EXPECT_TRUE(a == 0 || as == 0) << i;  // at most one side of the tube
    EXPECT_NEAR(r.coef[i], a - as, 1e-12);
    balance += a - as;
    if (a == 0 && as == 0) {
      EXPECT_LE(std::fabs(resid), eps + 2 * tol) << i;
    } else if (a > 0 && a < C) {
      EXPECT_NEAR(resid, eps, 2 * tol) << i;
    } else if (a == C) {
      EXPECT_GE(resid, eps - 2 * tol) << i;
    } else if (as < C) {
      EXPECT_NEAR(resid, -eps, 2 * tol) << i;
    } else {
      EXPECT_LE(resid, -eps + 2 * tol) << i;
    }
  }
  EXPECT_NEAR(balance, 0, 1e-9);
}

TEST(Smo, LinearKernelFindsTheMaxMarginHyperplane) {
  // Class +1 around (1,1)+s, class -1 around (-1,-1)+s with s = (3,1). The closest pair of the two hulls along
  // x + y is (1,1)+s / (-1,-1)+s, at distance 2 sqrt 2, so the max-margin hyperplane is w = (1/2, 1/2),
  // w.x + b = 0 through s: b = -(3 + 1)/2 = -2, and the margin is sqrt 2.
  const std::vector<std::vector<float>> pos = {{1, 1}, {2, 2}, {1, 3}, {3, 1}};
  const std::vector<std::vector<float>> neg = {{-1, -1}, {-2, -1}, {-1, -3}, {-3, -2}};
  std::vector<std::vector<float>> rows;
  std::vector<double> y;
  for (int side = 0; side < 2; ++side) {
    for (const auto& p : side == 0 ? pos : neg) {
      rows.push_back({p[0] + 3, p[1] + 1});
      y.push_back(side == 0 ? 1 : -1);
    }
  }
  data::Table t = Dense(2, rows);
  std::vector<double> upper(t.rows, 1000.0);
  smo::SolveResult r = smo::SolveCsvc(t, y, upper, {.type = KernelType::kLinear}, {.tol = 1e-6});
  double w0 = 0, w1 = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    w0 += r.coef[i] * t.dense[2 * i];
    w1 += r.coef[i] * t.dense[2 * i + 1];
  }
  EXPECT_NEAR(w0, 0.5, 1e-4);
  EXPECT_NEAR(w1, 0.5, 1e-4);
  EXPECT_NEAR(-r.rho, -2.0, 1e-4);  // b = -rho
  // Support vectors are exactly the two closest points.
  for (int64_t i = 0; i < t.rows; ++i) EXPECT_EQ(r.alpha[i] > 1e-9, i == 0 || i == 4) << i;
}

TEST(Smo, CacheSizeDoesNotChangeTheResult) {
  data::Table t = Blobs({{0, 0, 0}, {1, 1, 0}}, 80, 0.8, 3);
  std::vector<double> y(t.rows), upper(t.rows, 2.0);
  for (int64_t i = 0; i < t.rows; ++i) y[i] = t.labels[i] == 0 ? 1 : -1;
  const KernelSpec k{.type = KernelType::kRbf, .gamma = 0.5};
  for (bool shrinking : {true, false}) {
    smo::SolveResult big = smo::SolveCsvc(t, y, upper, k, {.shrinking = shrinking, .cache_mb = 200});
    smo::SolveResult tiny = smo::SolveCsvc(t, y, upper, k, {.shrinking = shrinking, .cache_mb = 1e-6});
    EXPECT_GT(tiny.kernel_rows, big.kernel_rows);  // the tiny cache (two rows) really recomputed
    EXPECT_EQ(tiny.iterations, big.iterations);
    EXPECT_EQ(tiny.rho, big.rho);
    for (int64_t i = 0; i < t.rows; ++i) EXPECT_EQ(tiny.alpha[i], big.alpha[i]) << i;
  }
}

// Long rows are split over threads (dense and CSR); every kernel value is computed the same way, so the solution is
// bitwise the one of one thread.
TEST(Smo, ThreadsDoNotChangeTheResult) {
  std::vector<float> centre0(40, 0.0f), centre1(40, 0.3f);
  data::Table t = Blobs({centre0, centre1}, 30, 1.0, 21);
  std::vector<double> y(t.rows), upper(t.rows, 1.0);
  for (int64_t i = 0; i < t.rows; ++i) y[i] = t.labels[i] == 0 ? 1 : -1;
  const KernelSpec k{.type = KernelType::kRbf, .gamma = 1.0 / 40};
  for (const data::Table& pts : {t, ToCsr(t)}) {
    smo::SolveResult one = smo::SolveCsvc(pts, y, upper, k, {.threads = 1});
    for (double mb : {pts.sparse ? 1e-6 : 200.0, 1e-6}) {
      // parallel_grain 1: split every row, however short.
      smo::SolveResult two = smo::SolveCsvc(pts, y, upper, k, {.cache_mb = mb, .threads = 2, .parallel_grain = 1});
      EXPECT_EQ(one.iterations, two.iterations);
      EXPECT_EQ(one.rho, two.rho);
      EXPECT_EQ(one.alpha, two.alpha);
    }
  }
}

TEST(Smo, ShrinkingOnAndOffAgree) {
  data::Table t = Blobs({{0, 0}, {1, 0.5f}}, 150, 0.7, 4);
  std::vector<double> y(t.rows), upper(t.rows, 10.0);
  for (int64_t i = 0; i < t.rows; ++i) y[i] = t.labels[i] == 0 ? 1 : -1;
  const KernelSpec k{.type = KernelType::kRbf, .gamma = 1.0};
  smo::SolveResult on = smo::SolveCsvc(t, y, upper, k, {.tol = 1e-4, .shrinking = true});
  smo::SolveResult off = smo::SolveCsvc(t, y, upper, k, {.tol = 1e-4, .shrinking = false});
  ASSERT_TRUE(on.converged && off.converged);
  EXPECT_NEAR(on.objective, off.objective, 1e-4 * std::fabs(off.objective));
  const std::vector<double> f_on = NaiveDecision(k, t, on, t), f_off = NaiveDecision(k, t, off, t);
  for (int64_t i = 0; i < t.rows; ++i) EXPECT_NEAR(f_on[i], f_off[i], 2e-3) << i;
}

TEST(Smo, GammaScaleAsDefined) {
  // Entries 0, 1, 2, 3, 4, 6 (2 columns): mean 16/6, E[x^2] = 66/6, var = 11 - (8/3)^2 = 35/9.
  data::Table t = Dense(2, {{0, 1}, {2, 3}, {4, 6}});
  double s = 0, s2 = 0, n = 0;
  smo::EntrySums(t, &s, &s2, &n);
  EXPECT_NEAR(smo::ScaleGamma(s, s2, n, t.cols), 1.0 / (2 * 35.0 / 9.0), 1e-12);
  smo::EntrySums(ToCsr(t), &s, &s2, &n);  // the zero is counted although CSR does not store it
  EXPECT_NEAR(smo::ScaleGamma(s, s2, n, t.cols), 1.0 / (2 * 35.0 / 9.0), 1e-12);
  EXPECT_EQ(smo::ScaleGamma(5, 5, 5, 1), 1.0);  // constant data: variance 0 -> gamma 1
}

TEST(KernelSvm, GammaScaleAndAutoMatchExplicitValues) {
  data::Table t = Blobs({{0, 0, 0}, {2, 1, 0}}, 30, 1.0, 5);
  double s = 0, s2 = 0, n = 0;
  smo::EntrySums(t, &s, &s2, &n);
  const double mean = s / n, var = s2 / n - mean * mean;
  const std::string scale = std::to_string(1.0 / (3 * var));
  for (auto [word, value] : {std::pair<std::string, std::string>{"scale", scale}, {"auto", "0.3333333333333333"}}) {
    auto a = Make("svm", {{"gamma", word}}), b = Make("svm", {{"gamma", value}});
    ASSERT_TRUE(a->Fit(t, {}).ok());
    ASSERT_TRUE(b->Fit(t, {}).ok());
    ModelWriter wa, wb;
    a->Save(&wa);
    b->Save(&wb);
    auto ra = ModelReader::Parse(wa.Encode(), "a"), rb = ModelReader::Parse(wb.Encode(), "b");
    double ga = 0, gb = 0;
    ASSERT_TRUE(ra->GetNumber("svm.gamma", &ga).ok());
    ASSERT_TRUE(rb->GetNumber("svm.gamma", &gb).ok());
    EXPECT_NEAR(ga, gb, 1e-6 * gb) << word;
  }
}

TEST(KernelSvm, RbfSolvesXor) {
  std::vector<std::vector<float>> rows;
  data::Table t;
  std::mt19937 gen(6);
  std::normal_distribution<double> noise(0, 0.15);
  for (int i = 0; i < 20; ++i) {
    for (int q = 0; q < 4; ++q) {
      const float x = (q & 1) ? 1 : -1, z = (q & 2) ? 1 : -1;
      rows.push_back({static_cast<float>(x + noise(gen)), static_cast<float>(z + noise(gen))});
      t.labels.push_back(x * z > 0 ? 1 : 0);
    }
  }
  data::Table d = Dense(2, rows);
  d.labels = t.labels;
  d.num_classes = 2;
  auto est = Make("svm", {{"C", "10"}, {"gamma", "1"}});
  ASSERT_TRUE(est->Fit(d, {}).ok());
  data::Table corners = Dense(2, {{1, 1}, {-1, -1}, {1, -1}, {-1, 1}, {0.8f, 1.1f}});
  corners.labels = {1, 1, 0, 0, 1};
  auto p = est->Predict(corners, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(Accuracy(*p, corners), 1.0);
  EXPECT_EQ(Accuracy(*est->Predict(d, 1), d), 1.0);
  // A linear kernel cannot: XOR stays near chance.
  auto lin = Make("svm", {{"kernel", "linear"}});
  ASSERT_TRUE(lin->Fit(d, {}).ok());
  EXPECT_LT(Accuracy(*lin->Predict(d, 1), d), 0.8);
}

TEST(KernelSvm, OneVsOneMatchesManualVoting) {
  data::Table train = Blobs({{0, 0}, {2.5f, 0}, {1.25f, 2.2f}}, 40, 0.7, 7);
  data::Table test = Blobs({{0, 0}, {2.5f, 0}, {1.25f, 2.2f}}, 30, 0.7, 8);
  auto est = Make("svm", {{"C", "2"}, {"gamma", "0.5"}});
  ASSERT_TRUE(est->Fit(train, {.threads = 2}).ok());
  auto pred = est->Predict(test, 2);
  ASSERT_TRUE(pred.ok());
  EXPECT_GT(Accuracy(*pred, test), 0.85);
  // Reference: the three binary problems solved separately, decision by a naive kernel sum, LIBSVM voting.
  const KernelSpec k{.type = KernelType::kRbf, .gamma = 0.5};
  std::vector<std::vector<int>> votes(test.rows, std::vector<int>(3, 0));
  for (int a = 0; a < 3; ++a) {
    for (int b = a + 1; b < 3; ++b) {
      std::vector<int64_t> rows;
      std::vector<double> y;
      for (int cls : {a, b}) {
        for (int64_t i = 0; i < train.rows; ++i) {
          if (train.labels[i] != cls) continue;
          rows.push_back(i);
          y.push_back(cls == a ? 1 : -1);
        }
      }
      data::Table pts = train.Select(rows);
      std::vector<double> upper(rows.size(), 2.0);
      smo::SolveResult r = smo::SolveCsvc(pts, y, upper, k, {});
      std::vector<double> f = NaiveDecision(k, pts, r, test);
      for (int64_t j = 0; j < test.rows; ++j) ++votes[j][f[j] > 0 ? a : b];
    }
  }
  int agree = 0;
  for (int64_t j = 0; j < test.rows; ++j) {
    const int manual = static_cast<int>(std::max_element(votes[j].begin(), votes[j].end()) - votes[j].begin());
    agree += manual == static_cast<int>(pred->value[j]);
  }
  EXPECT_GE(agree, test.rows - 1);  // a point on a pair's boundary may flip on float rounding
  EXPECT_GT(MetricValue(est->ModelMetrics(test, *pred), "support_vectors"), 3);
}

TEST(KernelSvm, SparseAndDenseAgree) {
  data::Table d = Blobs({{0, 0, 1, 0}, {1, 1, 0, 0}, {0, 2, 0, 1}}, 25, 0.5, 9);
  for (float& v : d.dense) v = v < 0.3f ? 0 : v;  // real zeros for the CSR copy
  data::Table s = ToCsr(d);
  for (const char* kernel : {"rbf", "poly", "linear"}) {
    auto a = Make("svm", {{"kernel", kernel}}), b = Make("svm", {{"kernel", kernel}});
    ASSERT_TRUE(a->Fit(d, {}).ok());
    ASSERT_TRUE(b->Fit(s, {}).ok());
    auto pa = a->Predict(d, 1), pb = b->Predict(s, 1), pc = a->Predict(s, 1), pd = b->Predict(d, 1);
    int same = 0;
    for (int64_t i = 0; i < d.rows; ++i) same += pa->value[i] == pb->value[i];
    EXPECT_GE(same, d.rows - 1) << kernel;
    EXPECT_EQ(pa->value, pc->value) << kernel;  // dense model, sparse queries
    EXPECT_EQ(pb->value, pd->value) << kernel;  // sparse model, dense queries
  }
}

TEST(KernelSvm, WeightTwoEqualsADuplicatedRow) {
  data::Table t = Blobs({{0, 0}, {1, 1}}, 20, 0.8, 10);
  data::Table weighted = t;
  weighted.weights.assign(t.rows, 1.0f);
  weighted.weights[3] = 2;
  std::vector<int64_t> rows(t.rows);
  for (int64_t i = 0; i < t.rows; ++i) rows[i] = i;
  rows.push_back(3);
  data::Table duplicated = t.Select(rows);
  data::Table grid = Blobs({{0.5f, 0.5f}}, 50, 1.0, 11);
  auto a = Make("svr", {{"gamma", "1"}, {"tol", "1e-5"}}), b = Make("svr", {{"gamma", "1"}, {"tol", "1e-5"}});
  for (data::Table* x : {&weighted, &duplicated}) {
    x->targets.clear();
    for (int64_t i = 0; i < x->rows; ++i) x->targets.push_back(static_cast<float>(x->labels[i]));
  }
  ASSERT_TRUE(a->Fit(weighted, {}).ok());
  ASSERT_TRUE(b->Fit(duplicated, {}).ok());
  auto pa = a->Predict(grid, 1), pb = b->Predict(grid, 1);
  for (int64_t i = 0; i < grid.rows; ++i) EXPECT_NEAR(pa->value[i], pb->value[i], 1e-3) << i;
}

TEST(KernelSvm, SvrFitsASine) {
  std::mt19937 gen(12);
  std::uniform_real_distribution<double> u(-3, 3);
  data::Table t;
  t.cols = 1;
  for (int i = 0; i < 120; ++i) {
    const double x = u(gen);
    t.dense.push_back(static_cast<float>(x));
    t.targets.push_back(static_cast<float>(std::sin(x)));
    ++t.rows;
  }
  auto est = Make("svr", {{"C", "10"}, {"epsilon", "0.01"}, {"gamma", "1"}});
  ASSERT_TRUE(est->Fit(t, {}).ok());
  data::Table grid;
  grid.cols = 1;
  for (int i = 0; i <= 50; ++i) {
    grid.dense.push_back(-2.5f + 0.1f * i);
    grid.targets.push_back(std::sin(-2.5f + 0.1f * i));
    ++grid.rows;
  }
  auto p = est->Predict(grid, 2);
  ASSERT_TRUE(p.ok());
  for (int64_t i = 0; i < grid.rows; ++i) EXPECT_NEAR(p->value[i], grid.targets[i], 0.05) << i;
}

TEST(KernelSvm, SaveLoadRoundTrip) {
  data::Table cls = Blobs({{0, 0}, {2, 0}, {1, 2}}, 20, 0.8, 13);
  data::Table reg = cls;
  reg.labels.clear();
  for (int64_t i = 0; i < reg.rows; ++i) reg.targets.push_back(reg.dense[2 * i] - reg.dense[2 * i + 1]);
  struct Case {
    std::string name;
    data::Table table;
    std::map<std::string, std::string> params;
  };
  std::vector<Case> cases = {{"svm", cls, {{"kernel", "poly"}, {"degree", "2"}, {"coef0", "1"}}},
                             {"svm", ToCsr(cls), {}},
                             {"svr", reg, {{"kernel", "sigmoid"}, {"gamma", "0.1"}}},
                             {"svr", ToCsr(reg), {}}};
  for (const Case& c : cases) {
    auto est = Make(c.name, c.params);
    ASSERT_TRUE(est->Fit(c.table, {}).ok());
    ModelWriter w;
    est->Save(&w);
    auto reader = ModelReader::Parse(w.Encode(), "model");
    ASSERT_TRUE(reader.ok());
    auto back = Make(c.name, {});
    ASSERT_TRUE(back->Load(*reader).ok());
    EXPECT_EQ(est->Predict(c.table, 1)->value, back->Predict(c.table, 2)->value) << c.name;
    // A model of the other kind is refused, not misread.
    auto other = Make(c.name == "svm" ? "svr" : "svm", {});
    EXPECT_EQ(other->Load(*reader).code(), StatusCode::kDataLoss);
  }
}

// A model file whose sections disagree is kDataLoss, never a crash or an out-of-range read.
TEST(KernelSvm, LoadRejectsMalformedModels) {
  auto write = [](int64_t sv_rows, int64_t sv_floats, int64_t sv_index, int64_t pair_class) {
    ModelWriter w;
    w.PutNumber("svm.kernel", 2);
    w.PutNumber("svm.gamma", 0.5);
    w.PutNumber("svm.degree", 3);
    w.PutNumber("svm.coef0", 0);
    w.PutNumber("svm.num_classes", 2);
    const std::vector<int64_t> shape = {sv_rows, 2, 0};
    w.PutInts("svm.sv_shape", shape);
    w.PutFloats("svm.sv_dense", std::vector<float>(static_cast<size_t>(sv_floats), 1.0f));
    const std::vector<int64_t> begin = {0, 2}, sv = {0, sv_index}, pairs = {0, pair_class};
    w.PutInts("svm.machine_begin", begin);
    w.PutInts("svm.machine_sv", sv);
    w.PutFloats("svm.machine_coef", std::vector<float>{1, -1});
    w.PutFloats("svm.rho", std::vector<float>{0});
    w.PutInts("svm.pairs", pairs);
    return *ModelReader::Parse(w.Encode(), "m.gxm");
  };
  EXPECT_TRUE(Make("svm", {})->Load(write(2, 4, 1, 1)).ok());
  EXPECT_EQ(Make("svm", {})->Load(write(2, 3, 1, 1)).code(), StatusCode::kDataLoss);  // too few floats
  EXPECT_EQ(Make("svm", {})->Load(write(2, 4, 2, 1)).code(), StatusCode::kDataLoss);  // sv index out of range
  EXPECT_EQ(Make("svm", {})->Load(write(2, 4, 1, 2)).code(), StatusCode::kDataLoss);  // class out of range
  EXPECT_EQ(Make("svm", {})->Load(write(-1, 0, 1, 1)).code(), StatusCode::kDataLoss);  // negative shape
}

TEST(KernelSvm, RejectsBadParams) {
  auto bad_gamma = CreateEstimator("svm", {{"gamma", "-1"}});
  ASSERT_FALSE(bad_gamma.ok());
  EXPECT_NE(bad_gamma.status().message().find("gamma"), std::string::npos);
  auto bad_kernel = CreateEstimator("svm", {{"kernel", "rbff"}});
  ASSERT_FALSE(bad_kernel.ok());
  EXPECT_NE(bad_kernel.status().message().find("did you mean 'rbf'"), std::string::npos)
      << bad_kernel.status().message();
  EXPECT_FALSE(CreateEstimator("svm", {{"C", "0"}}).ok());
  EXPECT_FALSE(CreateEstimator("svm", {{"gamma", "scaled"}}).ok());
  EXPECT_FALSE(CreateEstimator("svm", {{"epsilon", "0.1"}}).ok());  // svr only
  EXPECT_FALSE(CreateEstimator("svr", {{"epsilon", "-0.1"}}).ok());
  EXPECT_FALSE(CreateEstimator("svr", {{"cache_mb", "0"}}).ok());
  EXPECT_TRUE(CreateEstimator("svr", {{"gamma", "auto"}, {"max_iter", "10"}}).ok());
}

TEST(KernelSvm, RejectsBadInput) {
  data::Table t = Blobs({{0, 0}, {1, 1}}, 10, 0.5, 14);
  auto est = Make("svm", {});
  ASSERT_TRUE(est->Fit(t, {}).ok());
  data::Table wide = Blobs({{0, 0, 0}}, 3, 0.5, 15);
  auto p = est->Predict(wide, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("3 columns"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("trained on 2"), std::string::npos) << p.status().message();

  data::Table one = Blobs({{0, 0}}, 10, 0.5, 16);
  EXPECT_EQ(Make("svm", {})->Fit(one, {}).code(), StatusCode::kInvalidArgument);
  data::Table empty;
  empty.cols = 2;
  EXPECT_EQ(Make("svm", {})->Fit(empty, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Make("svr", {})->Fit(t, {}).code(), StatusCode::kInvalidArgument);  // no targets
  data::Table negative = t;
  negative.weights.assign(t.rows, -1.0f);
  EXPECT_EQ(Make("svm", {})->Fit(negative, {}).code(), StatusCode::kInvalidArgument);
}

TEST(KernelSvm, InterruptCancels) {
  data::Table t = Blobs({{0, 0}, {1, 1}}, 50, 1.0, 17);
  std::atomic<bool> stop{true};
  EXPECT_EQ(Make("svm", {})->Fit(t, {.interrupted = &stop}).code(), StatusCode::kCancelled);
}

// Cascade: three workers, each on a third of the rows, end with the same model, as accurate as the single-process
// one within 0.02.
TEST(KernelSvm, DistributedCascadeMatchesLocal) {
  const std::vector<std::vector<float>> centres = {{0, 0}, {2, 0}, {1, 1.7f}};
  data::Table train = Blobs(centres, 100, 0.8, 18), test = Blobs(centres, 100, 0.8, 19);
  const std::map<std::string, std::string> params = {{"C", "1"}};
  auto local = Make("svm", params);
  ASSERT_TRUE(local->Fit(train, {}).ok());
  const double local_acc = Accuracy(*local->Predict(test, 1), test);

  const int world = 3;
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> models;
  std::vector<data::Table> shards(world);
  for (int w = 0; w < world; ++w) {
    models.push_back(Make("svm", params));
    std::vector<int64_t> rows;
    for (int64_t i = w; i < train.rows; i += world) rows.push_back(i);
    shards[w] = train.Select(rows);
  }
  std::vector<Status> status(world);
  std::vector<std::thread> threads;
  for (int w = 0; w < world; ++w) {
    threads.emplace_back([&, w] { status[w] = models[w]->Fit(shards[w], {.collective = group.Worker(w)}); });
  }
  for (auto& th : threads) th.join();
  for (int w = 0; w < world; ++w) ASSERT_TRUE(status[w].ok()) << status[w].ToString();
  const Prediction p0 = *models[0]->Predict(test, 1);
  for (int w = 1; w < world; ++w) EXPECT_EQ(models[w]->Predict(test, 1)->value, p0.value) << w;
  EXPECT_NEAR(Accuracy(p0, test), local_acc, 0.02);
  // The feedback passes end on a model optimal for all rows (up to 2 tol): the same decisions, up to points on a
  // boundary.
  const Prediction pl = *local->Predict(test, 1);
  int same = 0;
  for (int64_t i = 0; i < test.rows; ++i) same += pl.value[i] == p0.value[i];
  EXPECT_GE(same, test.rows - 2);
}

// Forwards everything to a ThreadCollectiveGroup member and keeps what ReduceThroughTiers answered.
class RecordingCollective final : public Collective {
 public:
  explicit RecordingCollective(Collective* inner) : inner_(inner) {}
  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  Placement placement() const override { return inner_->placement(); }
  Status AllReduceSum(const std::string& key, std::span<float> data) override {
    return inner_->AllReduceSum(key, data);
  }
  Status DataCentreSum(const std::string& key, std::span<float> data) override {
    return inner_->DataCentreSum(key, data);
  }
  Result<std::vector<float>> AllGather(const std::string& key, std::span<const float> mine) override {
    return inner_->AllGather(key, mine);
  }
  Result<Bytes> ReduceThroughTiers(const std::string& reducer, const Bytes& payload) override {
    Result<Bytes> r = inner_->ReduceThroughTiers(reducer, payload);
    if (r.ok()) answers.push_back(*r);
    return r;
  }
  Result<RowUpdate> PushRowGradients(const RowTableSpec& t, std::span<const uint64_t> rows,
                                     std::span<const float> grads) override {
    return inner_->PushRowGradients(t, rows, grads);
  }
  Result<std::vector<comm::Neighbor>> AllMergeTopK(const std::string& key, uint64_t k, uint64_t queries,
                                                   std::span<const comm::Neighbor> mine) override {
    return inner_->AllMergeTopK(key, k, queries, mine);
  }
  std::vector<Bytes> answers;

 private:
  Collective* inner_;
};

// The rows a cascade record holds (svm_cascade.cc's format: a 104-byte header, then 16 + 4 d bytes per row).
int64_t CascadeRows(const Bytes& payload, int64_t d) {
  auto records = comm::DecodeRecords(payload);
  EXPECT_TRUE(records.ok());
  int64_t rows = 0;
  for (const Bytes& r : *records) rows += (static_cast<int64_t>(r.size()) - 104) / (16 + 4 * d);
  return rows;
}

// The cascade through the tiers (the svm_cascade reducer at each local server and at the global server): every
// worker gets the same final rows, which are exactly the support vectors of an SVM fitted in one process on the
// union of the data centres' retrained support vectors; the fit ends on the single-process model's decisions (the
// feedback passes), the same on every worker.
TEST(KernelSvm, CascadeRetrainsAtEveryTier) {
  const std::vector<std::vector<float>> centres = {{0, 0}, {2, 0}, {1, 1.7f}};
  data::Table train = Blobs(centres, 120, 0.9, 31), test = Blobs(centres, 100, 0.9, 32);
  const std::map<std::string, std::string> params = {{"C", "1"}};
  auto local = Make("svm", params);
  ASSERT_TRUE(local->Fit(train, {}).ok());
  const Prediction pl = *local->Predict(test, 1);
  ThreadCollectiveGroup group({2, 2});
  std::vector<std::unique_ptr<RecordingCollective>> recording;
  std::vector<std::unique_ptr<Estimator>> models;
  std::vector<data::Table> shards(4);
  for (int w = 0; w < 4; ++w) {
    recording.push_back(std::make_unique<RecordingCollective>(group.Worker(w)));
    models.push_back(Make("svm", params));
    std::vector<int64_t> rows;
    for (int64_t i = w; i < train.rows; i += 4) rows.push_back(i);
    shards[w] = train.Select(rows);
  }
  std::vector<Status> status(4);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] { status[w] = models[w]->Fit(shards[w], {.collective = recording[w].get()}); });
  }
  for (auto& th : threads) th.join();
  for (int w = 0; w < 4; ++w) ASSERT_TRUE(status[w].ok()) << status[w].ToString();
  const Prediction p0 = *models[0]->Predict(test, 1);
  for (int w = 1; w < 4; ++w) EXPECT_EQ(models[w]->Predict(test, 1)->value, p0.value) << w;
  int same = 0;
  for (int64_t i = 0; i < test.rows; ++i) same += pl.value[i] == p0.value[i];
  EXPECT_GE(same, test.rows - 2);
  ASSERT_EQ(recording[0]->answers.size(), 1u);
  for (int w = 1; w < 4; ++w) {
    ASSERT_EQ(recording[w]->answers.size(), 1u);
    const Bytes &mine = recording[w]->answers[0], &first = recording[0]->answers[0];
    EXPECT_TRUE(mine.size() == first.size() && std::memcmp(mine.data(), first.data(), mine.size()) == 0)
        << "every worker gets the same rows";
  }
  const int64_t final_rows = CascadeRows(recording[0]->answers[0], train.cols);
  EXPECT_GT(final_rows, 0);
  EXPECT_LT(final_rows, train.rows) << "the levels dropped rows";
}

// A cascade record built here byte by byte from the documented format (svm_cascade.h): rbf, explicit gamma.
Bytes CascadeRecord(const data::Table& t, double C, double gamma, uint32_t rank) {
  std::string b;
  auto put = [&](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(uint32_t{1});
  put(uint32_t{0});  // classification
  put(uint32_t{2});  // rbf
  put(int32_t{3});
  for (double d : {C, gamma, 0.0, 0.1, 1e-3, 200.0}) put(d);
  put(int64_t{0});
  put(uint32_t{1});
  put(int32_t{0});
  put(rank);
  put(t.cols);
  put(t.rows);
  put(static_cast<int32_t>(t.num_classes));
  for (int64_t r = 0; r < t.rows; ++r) {
    put(rank);
    put(static_cast<uint32_t>(r));
    put(static_cast<float>(t.labels[r]));
    put(1.0f);
    for (int64_t j = 0; j < t.cols; ++j) put(t.dense[r * t.cols + j]);
  }
  const Bytes record = Bytes::Copy(b);
  return comm::EncodeRecords(std::span<const Bytes>(&record, 1));
}

// The svm_cascade reducer as a server runs it: two contributors' rows in, one record out holding exactly as many
// rows as an SVM fitted by the estimator on their union has support vectors, each one of the input rows.
TEST(KernelSvm, CascadeReducerKeepsTheSupportVectorsOfTheUnion) {
  const std::vector<std::vector<float>> centres = {{0, 0}, {2, 0}, {1, 1.7f}};
  const data::Table a = Blobs(centres, 40, 0.9, 41), b = Blobs(centres, 40, 0.9, 42);
  auto reducer = comm::MakeReducer("svm_cascade", comm::ReducerConfig{});
  ASSERT_TRUE(reducer.ok()) << reducer.status().ToString();
  const Bytes pa = CascadeRecord(a, 1, 0.5, 0), pb = CascadeRecord(b, 1, 0.5, 1);
  ASSERT_TRUE((*reducer)->Validate(pa).ok());
  ASSERT_TRUE((*reducer)->Validate(pb).ok());
  (*reducer)->Combine(1, pb);
  (*reducer)->Combine(0, pa);
  Result<Bytes> out = (*reducer)->Finish();
  ASSERT_TRUE(out.ok()) << out.status().ToString();

  data::Table both = a;
  both.dense.insert(both.dense.end(), b.dense.begin(), b.dense.end());
  both.labels.insert(both.labels.end(), b.labels.begin(), b.labels.end());
  both.rows += b.rows;
  auto fit = Make("svm", {{"C", "1"}, {"gamma", "0.5"}});
  ASSERT_TRUE(fit->Fit(both, {}).ok());
  const double svs = MetricValue(fit->ModelMetrics(both, *fit->Predict(both, 1)), "support_vectors");
  EXPECT_EQ(static_cast<double>(CascadeRows(*out, a.cols)), svs);
  EXPECT_GT(svs, 0);
  EXPECT_LT(svs, static_cast<double>(both.rows));
  // Every output row is the input row its origin names (contributor 0's rows first).
  auto records = comm::DecodeRecords(*out);
  ASSERT_TRUE(records.ok());
  const uint8_t* p = (*records)[0].data() + 104;
  for (int64_t k = 0; k < static_cast<int64_t>(svs); ++k, p += 16 + 4 * a.cols) {
    uint32_t rank = 0, row = 0;
    float x[2];
    std::memcpy(&rank, p, 4);
    std::memcpy(&row, p + 4, 4);
    std::memcpy(x, p + 16, 8);
    const data::Table& from = rank == 0 ? a : b;
    ASSERT_LT(rank, 2u);
    ASSERT_LT(static_cast<int64_t>(row), from.rows);
    EXPECT_EQ(x[0], from.dense[row * 2]);
    EXPECT_EQ(x[1], from.dense[row * 2 + 1]);
  }
  // A malformed record (cut short) is refused before it is combined, naming the format.
  const Bytes cut = Bytes::Copy(std::string_view(reinterpret_cast<const char*>(pa.data()), pa.size() - 5));
  auto fresh = comm::MakeReducer("svm_cascade", comm::ReducerConfig{});
  Status bad = (*fresh)->Validate(cut);
  EXPECT_FALSE(bad.ok());
}


// Runs Fit on every shard as one worker each; returns the statuses.
std::vector<Status> FitWorkers(const std::vector<std::unique_ptr<Estimator>>& models,
                               const std::vector<data::Table>& shards) {
  const int world = static_cast<int>(shards.size());
  ThreadCollectiveGroup group(world);
  std::vector<Status> status(world);
  std::vector<std::thread> threads;
  for (int w = 0; w < world; ++w) {
    threads.emplace_back([&, w] { status[w] = models[w]->Fit(shards[w], {.collective = group.Worker(w)}); });
  }
  for (auto& th : threads) th.join();
  return status;
}

// Shards split by class (one worker sees a single class, one nothing at all) still give one model everywhere.
TEST(KernelSvm, DistributedHandlesOneClassAndEmptyShards) {
  const std::vector<std::vector<float>> centres = {{0, 0}, {2, 0}, {1, 1.7f}};
  data::Table train = Blobs(centres, 60, 0.8, 22), test = Blobs(centres, 60, 0.8, 23);
  auto local = Make("svm", {});
  ASSERT_TRUE(local->Fit(train, {}).ok());
  std::vector<int64_t> first, rest;
  for (int64_t i = 0; i < train.rows; ++i) (train.labels[i] == 0 ? first : rest).push_back(i);
  std::vector<data::Table> shards = {train.Select(first), train.Select(rest), train.Select({})};
  std::vector<std::unique_ptr<Estimator>> models;
  for (int w = 0; w < 3; ++w) models.push_back(Make("svm", {}));
  for (const Status& s : FitWorkers(models, shards)) ASSERT_TRUE(s.ok()) << s.ToString();
  const Prediction p0 = *models[0]->Predict(test, 1);
  EXPECT_EQ(models[2]->Predict(test, 1)->value, p0.value);
  EXPECT_NEAR(Accuracy(p0, test), Accuracy(*local->Predict(test, 1), test), 0.02);
}

// A worker whose shard is invalid does not leave the others waiting: every worker returns an error.
TEST(KernelSvm, DistributedErrorReachesEveryWorker) {
  data::Table train = Blobs({{0, 0}, {2, 0}}, 30, 0.8, 24);
  std::vector<data::Table> shards = {train, train};
  shards[1].weights.assign(train.rows, -1.0f);
  std::vector<std::unique_ptr<Estimator>> models;
  for (int w = 0; w < 2; ++w) models.push_back(Make("svm", {}));
  for (const Status& s : FitWorkers(models, shards)) EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

TEST(KernelSvm, DistributedSvrMatchesLocal) {
  std::mt19937 gen(20);
  std::uniform_real_distribution<double> u(-3, 3);
  data::Table t;
  t.cols = 1;
  for (int i = 0; i < 150; ++i) {
    const double x = u(gen);
    t.dense.push_back(static_cast<float>(x));
    t.targets.push_back(static_cast<float>(std::sin(x)));
    ++t.rows;
  }
  const std::map<std::string, std::string> params = {{"C", "10"}, {"epsilon", "0.05"}};
  auto local = Make("svr", params);
  ASSERT_TRUE(local->Fit(t, {}).ok());
  const int world = 2;
  ThreadCollectiveGroup group(world);
  std::vector<std::unique_ptr<Estimator>> models;
  std::vector<data::Table> shards(world);
  for (int w = 0; w < world; ++w) {
    models.push_back(Make("svr", params));
    std::vector<int64_t> rows;
    for (int64_t i = w; i < t.rows; i += world) rows.push_back(i);
    shards[w] = t.Select(rows);
  }
  std::vector<Status> status(world);
  std::vector<std::thread> threads;
  for (int w = 0; w < world; ++w) {
    threads.emplace_back([&, w] { status[w] = models[w]->Fit(shards[w], {.collective = group.Worker(w)}); });
  }
  for (auto& th : threads) th.join();
  for (int w = 0; w < world; ++w) ASSERT_TRUE(status[w].ok()) << status[w].ToString();
  auto pl = local->Predict(t, 1), pd = models[0]->Predict(t, 1);
  EXPECT_EQ(models[1]->Predict(t, 1)->value, pd->value);
  double se_l = 0, se_d = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    se_l += std::pow(pl->value[i] - t.targets[i], 2);
    se_d += std::pow(pd->value[i] - t.targets[i], 2);
  }
  EXPECT_NEAR(std::sqrt(se_d / t.rows), std::sqrt(se_l / t.rows), 0.02);
}

}  // namespace
}  // namespace geomx::algorithms
