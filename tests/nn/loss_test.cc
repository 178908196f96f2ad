#include "nn/loss.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/testutil.h"

namespace geomx::nn {
namespace {

using autograd::Variable;

class LossTest : public ::testing::TestWithParam<Device> {};

TEST_P(LossTest, CrossEntropyMatchesHandComputation) {
  const Device d = GetParam();
  Variable logits(Tensor::FromVector({1, 2, 3, 1, 1, 1}, Shape{2, 3}, d), /*requires_grad=*/true);
  const Tensor labels = Tensor::FromVectorI64({2, 0}, Shape{2}, d);
  Variable loss = CrossEntropyLoss(logits, labels);
  const double z0 = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double expected = 0.5 * ((std::log(z0) - 3.0) + std::log(3.0));
  EXPECT_NEAR(loss.data().item(), expected, 1e-5);
  // d/dlogits = (softmax - onehot) / N
  loss.Backward();
  const std::vector<float> g = logits.grad().ToFloatVector();
  EXPECT_NEAR(g[0], 0.5 * std::exp(1.0) / z0, 1e-5);
  EXPECT_NEAR(g[2], 0.5 * (std::exp(3.0) / z0 - 1.0), 1e-5);
  EXPECT_NEAR(g[3], 0.5 * (1.0 / 3.0 - 1.0), 1e-5);
  EXPECT_NEAR(g[4], 0.5 / 3.0, 1e-5);
}

TEST_P(LossTest, BceWithLogitsMatchesHandComputation) {
  const Device d = GetParam();
  const std::vector<float> x = {-3.0f, 0.0f, 2.0f, 40.0f};
  const std::vector<float> t = {0.0f, 1.0f, 0.25f, 1.0f};
  Variable logits(Tensor::FromVector(x, Shape{2, 2}, d), /*requires_grad=*/true);
  Variable loss = BceWithLogitsLoss(logits, Tensor::FromVector(t, Shape{2, 2}, d));
  double expected = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    // -(t log s + (1-t) log(1-s)) with s = sigmoid(x), in the form that stays finite for x = 40.
    const double xi = x[i];
    expected += (std::max(xi, 0.0) - xi * t[i] + std::log1p(std::exp(-std::fabs(xi)))) / 4.0;
  }
  EXPECT_NEAR(loss.data().item(), expected, 1e-5);
  loss.Backward();
  const std::vector<float> g = logits.grad().ToFloatVector();
  for (size_t i = 0; i < x.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    EXPECT_NEAR(g[i], (s - t[i]) / 4.0, 1e-6) << i;
  }
}

TEST_P(LossTest, MseMatchesHandComputation) {
  const Device d = GetParam();
  Variable pred(Tensor::FromVector({1, 2, 3}, Shape{3}, d), /*requires_grad=*/true);
  Variable loss = MseLoss(pred, Tensor::FromVector({1, 0, 5}, Shape{3}, d));
  EXPECT_NEAR(loss.data().item(), (0 + 4 + 4) / 3.0, 1e-6);
  loss.Backward();
  EXPECT_TRUE(testing::AllClose(pred.grad().ToFloatVector(), {0.0f, 4.0f / 3, -4.0f / 3}));
}

TEST_P(LossTest, SmoothL1MatchesHandComputation) {
  const Device d = GetParam();
  // beta 1: d = {0, 0.5, 3, -2} -> {0, 0.5 * 0.25, 3 - 0.5, 2 - 0.5}; mean 4.125 / 4.
  Variable pred(Tensor::FromVector({1, 1.5f, 4, -1}, Shape{2, 2}, d), /*requires_grad=*/true);
  Variable loss = SmoothL1Loss(pred, Tensor::FromVector({1, 1, 1, 1}, Shape{2, 2}, d));
  EXPECT_NEAR(loss.data().item(), 1.03125, 1e-6);
  loss.Backward();
  // clamp(d / beta, -1, 1) / 4
  EXPECT_TRUE(testing::AllClose(pred.grad().ToFloatVector(), {0.0f, 0.125f, 0.25f, -0.25f}));
  // beta 2: d = {1, -3, 0.5} -> {0.5 * 1 / 2, 3 - 1, 0.5 * 0.25 / 2}; mean 2.3125 / 3.
  Variable p2(Tensor::FromVector({1, -3, 0.5f}, Shape{3}, d), true);
  Variable l2 = SmoothL1Loss(p2, Tensor::Zeros(Shape{3}, DType::kF32, d), 2.0f);
  EXPECT_NEAR(l2.data().item(), 2.3125 / 3, 1e-6);
  l2.Backward();
  EXPECT_TRUE(testing::AllClose(p2.grad().ToFloatVector(), {0.5f / 3, -1.0f / 3, 0.25f / 3}));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, LossTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx::nn
