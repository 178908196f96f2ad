// Tests of the built-in CartPole-v1 environment (datasets/cartpole.h): one step from known states against the
// cart-pole equations written out here independently (Florian 2005, "Correct equations for the dynamics of the
// cart-pole system", frictionless, solved for the two accelerations), termination just past each threshold, the
// 500-step time limit, the seeded start states, and the generated table `cartpole`.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "datasets/cartpole.h"
#include "datasets/table.h"
#include "engine/base/rng.h"

namespace geomx::data {
namespace {

// One explicit Euler step of the frictionless cart-pole (mass of the cart mc, of the pole mp, half-length l),
// pushed with force f: theta_acc = (g sin(th) + cos(th) (-f - mp l w^2 sin(th)) / (mc + mp)) /
// (l (4/3 - mp cos^2(th) / (mc + mp))) and x_acc = (f + mp l (w^2 sin(th) - theta_acc cos(th))) / (mc + mp).
CartPoleState HandStep(const CartPoleState& s, double f) {
  const double g = 9.8, mc = 1.0, mp = 0.1, l = 0.5, dt = 0.02;
  const double th = s.theta, w = s.theta_dot;
  const double th_acc = (g * std::sin(th) + std::cos(th) * (-f - mp * l * w * w * std::sin(th)) / (mc + mp)) /
                        (l * (4.0 / 3.0 - mp * std::cos(th) * std::cos(th) / (mc + mp)));
  const double x_acc = (f + mp * l * (w * w * std::sin(th) - th_acc * std::cos(th))) / (mc + mp);
  CartPoleState n;
  n.x = s.x + dt * s.x_dot;
  n.x_dot = s.x_dot + dt * x_acc;
  n.theta = s.theta + dt * s.theta_dot;
  n.theta_dot = s.theta_dot + dt * th_acc;
  return n;
}

void ExpectState(const CartPoleState& got, const CartPoleState& want) {
  EXPECT_NEAR(got.x, want.x, 1e-12);
  EXPECT_NEAR(got.x_dot, want.x_dot, 1e-12);
  EXPECT_NEAR(got.theta, want.theta, 1e-12);
  EXPECT_NEAR(got.theta_dot, want.theta_dot, 1e-12);
}

TEST(CartPoleTest, OneStepFromAKnownStateMatchesTheEquations) {
  const CartPoleState start{0.01, -0.02, 0.03, 0.04};
  for (int action : {0, 1}) {
    CartPole env;
    env.Reset(start);
    const CartPoleStep r = env.Step(action);
    EXPECT_EQ(r.reward, 1.0);
    EXPECT_FALSE(r.terminated);
    EXPECT_FALSE(r.truncated);
    EXPECT_EQ(env.steps(), 1);
    ExpectState(env.state(), HandStep(start, action == 1 ? 10.0 : -10.0));
    // Euler: the positions moved with the old velocities.
    EXPECT_DOUBLE_EQ(env.state().x, 0.01 + 0.02 * -0.02);
    EXPECT_DOUBLE_EQ(env.state().theta, 0.03 + 0.02 * 0.04);
  }
  // A tilted, spinning pole: the velocity-squared term matters.
  const CartPoleState tilted{-1.0, 0.5, -0.15, 1.7};
  CartPole env;
  env.Reset(tilted);
  env.Step(1);
  const CartPoleState once = HandStep(tilted, 10.0);
  ExpectState(env.state(), once);
  env.Step(0);
  ExpectState(env.state(), HandStep(once, -10.0));
  // Worked by hand from the upright rest state pushed right: theta_acc = -(10 / 1.1) / (0.5 (4/3 - 0.1 / 1.1)),
  // x_acc = (10 - 0.05 theta_acc) / 1.1; only the velocities change in the first step.
  env.Reset(CartPoleState{});
  env.Step(1);
  const double th_acc = -(10.0 / 1.1) / (0.5 * (4.0 / 3.0 - 0.1 / 1.1));
  EXPECT_NEAR(env.state().theta_dot, 0.02 * th_acc, 1e-15);
  EXPECT_NEAR(env.state().x_dot, 0.02 * (10.0 - 0.05 * th_acc) / 1.1, 1e-15);
  EXPECT_EQ(env.state().x, 0.0);
  EXPECT_EQ(env.state().theta, 0.0);
  const auto obs = env.Observation();
  EXPECT_EQ(obs[1], static_cast<float>(env.state().x_dot));
  EXPECT_EQ(obs[3], static_cast<float>(env.state().theta_dot));
}

TEST(CartPoleTest, TerminatesJustPastEachThresholdWithReward) {
  EXPECT_DOUBLE_EQ(CartPole::kThetaThreshold, 12 * 2 * M_PI / 360);
  struct Case {
    CartPoleState start;
    bool terminated;
  };
  // x moves by 0.02 x_dot, theta by 0.02 theta_dot in the step: past 2.4 / 0.2094 or just inside.
  const Case cases[] = {
      {{2.39, 1.0, 0, 0}, true},    {{2.37, 1.0, 0, 0}, false},  {{-2.39, -1.0, 0, 0}, true},
      {{-2.37, -1.0, 0, 0}, false}, {{0, 0, 0.2, 1.0}, true},     {{0, 0, 0.18, 1.0}, false},
      {{0, 0, -0.2, -1.0}, true},   {{0, 0, -0.18, -1.0}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.start.x << " " << c.start.theta);
    CartPole env;
    env.Reset(c.start);
    const CartPoleStep r = env.Step(1);  // positions move with the old velocities: the action does not matter
    EXPECT_EQ(r.terminated, c.terminated);
    EXPECT_FALSE(r.truncated);
    EXPECT_EQ(r.reward, 1.0) << "the terminating step is rewarded too";
    EXPECT_EQ(env.done(), c.terminated);
  }
}

TEST(CartPoleTest, TruncatesAtFiveHundredSteps) {
  CartPole env;
  env.Reset(CartPoleState{});
  double total = 0;
  CartPoleStep r;
  while (!env.done()) {
    // A linear balancing controller that holds the pole well inside the thresholds.
    const CartPoleState& s = env.state();
    r = env.Step(0.1 * s.x + 0.5 * s.x_dot + 10 * s.theta + 2 * s.theta_dot > 0 ? 1 : 0);
    total += r.reward;
    if (env.steps() < 500) {
      ASSERT_FALSE(r.truncated) << env.steps();
      ASSERT_FALSE(r.terminated) << env.steps();
    }
  }
  EXPECT_EQ(env.steps(), 500);
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  EXPECT_EQ(total, 500.0);
  env.Reset(CartPoleState{});
  EXPECT_FALSE(env.done());
  EXPECT_EQ(env.steps(), 0);
}

TEST(CartPoleTest, SeededStartStatesAreUniformInTheBox) {
  Rng a(7), b(7);
  CartPole e1, e2;
  std::set<double> seen;
  for (int i = 0; i < 200; ++i) {
    e1.Reset(&a);
    e2.Reset(&b);
    const CartPoleState& s = e1.state();
    for (double v : {s.x, s.x_dot, s.theta, s.theta_dot}) {
      EXPECT_GE(v, -0.05);
      EXPECT_LT(v, 0.05);
      seen.insert(v);
    }
    EXPECT_EQ(s.x, e2.state().x);
    EXPECT_EQ(s.theta_dot, e2.state().theta_dot);
  }
  EXPECT_EQ(seen.size(), 800u);
  // In state order from the caller's stream.
  Rng c(7);
  CartPole e3;
  e3.Reset(&c);
  Rng d(7);
  EXPECT_DOUBLE_EQ(e3.state().x, -0.05 + 0.1 * d.Uniform());
  EXPECT_DOUBLE_EQ(e3.state().x_dot, -0.05 + 0.1 * d.Uniform());
}

TEST(CartPoleTest, GeneratedTableHoldsStartStates) {
  DataConfig config;
  config.name = "cartpole";
  config.synthetic_train = 30;
  config.synthetic_test = 100;
  TableOptions options;
  options.task = TableTask::kControl;
  auto s = OpenTable(config, options);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train.rows, 30);
  EXPECT_EQ(s->test.rows, 100);
  EXPECT_EQ(s->test.cols, 4);
  EXPECT_FALSE(s->test.has_labels());
  EXPECT_FALSE(s->test.has_targets());
  EXPECT_EQ(s->test.source, "cartpole");
  for (float v : s->test.dense) EXPECT_LE(std::fabs(v), 0.05f);
  EXPECT_NE(s->train.dense[0], s->test.dense[0]);
  auto again = OpenTable(config, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->test.dense, s->test.dense);
  // cartpole is an environment: other tasks are refused, and a control algorithm takes nothing else.
  TableTask task = TableTask::kClassification;
  EXPECT_TRUE(GeneratedTableTask("cartpole", &task));
  EXPECT_EQ(task, TableTask::kControl);
  EXPECT_STREQ(TableTaskName(TableTask::kControl), "control");
  options.task = TableTask::kRegression;
  EXPECT_EQ(OpenTable(config, options).status().code(), StatusCode::kInvalidArgument);
  options.task = TableTask::kControl;
  config.name = "friedman1";
  EXPECT_EQ(OpenTable(config, options).status().code(), StatusCode::kInvalidArgument);
  config.name = "csv";
  config.path = "whatever.csv";
  auto csv = OpenTable(config, options);
  EXPECT_EQ(csv.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(csv.status().message().find("environment"), std::string::npos) << csv.status().ToString();
}

}  // namespace
}  // namespace geomx::data
