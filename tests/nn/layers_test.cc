#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/autograd/functions.h"
#include "engine/ops.h"
#include "nn/init.h"
#include "nn/layers/activation.h"
#include "nn/layers/batch_norm.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/sequential.h"
#include "tests/testutil.h"

namespace geomx::nn {
namespace {

using autograd::Variable;

class LayersTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Variable Input(const Shape& s, uint64_t seed) const {
    return Variable(testing::RandomTensor(s, seed, -1, 1, dev()));
  }
};

TEST_P(LayersTest, LinearMatchesOpsLinear) {
  Rng rng(3);
  Linear lin(6, 4, rng);
  lin.To(dev());
  // A non-zero bias so the bias path is checked too.
  lin.bias()->var().set_data(testing::RandomTensor(Shape{4}, 9, -1, 1, dev()));
  Variable x = Input(Shape{5, 6}, 11);
  Variable y = lin.Forward(x);
  EXPECT_EQ(y.shape(), (Shape{5, 4}));
  EXPECT_TRUE(testing::AllClose(y.data(), ops::Linear(x.data(), lin.weight()->data(), lin.bias()->data())));
  EXPECT_EQ(lin.weight()->data().shape(), (Shape{4, 6}));
}

TEST_P(LayersTest, ConvMatchesOpsConvWithStrideAndPadding) {
  Rng rng(3);
  Conv2d conv(3, 8, 3, rng, Conv2dOptions{.stride = 2, .padding = 1});
  conv.To(dev());
  conv.bias()->var().set_data(testing::RandomTensor(Shape{8}, 5, -1, 1, dev()));
  Variable x = Input(Shape{2, 3, 9, 7}, 12);
  Variable y = conv.Forward(x);
  EXPECT_EQ(y.shape(), (Shape{2, 8, 5, 4}));
  EXPECT_EQ(conv.OutputShape(x.shape()), y.shape());
  Conv2dParams p;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  EXPECT_TRUE(testing::AllClose(y.data(), ops::Conv2d(x.data(), conv.weight()->data(), conv.bias()->data(), p)));
}

TEST_P(LayersTest, ConvWithoutBiasHasOnlyWeight) {
  Rng rng(3);
  Conv2d conv(1, 2, 5, rng, Conv2dOptions{.bias = false});
  conv.To(dev());
  EXPECT_EQ(conv.Parameters().size(), 1u);
  EXPECT_EQ(conv.Forward(Input(Shape{1, 1, 28, 28}, 1)).shape(), (Shape{1, 2, 24, 24}));
}

TEST_P(LayersTest, PoolingShapesAndValues) {
  // One 4x4 map holding 0..15.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  Variable x(Tensor::FromVector(v, Shape{1, 1, 4, 4}, dev()));
  MaxPool2d max_pool(2);
  AvgPool2d avg_pool(2);
  EXPECT_EQ(max_pool.TypeName(), "MaxPool2d");
  EXPECT_EQ(avg_pool.TypeName(), "AvgPool2d");
  EXPECT_TRUE(testing::AllClose(max_pool.Forward(x).data().ToFloatVector(), {5, 7, 13, 15}));
  EXPECT_TRUE(testing::AllClose(avg_pool.Forward(x).data().ToFloatVector(), {2.5f, 4.5f, 10.5f, 12.5f}));
  MaxPool2d overlapping(3, 1);
  EXPECT_EQ(overlapping.Forward(x).shape(), (Shape{1, 1, 2, 2}));
}

TEST_P(LayersTest, ActivationsComputeTheirFunction) {
  Variable x(Tensor::FromVector({-2.0f, 0.0f, 1.5f}, Shape{3}, dev()));
  EXPECT_TRUE(
      testing::AllClose(Activation(ActivationKind::kRelu).Forward(x).data().ToFloatVector(), {0, 0, 1.5f}));
  EXPECT_TRUE(testing::AllClose(Activation(ActivationKind::kTanh).Forward(x).data().ToFloatVector(),
                                {std::tanh(-2.0f), 0.0f, std::tanh(1.5f)}));
  EXPECT_TRUE(testing::AllClose(Activation(ActivationKind::kSigmoid).Forward(x).data().ToFloatVector(),
                                {1 / (1 + std::exp(2.0f)), 0.5f, 1 / (1 + std::exp(-1.5f))}));
  auto gelu = [](float v) { return 0.5f * v * (1 + std::erf(v / std::sqrt(2.0f))); };
  EXPECT_TRUE(testing::AllClose(Activation(ActivationKind::kGelu).Forward(x).data().ToFloatVector(),
                                {gelu(-2.0f), 0.0f, gelu(1.5f)}));
  EXPECT_EQ(Activation(ActivationKind::kGelu).TypeName(), "GELU");
}

TEST_P(LayersTest, DropoutZeroesAndRescalesInTrainingOnly) {
  Variable x(Tensor::Full(Shape{4000}, 1.0f, DType::kF32, dev()));
  Dropout drop(0.25f, 42);
  const std::vector<float> y = drop.Forward(x).data().ToFloatVector();
  int zeros = 0;
  for (float v : y) {
    if (v == 0.0f) {
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(zeros / 4000.0, 0.25, 0.03);
  // A second call draws a new mask; a twin with the same seed repeats the first.
  EXPECT_NE(drop.Forward(x).data().ToFloatVector(), y);
  Dropout twin(0.25f, 42);
  EXPECT_EQ(twin.Forward(x).data().ToFloatVector(), y);
  drop.Eval();
  EXPECT_EQ(drop.Forward(x).data().ToFloatVector(), std::vector<float>(4000, 1.0f));
}

TEST_P(LayersTest, BatchNormNormalisesAndTracksRunningStats) {
  BatchNorm2d bn(2);
  bn.To(dev());
  // Channel 0 holds 1..8, channel 1 holds 10 everywhere; N = 2, H = W = 2.
  std::vector<float> v(16);
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 4; ++i) {
      v[n * 8 + i] = static_cast<float>(n * 4 + i + 1);
      v[n * 8 + 4 + i] = 10.0f;
    }
  }
  Variable x(Tensor::FromVector(v, Shape{2, 2, 2, 2}, dev()));
  const std::vector<float> y = bn.Forward(x).data().ToFloatVector();
  double mean0 = 0, sq0 = 0;
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 4; ++i) {
      mean0 += y[n * 8 + i] / 8.0;
      sq0 += y[n * 8 + i] * y[n * 8 + i] / 8.0;
      EXPECT_NEAR(y[n * 8 + 4 + i], 0.0f, 1e-4);  // constant channel -> 0 (beta)
    }
  }
  EXPECT_NEAR(mean0, 0.0, 1e-5);
  EXPECT_NEAR(sq0, 1.0, 1e-3);
  // running = 0.9 * init + 0.1 * batch; the batch variance is the unbiased one (PyTorch): 6 for 1..8.
  const std::vector<float> rm = bn.running_mean().ToFloatVector();
  const std::vector<float> rv = bn.running_var().ToFloatVector();
  EXPECT_NEAR(rm[0], 0.45f, 1e-5);
  EXPECT_NEAR(rm[1], 1.0f, 1e-5);
  EXPECT_NEAR(rv[0], 0.9f + 0.1f * 6.0f, 1e-4);
  EXPECT_NEAR(rv[1], 0.9f, 1e-5);
  // Eval uses the running statistics and leaves them alone.
  bn.Eval();
  const std::vector<float> ye = bn.Forward(x).data().ToFloatVector();
  EXPECT_NEAR(ye[0], (1.0f - rm[0]) / std::sqrt(rv[0] + 1e-5f), 1e-4);
  EXPECT_EQ(bn.running_mean().ToFloatVector(), rm);
}

TEST_P(LayersTest, BatchNormWorksOnNC) {
  BatchNorm2d bn(3);
  bn.To(dev());
  Variable x = Input(Shape{8, 3}, 4);
  Variable y = bn.Forward(x);
  EXPECT_EQ(y.shape(), (Shape{8, 3}));
  const std::vector<float> yv = y.data().ToFloatVector();
  for (int c = 0; c < 3; ++c) {
    double mean = 0;
    for (int n = 0; n < 8; ++n) mean += yv[n * 3 + c] / 8.0;
    EXPECT_NEAR(mean, 0.0, 1e-5);
  }
  autograd::Sum(y).Backward();
  EXPECT_TRUE(bn.gamma()->grad().defined());
}

TEST_P(LayersTest, FlattenAndSequentialCompose) {
  Rng rng(5);
  Sequential seq;
  seq.Add(std::make_unique<Flatten>()).Add(std::make_unique<Linear>(12, 3, rng));
  seq.Add("act", std::make_unique<Activation>(ActivationKind::kRelu));
  seq.To(dev());
  ASSERT_EQ(seq.size(), 3u);
  std::vector<std::string> keys;
  for (Parameter* p : seq.Parameters()) keys.push_back(p->key());
  EXPECT_EQ(keys, (std::vector<std::string>{"1.weight", "1.bias"}));
  Variable x = Input(Shape{2, 3, 2, 2}, 8);
  Variable flat = Flatten().Forward(x);
  EXPECT_EQ(flat.shape(), (Shape{2, 12}));
  Variable expected = seq.at(2)->Forward(seq.at(1)->Forward(flat));
  EXPECT_TRUE(testing::AllClose(seq.Forward(x).data(), expected.data()));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, LayersTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

TEST(WindowOutputSizeTest, FloorsAndHandlesTooSmallInputs) {
  EXPECT_EQ(WindowOutputSize(28, 5, 1, 0), 24);
  EXPECT_EQ(WindowOutputSize(24, 2, 2, 0), 12);
  EXPECT_EQ(WindowOutputSize(7, 3, 2, 1), 4);
  EXPECT_EQ(WindowOutputSize(1, 2, 2, 0), 0);
  EXPECT_LE(WindowOutputSize(0, 5, 1, 0), 0);
}

TEST(InitTest, FansFollowPyTorchConventions) {
  EXPECT_EQ(FanIn(Shape{16, 3, 5, 5}), 75);
  EXPECT_EQ(FanOut(Shape{16, 3, 5, 5}), 400);
  EXPECT_EQ(FanIn(Shape{10, 128}), 128);
  EXPECT_EQ(FanOut(Shape{10, 128}), 10);
}

TEST(InitTest, DrawsWithinBoundsReproducibly) {
  Rng a(7), b(7);
  const Shape s{64, 32};
  const std::vector<float> ku = KaimingUniform(s, a).ToFloatVector();
  EXPECT_EQ(KaimingUniform(s, b).ToFloatVector(), ku);
  const float bound = std::sqrt(6.0f / 32.0f);
  float max_abs = 0;
  double mean = 0;
  for (float v : ku) {
    max_abs = std::max(max_abs, std::fabs(v));
    mean += v / ku.size();
  }
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.9f * bound);
  EXPECT_NEAR(mean, 0.0, 0.05);
  for (float v : XavierUniform(s, a).ToFloatVector()) EXPECT_LE(std::fabs(v), std::sqrt(6.0f / 96.0f));
  double var = 0;
  const std::vector<float> kn = KaimingNormal(Shape{256, 64}, a).ToFloatVector();
  for (float v : kn) var += static_cast<double>(v) * v / kn.size();
  EXPECT_NEAR(var, 2.0 / 64.0, 0.1 * 2.0 / 64.0);
  EXPECT_EQ(ZerosInit(Shape{3}).ToFloatVector(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(OnesInit(Shape{2}).ToFloatVector(), std::vector<float>(2, 1.0f));
}

TEST(InitTest, ParsesNames) {
  EXPECT_EQ(*ParseInitKind("kaiming"), InitKind::kKaimingUniform);
  EXPECT_EQ(*ParseInitKind("kaiming_normal"), InitKind::kKaimingNormal);
  EXPECT_EQ(*ParseInitKind("xavier"), InitKind::kXavierUniform);
  Result<InitKind> bad = ParseInitKind("he");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'he'"), std::string::npos);
}

}  // namespace
}  // namespace geomx::nn
