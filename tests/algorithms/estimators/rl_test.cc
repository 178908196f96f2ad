// Tests of `rl`, REINFORCE with a value baseline in CartPole-v1 (algorithms/estimators/rl.cc, rl.h): returns and
// a two-step gradient worked out by hand, the gradient against finite differences of the loss written out here
// independently, two actor workers against one process playing the union of their episodes, a short training run,
// the early stop, Save/Load, and bad parameters and tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/rl.h"
#include "datasets/cartpole.h"
#include "datasets/table.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

std::unique_ptr<Estimator> Make(const Params& params) {
  auto e = CreateEstimator("rl", params);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

data::TableSplits Cartpole(int64_t train, int64_t test, uint64_t seed = 1234) {
  data::DataConfig c;
  c.name = "cartpole";
  c.synthetic_train = train;
  c.synthetic_test = test;
  c.synthetic_seed = seed;
  data::TableOptions o;
  o.task = data::TableTask::kControl;
  auto s = data::OpenTable(c, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(*s);
}

std::vector<float> Weights(const Estimator& e) {
  ModelWriter w;
  e.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "mem");
  EXPECT_TRUE(r.ok());
  std::vector<float> v;
  EXPECT_TRUE(r->GetFloats("rl.params", &v).ok());
  return v;
}

double MeanReturn(const Estimator& e, const data::Table& starts) {
  auto p = e.Predict(starts, 2);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return 0;
  const Metrics m = EvaluateTask(data::TableTask::kControl, starts, *p);
  return MetricValue(m, "return");
}

// ---- the pieces, by hand ----

TEST(RlTest, DiscountedReturnsByHand) {
  const std::vector<double> r = {1, 1, 1};
  const std::vector<double> g = RlDiscountedReturns(r, 0.9, 0);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_NEAR(g[2], 1.0, 1e-12);
  EXPECT_NEAR(g[1], 1.9, 1e-12);
  EXPECT_NEAR(g[0], 2.71, 1e-12);
  // A truncated episode continues with the value of its last state: 1 + 0.9 + 0.81 + 0.729 * 10 = 10.
  EXPECT_NEAR(RlDiscountedReturns(r, 0.9, 10)[0], 10.0, 1e-12);
  EXPECT_NEAR(RlDiscountedReturns(r, 0.5, 8)[0], 1 + 0.5 + 0.25 + 0.125 * 8, 1e-12);
  EXPECT_NEAR(RlValueScale(0.99), 100.0, 1e-9);
  EXPECT_DOUBLE_EQ(RlValueScale(1.0), 500.0);
}

TEST(RlTest, TwoStepGradientByHand) {
  // hidden 1; W2 = 0 so pi = softmax(b2) = (1/4, 3/4) everywhere, and nothing flows back to W1 and b1. The
  // logits' gradient is dz_b = -A_t (1[a_t = b] - p_b): steps (a = 1, A = 2) and (a = 0, A = -1) give
  // dz_0 = (0.5, 0.75), dz_1 = (-0.5, -0.75); at scale 1/2, b2_0: 0.625, b2_1: -0.625, and W2_b = 1/2 sum_t
  // dz_b h_t with h_t = tanh(0.3 x0_t).
  // Value: V1 = 0, c1 = 0 so v = c2 = 0.5; returns 30 and 60 at scale 100 (gamma 0.99): d/dc2 = ((0.5 - 0.3) +
  // (0.5 - 0.6)) / 2 = 0.05; the hidden unit is tanh(0) = 0, so v2 gets nothing.
  const RlShape shape{1};
  // Layout for hidden 1: W1 0..3, b1 4, W2 5..6, b2 7..8 | V1 9..12, c1 13, v2 14, c2 15.
  ASSERT_EQ(shape.Size(), 16);
  std::vector<float> theta(static_cast<size_t>(shape.Size()), 0.0f);
  theta[0] = 0.3f;  // W1: the hidden unit is active, but W2 = 0 stops the gradient from reaching W1 and b1
  theta[8] = static_cast<float>(std::log(3.0));  // b2_1 (b2_0 = 0)
  theta[15] = 0.5f;                              // c2
  const auto p = RlPolicyProbabilities(shape, theta, std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f});
  EXPECT_NEAR(p[0], 0.25, 1e-7);
  EXPECT_NEAR(p[1], 0.75, 1e-7);
  RlStep s1, s2;
  s1.observation = {0.1f, 0.2f, 0.3f, 0.4f};
  s1.action = 1;
  s2.observation = {-0.5f, 0.0f, 0.25f, 1.0f};
  s2.action = 0;
  const std::vector<RlStep> steps = {s1, s2};
  const std::vector<double> adv = {2, -1}, ret = {30, 60};
  std::vector<double> grad(static_cast<size_t>(shape.Size()), 0.0);
  RlAccumulateGradient(shape, theta, steps, adv, ret, 0.0, 100.0, 0.5, grad);
  EXPECT_NEAR(grad[7], 0.625, 1e-6);   // b2_0
  EXPECT_NEAR(grad[8], -0.625, 1e-6);  // b2_1
  for (int k : {0, 1, 2, 3, 4}) EXPECT_EQ(grad[k], 0.0) << k;  // W1, b1
  const double h1 = std::tanh(0.3 * 0.1f), h2 = std::tanh(0.3 * -0.5f);
  EXPECT_NEAR(grad[5], 0.5 * (2 * 0.25 * h1 + 0.75 * h2), 1e-7);
  EXPECT_NEAR(grad[6], 0.5 * (-2 * 0.25 * h1 - 0.75 * h2), 1e-7);
  EXPECT_NEAR(grad[15], 0.05, 1e-7);                            // c2
  for (int k : {9, 10, 11, 12, 13, 14}) EXPECT_EQ(grad[k], 0.0) << k;  // V1, c1, v2
}

// The loss of RlAccumulateGradient written out directly, in double, for finite differences.
double LossByHand(int64_t H, const std::vector<double>& w, const std::vector<RlStep>& steps,
                  const std::vector<double>& adv, const std::vector<double>& ret, double entropy, double vscale) {
  // Offsets: W1, b1, W2, b2, V1, c1, v2, c2.
  const int64_t W1 = 0, B1 = 4 * H, W2 = 5 * H, B2 = 7 * H, V1 = 7 * H + 2, C1 = 11 * H + 2, V2 = 12 * H + 2,
                C2 = 13 * H + 2;
  double total = 0;
  for (size_t t = 0; t < steps.size(); ++t) {
    const auto& o = steps[t].observation;
    double z0 = w[B2], z1 = w[B2 + 1], v = w[C2];
    for (int64_t j = 0; j < H; ++j) {
      double a = w[B1 + j], c = w[C1 + j];
      for (int i = 0; i < 4; ++i) {
        a += w[W1 + j * 4 + i] * o[i];
        c += w[V1 + j * 4 + i] * o[i];
      }
      z0 += w[W2 + j] * std::tanh(a);
      z1 += w[W2 + H + j] * std::tanh(a);
      v += w[V2 + j] * std::tanh(c);
    }
    const double p0 = 1 / (1 + std::exp(z1 - z0)), p1 = 1 - p0;
    const double logp = steps[t].action == 0 ? std::log(p0) : std::log(p1);
    const double h = -(p0 * std::log(p0) + p1 * std::log(p1));
    total += -adv[t] * logp - entropy * h + 0.5 * std::pow(v - ret[t] / vscale, 2);
  }
  return total;
}

TEST(RlTest, GradientMatchesFiniteDifferencesOfTheLoss) {
  const RlShape shape{3};
  Rng rng(11);
  std::vector<float> theta(static_cast<size_t>(shape.Size()));
  for (float& v : theta) v = static_cast<float>(0.7 * rng.Normal());
  std::vector<RlStep> steps(5);
  std::vector<double> adv, ret;
  for (RlStep& s : steps) {
    for (float& o : s.observation) o = static_cast<float>(rng.Normal());
    s.action = static_cast<int>(rng.Below(2));
    adv.push_back(rng.Normal());
    ret.push_back(50 * rng.Uniform());
  }
  const double entropy = 0.3, vscale = 100, scale = 0.2;
  std::vector<double> grad(static_cast<size_t>(shape.Size()), 0.0);
  const double loss = RlAccumulateGradient(shape, theta, steps, adv, ret, entropy, vscale, scale, grad);
  std::vector<double> w(theta.begin(), theta.end());
  EXPECT_NEAR(loss, LossByHand(3, w, steps, adv, ret, entropy, vscale), 1e-9);
  const double eps = 1e-6;
  for (size_t k = 0; k < w.size(); ++k) {
    std::vector<double> up = w, down = w;
    up[k] += eps;
    down[k] -= eps;
    const double fd = scale * (LossByHand(3, up, steps, adv, ret, entropy, vscale) -
                               LossByHand(3, down, steps, adv, ret, entropy, vscale)) /
                      (2 * eps);
    EXPECT_NEAR(grad[k], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << "parameter " << k;
  }
}

// ---- fits ----

TEST(RlTest, ShortTrainingClearlyImprovesTheGreedyReturn) {
  const data::TableSplits s = Cartpole(8, 50);
  const Params base = {{"hidden", "32"}, {"batch_size", "8"}, {"seed", "5"}};
  Params one = base, many = base;
  one["updates"] = "1";
  many["updates"] = "30";
  auto a = Make(one);
  auto b = Make(many);
  ASSERT_TRUE(a->Fit(s.train, FitContext{}).ok());
  ASSERT_TRUE(b->Fit(s.train, FitContext{}).ok());
  const double before = MeanReturn(*a, s.test), after = MeanReturn(*b, s.test);
  EXPECT_LT(before, 150);
  EXPECT_GE(after, 400) << "before " << before;
  auto p = b->Predict(s.test, 1);
  ASSERT_TRUE(p.ok());
  for (float v : p->value) {
    EXPECT_GE(v, 1);
    EXPECT_LE(v, 500);
    EXPECT_EQ(v, std::floor(v)) << "a return is a number of steps";
  }
  const float worst = *std::min_element(p->value.begin(), p->value.end());
  EXPECT_EQ(MetricValue(b->ModelMetrics(s.test, *p), "return_min"), worst);
}

class CountingObserver final : public FitObserver {
 public:
  void OnStep(int64_t step, const Metrics& metrics) override {
    last = step;
    last_return = MetricValue(metrics, "return");
  }
  int64_t last = 0;
  double last_return = 0;
};

TEST(RlTest, TargetReturnStopsEarlyAndProgressIsReported) {
  const data::TableSplits s = Cartpole(8, 10);
  CountingObserver obs;
  FitContext ctx;
  ctx.observer = &obs;
  auto e = Make({{"batch_size", "8"}, {"seed", "5"}, {"updates", "200"}, {"target_return", "100"}});
  ASSERT_TRUE(e->Fit(s.train, ctx).ok());
  EXPECT_LT(obs.last, 200);
  EXPECT_GE(obs.last_return, 100);
}

TEST(RlDistributedTest, TwoActorsEqualOneProcessOnTheUnionOfTheirEpisodes) {
  // Worker r of 2 plays the job's episodes r * 3 .. r * 3 + 2 of every update; one process with batch_size 6 plays
  // episodes 0..5: the same episodes, the same summed gradients, the same Adam steps.
  const data::TableSplits s = Cartpole(8, 10);
  for (const char* updates : {"1", "3"}) {
    SCOPED_TRACE(updates);
    const Params base = {{"hidden", "8"}, {"seed", "9"}, {"updates", updates}, {"entropy", "0.01"}};
    Params single = base, actor = base;
    single["batch_size"] = "6";
    actor["batch_size"] = "3";
    auto local = Make(single);
    ASSERT_TRUE(local->Fit(s.train, FitContext{}).ok());
    ThreadCollectiveGroup group(2);
    std::vector<std::unique_ptr<Estimator>> workers;
    workers.push_back(Make(actor));
    workers.push_back(Make(actor));
    std::vector<Status> status(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        FitContext ctx;
        ctx.collective = group.Worker(r);
        status[r] = workers[r]->Fit(s.train, ctx);
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_TRUE(status[0].ok()) << status[0].ToString();
    ASSERT_TRUE(status[1].ok()) << status[1].ToString();
    const std::vector<float> w0 = Weights(*workers[0]), w1 = Weights(*workers[1]), want = Weights(*local);
    EXPECT_EQ(w0, w1) << "every worker holds the same weights";
    ASSERT_EQ(w0.size(), want.size());
    float worst = 0;
    for (size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::fabs(w0[k] - want[k]));
    EXPECT_LT(worst, 1e-5f);
    // And a different batch is a different fit: the comparison is not vacuous.
    Params other = single;
    other["batch_size"] = "5";
    auto e = Make(other);
    ASSERT_TRUE(e->Fit(s.train, FitContext{}).ok());
    const std::vector<float> w5 = Weights(*e);
    float diff = 0;
    for (size_t k = 0; k < want.size(); ++k) diff = std::max(diff, std::fabs(w5[k] - want[k]));
    EXPECT_GT(diff, 1e-3f);
  }
}

TEST(RlTest, SaveLoadRoundTripPredictsIdentically) {
  const data::TableSplits s = Cartpole(8, 20);
  auto e = Make({{"hidden", "16"}, {"updates", "5"}, {"seed", "3"}});
  ASSERT_TRUE(e->Fit(s.train, FitContext{}).ok());
  ModelWriter w;
  e->Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "mem");
  ASSERT_TRUE(r.ok());
  auto f = Make({});
  ASSERT_TRUE(f->Load(*r).ok());
  auto p1 = e->Predict(s.test, 1), p2 = f->Predict(s.test, 2);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(p1->value, p2->value);

  // Malformed sections are data loss naming the section.
  ModelWriter bad_shape;
  bad_shape.PutInts("rl.shape", std::vector<int64_t>{16, 5, 2});
  bad_shape.PutFloats("rl.params", Weights(*e));
  auto rb = ModelReader::Parse(bad_shape.Encode(), "bad");
  ASSERT_TRUE(rb.ok());
  Status st = Make({})->Load(*rb);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("rl.shape"), std::string::npos) << st.ToString();
  ModelWriter short_params;
  short_params.PutInts("rl.shape", std::vector<int64_t>{16, 4, 2});
  short_params.PutFloats("rl.params", std::vector<float>(10, 0.0f));
  auto rs = ModelReader::Parse(short_params.Encode(), "short");
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(Make({})->Load(*rs).code(), StatusCode::kDataLoss);
}

TEST(RlTest, BadParametersAndTablesAreRejected) {
  for (const Params& p : std::vector<Params>{{{"gamma", "0"}},
                                             {{"gamma", "1.5"}},
                                             {{"lr", "0"}},
                                             {{"value_lr", "-1"}},
                                             {{"hidden", "0"}},
                                             {{"batch_size", "0"}},
                                             {{"updates", "0"}},
                                             {{"entropy", "-0.1"}},
                                             {{"baseline", "maybe"}},
                                             {{"gama", "0.9"}}}) {
    auto e = CreateEstimator("rl", p);
    ASSERT_FALSE(e.ok()) << p.begin()->first;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find("algorithm." + p.begin()->first), std::string::npos) << e.status().ToString();
  }
  EXPECT_TRUE(CreateEstimator("rl", {{"gamma", "1"}}).ok());
  data::Table three;
  three.rows = 2;
  three.cols = 3;
  three.dense = {0, 0, 0, 0, 0, 0};
  three.source = "three";
  Status st = Make({})->Fit(three, FitContext{});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("cartpole"), std::string::npos) << st.ToString();
  EXPECT_EQ(Make({})->Predict(three, 1).status().code(), StatusCode::kFailedPrecondition);
  const data::TableSplits s = Cartpole(4, 4);
  auto e = Make({{"updates", "1"}, {"hidden", "4"}});
  ASSERT_TRUE(e->Fit(s.train, FitContext{}).ok());
  EXPECT_EQ(e->Predict(three, 1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::algorithms
