#include "nn/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/testutil.h"

namespace geomx::nn {
namespace {

OptimizerConfig Config(const std::string& name) {
  OptimizerConfig c;
  c.name = name;
  c.lr = 0.1f;
  c.weight_decay = 0.01f;
  c.momentum = 0.9f;
  c.beta1 = 0.8f;
  c.beta2 = 0.99f;
  c.rho = 0.7f;
  c.eps = 1e-6f;
  return c;
}

// Independent double-precision reference of the rules documented on UpdateRule (engine/op_params.h).
struct Reference {
  std::string rule;
  OptimizerConfig c;
  std::vector<double> w, a, b, e;  // a, b, e: the rule's state slots
  int t = 0;

  void Step(const std::vector<double>& grad) {
    ++t;
    a.resize(w.size(), 0.0);
    b.resize(w.size(), 0.0);
    e.resize(w.size(), 0.0);
    const double lr = c.lr, wd = c.weight_decay, mu = c.momentum, rho = c.rho, eps = c.eps;
    for (size_t i = 0; i < w.size(); ++i) {
      const double g = rule == "adamw" ? grad[i] : grad[i] + wd * w[i];
      if (rule == "ftrl") {  // McMahan et al. 2013, Algorithm 1: alpha = lr, l2 = weight_decay; a = z, b = n
        const double gr = grad[i];
        const double sigma = (std::sqrt(b[i] + gr * gr) - std::sqrt(b[i])) / lr;
        a[i] += gr - sigma * w[i];
        b[i] += gr * gr;
        const double l1 = c.l1;
        w[i] = std::fabs(a[i]) <= l1 ? 0.0
                                     : -(a[i] - (a[i] > 0 ? l1 : -l1)) / ((c.ftrl_beta + std::sqrt(b[i])) / lr + wd);
      } else if (rule == "ftml") {  // Zheng & Kwok 2017, Algorithm 1 with g + wd*w; a = d, b = v, e = z
        const double b1 = c.beta1, b2 = c.beta2;
        b[i] = b2 * b[i] + (1 - b2) * g * g;
        const double d = (1 - std::pow(b1, t)) / lr * (std::sqrt(b[i] / (1 - std::pow(b2, t))) + eps);
        e[i] = b1 * e[i] + (1 - b1) * g - (d - b1 * a[i]) * w[i];
        a[i] = d;
        w[i] = -e[i] / d;
      } else if (rule == "sgd") {
        w[i] -= lr * g;
      } else if (rule == "momentum") {
        a[i] = mu * a[i] + g;
        w[i] -= lr * a[i];
      } else if (rule == "nesterov") {
        a[i] = mu * a[i] + g;
        w[i] -= lr * (g + mu * a[i]);
      } else if (rule == "adagrad") {
        a[i] += g * g;
        w[i] -= lr * g / (std::sqrt(a[i]) + eps);
      } else if (rule == "rmsprop") {
        a[i] = rho * a[i] + (1 - rho) * g * g;
        w[i] -= lr * g / (std::sqrt(a[i]) + eps);
      } else if (rule == "adadelta") {
        a[i] = rho * a[i] + (1 - rho) * g * g;
        const double d = std::sqrt(b[i] + eps) / std::sqrt(a[i] + eps) * g;
        b[i] = rho * b[i] + (1 - rho) * d * d;
        w[i] -= lr * d;
      } else {  // adam, adamw
        const double b1 = c.beta1, b2 = c.beta2, w0 = w[i];
        a[i] = b1 * a[i] + (1 - b1) * g;
        b[i] = b2 * b[i] + (1 - b2) * g * g;
        const double mhat = a[i] / (1 - std::pow(b1, t)), vhat = b[i] / (1 - std::pow(b2, t));
        w[i] -= lr * mhat / (std::sqrt(vhat) + eps);
        if (rule == "adamw") w[i] -= lr * wd * w0;
      }
    }
  }
};

std::vector<float> ToFloat(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

class OptimizerRuleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerRuleTest, TwoStepsMatchHandComputation) {
  const std::string name = GetParam();
  const std::vector<double> w0 = {1.0, -2.0, 0.5, 0.0};
  const std::vector<std::vector<double>> grads = {{0.1, 0.2, -0.3, 0.05}, {-0.2, 0.1, -0.1, 0.4}};
  for (Device d : AvailableDevices()) {
    auto opt = CreateOptimizer(Config(name));
    ASSERT_TRUE(opt.ok()) << opt.status().ToString();
    EXPECT_EQ((*opt)->name(), name);
    Parameter p("layer.weight", Tensor::FromVector(ToFloat(w0), Shape{2, 2}, d));
    Reference ref{name, Config(name), w0};
    for (const auto& g : grads) {
      p.var().set_grad(Tensor::FromVector(ToFloat(g), Shape{2, 2}, d));
      (*opt)->Step({&p});
      ref.Step(g);
      EXPECT_TRUE(testing::AllClose(p.data().ToFloatVector(), ToFloat(ref.w), 1e-5f, 1e-6f))
          << name << " step " << ref.t << " on " << d.ToString();
    }
    EXPECT_EQ((*opt)->step(), 2);
    EXPECT_EQ(p.data().device(), d);
  }
}

TEST_P(OptimizerRuleTest, StateDictRoundTripContinuesIdentically) {
  const std::string name = GetParam();
  auto a = CreateOptimizer(Config(name));
  auto b = CreateOptimizer(Config(name));
  ASSERT_TRUE(a.ok() && b.ok());
  Parameter pa("w", testing::RandomTensor(Shape{3, 4}, 1));
  Parameter pb("w", pa.data().Clone());
  for (int i = 0; i < 3; ++i) {
    pa.var().set_grad(testing::RandomTensor(Shape{3, 4}, 10 + i));
    (*a)->Step({&pa});
  }
  const std::map<std::string, Tensor> state = (*a)->StateDict();
  for (const auto& [k, t] : state) EXPECT_EQ(k.substr(0, 2), "w/") << k;
  ASSERT_TRUE((*b)->LoadState(state, (*a)->step()).ok());
  EXPECT_EQ((*b)->step(), 3);
  pb.var().set_data(pa.data().Clone());
  const Tensor g = testing::RandomTensor(Shape{3, 4}, 99);
  pa.var().set_grad(g);
  pb.var().set_grad(g);
  (*a)->Step({&pa});
  (*b)->Step({&pb});
  EXPECT_TRUE(testing::AllClose(pb.data(), pa.data(), 0.0f, 0.0f));
}

INSTANTIATE_TEST_SUITE_P(AllRules, OptimizerRuleTest,
                         ::testing::Values("sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adadelta", "adam",
                                           "adamw", "ftrl", "ftml"));

TEST(OptimizerTest, NamesAreTheTenRulesSorted) {
  EXPECT_EQ(OptimizerNames(), (std::vector<std::string>{"adadelta", "adagrad", "adam", "adamw", "ftml", "ftrl",
                                                        "momentum", "nesterov", "rmsprop", "sgd"}));
}

TEST(OptimizerTest, StateSlotsAreNamedPerRule) {
  auto opt = CreateOptimizer(Config("adam"));
  ASSERT_TRUE(opt.ok());
  Parameter p("fc1.weight", Tensor::Zeros(Shape{2}));
  p.var().set_grad(Tensor::Full(Shape{2}, 1.0f));
  (*opt)->Step({&p});
  std::vector<std::string> names;
  for (const auto& [k, t] : (*opt)->StateDict()) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight/m", "fc1.weight/v"}));
  auto sgd = CreateOptimizer(Config("sgd"));
  (*sgd)->Step({&p});
  EXPECT_TRUE((*sgd)->StateDict().empty());
}

TEST(OptimizerTest, SkipsParametersWithoutGradient) {
  auto opt = CreateOptimizer(Config("momentum"));
  ASSERT_TRUE(opt.ok());
  Parameter used("a", Tensor::Full(Shape{2}, 1.0f));
  Parameter unused("b", Tensor::Full(Shape{2}, 1.0f));
  used.var().set_grad(Tensor::Full(Shape{2}, 1.0f));
  (*opt)->Step({&used, &unused});
  EXPECT_EQ(unused.data().ToFloatVector(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_NE(used.data().ToFloatVector(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ((*opt)->StateDict().count("b/v"), 0u);
}

TEST(OptimizerTest, StepKeyUsesStepPlusOneAndLr) {
  OptimizerConfig c = Config("sgd");
  c.weight_decay = 0.0f;
  auto opt = CreateOptimizer(c);
  ASSERT_TRUE(opt.ok());
  Tensor w = Tensor::Full(Shape{3}, 1.0f);
  (*opt)->SetLr(0.5f);
  (*opt)->StepKey("k", Tensor::Full(Shape{3}, 2.0f), &w);
  EXPECT_EQ(w.ToFloatVector(), (std::vector<float>{0.0f, 0.0f, 0.0f}));
  EXPECT_EQ((*opt)->step(), 0);
  (*opt)->AdvanceStep();
  EXPECT_EQ((*opt)->step(), 1);
}

TEST(OptimizerTest, LoadStateRejectsForeignSlots) {
  auto opt = CreateOptimizer(Config("adam"));
  ASSERT_TRUE(opt.ok());
  Status st = (*opt)->LoadState({{"w/velocity", Tensor::Zeros(Shape{2})}}, 1);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("w/velocity"), std::string::npos) << st.ToString();
  st = (*opt)->LoadState({{"w/m", Tensor::Zeros(Shape{2})}}, 1);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("lacks slot 'v'"), std::string::npos) << st.ToString();
  EXPECT_EQ((*opt)->step(), 0);
}

TEST(OptimizerTest, ValidationNamesTheField) {
  OptimizerConfig c;
  c.lr = -1.0f;
  Status st = ValidateOptimizerConfig(c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "optimizer.lr: must be > 0, got -1");
  c.momentum = 1.0f;
  c.eps = 0.0f;
  st = ValidateOptimizerConfig(c);
  EXPECT_NE(st.message().find("optimizer.momentum: must be in [0, 1), got 1"), std::string::npos);
  EXPECT_NE(st.message().find("optimizer.eps: must be > 0, got 0"), std::string::npos);
  auto created = CreateOptimizer(c);
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateOptimizerConfig(OptimizerConfig{}).ok());
}

TEST(OptimizerTest, UnknownNameIsNotFound) {
  OptimizerConfig c;
  c.name = "lamb";
  auto created = CreateOptimizer(c);
  EXPECT_EQ(created.status().code(), StatusCode::kNotFound);
  EXPECT_NE(created.status().message().find("'lamb'"), std::string::npos);
  EXPECT_NE(ValidateOptimizerConfig(c).message().find("optimizer.name: unknown 'lamb'"), std::string::npos);
}

TEST(LrScheduleTest, ConstantAndStep) {
  LrScheduleConfig c;
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 500, 3, 1000), 0.1f);
  c.name = "step";
  c.step_epochs = 2;
  c.gamma = 0.5f;
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 0, 0, 1000), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 100, 1, 1000), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 200, 2, 1000), 0.05f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 500, 5, 1000), 0.025f);
}

TEST(LrScheduleTest, CosineReachesMinLr) {
  LrScheduleConfig c;
  c.name = "cosine";
  c.min_lr = 0.01f;
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 0, 0, 100), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 50, 0, 100), 0.055f);
  EXPECT_NEAR(ScheduledLr(c, 0.1f, 25, 0, 100), 0.01f + 0.09f * 0.5f * (1 + std::cos(M_PI / 4)), 1e-6);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 100, 0, 100), 0.01f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 150, 0, 100), 0.01f);
}

TEST(LrScheduleTest, WarmupIsLinearThenHandsOver) {
  LrScheduleConfig c;
  c.name = "cosine";
  c.warmup_iterations = 10;
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 0, 0, 110), 0.01f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 4, 0, 110), 0.05f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 9, 0, 110), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 10, 0, 110), 0.1f);  // cosine starts after warm-up
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.1f, 60, 0, 110), 0.05f);
  c.name = "constant";
  EXPECT_FLOAT_EQ(ScheduledLr(c, 0.2f, 1, 0, 110), 0.04f);
}

TEST(LrScheduleTest, ValidationNamesTheField) {
  EXPECT_TRUE(ValidateLrScheduleConfig(LrScheduleConfig{}).ok());
  LrScheduleConfig c;
  c.name = "poly";
  c.gamma = 2.0f;
  c.step_epochs = 0;
  c.warmup_iterations = -1;
  Status st = ValidateLrScheduleConfig(c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  for (const char* want :
       {"optimizer.schedule.name: unknown 'poly'", "optimizer.schedule.gamma: must be in (0, 1], got 2",
        "optimizer.schedule.step_epochs: must be >= 1, got 0", "optimizer.schedule.warmup_iterations"}) {
    EXPECT_NE(st.message().find(want), std::string::npos) << want << " in " << st.message();
  }
}

}  // namespace
}  // namespace geomx::nn
