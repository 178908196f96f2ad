// Autograd: graph mechanics (ordering, accumulation, aliasing, no-grad mode, graph release) and a
// finite-difference check of every function in engine/autograd/functions.h, on every available device.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "engine/autograd/functions.h"
#include "engine/autograd/grad_check.h"
#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx::autograd {
namespace {

using ::geomx::testing::AllClose;
using ::geomx::testing::RandomTensor;

class AutogradTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor Rand(const Shape& s, uint64_t seed, float lo = -1, float hi = 1) const {
    return RandomTensor(s, seed, lo, hi, dev());
  }
  Tensor T(const std::vector<float>& v, const Shape& s) const { return Tensor::FromVector(v, s, dev()); }

  // A scalar that depends on every element of y with a different random weight (so that gradients which are
  // zero for a plain sum, like softmax's or batch norm's, are still checked).
  static Variable Project(const Variable& y, uint64_t seed) {
    Tensor r = RandomTensor(y.shape(), seed, -1, 1, y.data().device());
    return Sum(Mul(y, Variable(r)));
  }

  // Finite-difference check with a relative tolerance.
  void ExpectGradientsMatch(const GradCheckFn& fn, const std::vector<Tensor>& inputs, double tol = 1e-2,
                            GradCheckOptions opts = {}) {
    const GradCheckResult r = CheckGradients(fn, inputs, opts);
    EXPECT_LT(r.max_rel_error, tol) << r.message;
  }

  // Distinct values spaced by `gap` in a shuffled order (for max-like ops: no ties within +-eps).
  Tensor Spaced(const Shape& s, uint64_t seed, float gap = 0.05f) const {
    std::vector<float> v(static_cast<size_t>(s.numel()));
    std::iota(v.begin(), v.end(), 0.0f);
    Rng rng(seed);
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
    for (float& x : v) x = (x - static_cast<float>(v.size()) / 2) * gap;
    return T(v, s);
  }
};

// ---- mechanics ----

// Identity whose backward is deliberately wrong (2x): the checker must notice.
class WrongIdentityNode final : public Node {
 public:
  std::vector<Tensor> Backward(const Tensor& dy) override { return {ops::MulScalar(dy, 2.0f)}; }
  const char* name() const override { return "WrongIdentity"; }
};

TEST_P(AutogradTest, CheckerDetectsAWrongGradient) {
  auto fn = [](const std::vector<Variable>& in) {
    Variable y = MakeResult(in[0].data().Clone(), std::make_shared<WrongIdentityNode>(), {in[0]});
    return Sum(Square(y));
  };
  const GradCheckResult r = CheckGradients(fn, {Rand({3}, 1)});
  EXPECT_GT(r.max_rel_error, 0.4) << r.message;
  EXPECT_NE(r.message.find("input 0"), std::string::npos);
}

TEST_P(AutogradTest, LeafBackwardSeedsOne) {
  Variable x(T({2}, {}), true);
  x.Backward();
  EXPECT_EQ(x.grad().item(), 1.0f);
}

TEST_P(AutogradTest, VariableUsedTwiceAccumulates) {
  Variable x(T({1, -2, 3}, {3}), true);
  Sum(Mul(x, x)).Backward();
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), {2, -4, 6}));
  Variable y(T({1, 2}, {2}), true);
  Sum(Add(y, y)).Backward();
  EXPECT_TRUE(AllClose(y.grad().ToFloatVector(), {2, 2}));
}

TEST_P(AutogradTest, DiamondGraphSumsBothPaths) {
  Variable x(T({0.5f, 1.5f}, {2}), true);
  Variable a = MulScalar(x, 3);
  Variable b = Exp(x);
  Sum(Add(Mul(a, b), a)).Backward();  // d/dx (3x e^x + 3x) = 3e^x + 3x e^x + 3
  std::vector<float> want;
  for (float v : {0.5f, 1.5f}) want.push_back(3 * std::exp(v) + 3 * v * std::exp(v) + 3);
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), want));
}

// on_leaf_done: a two-layer chain w2 * (w1 * x) plus w1 used again near the output. w2 is complete first (only the
// last node uses it); w1 only after its second use, deep in the graph, has run; x (no grad) never. At each call
// the leaf's gradient already has its final value (checked against the hand-computed one), and the calls come
// while backward still runs (w2's before w1's).
TEST_P(AutogradTest, LeafDoneCallbacksComeOnceEachWithTheFinalGradient) {
  Variable x(T({1, 2}, {2}), false);
  Variable w1(T({3, -1}, {2}), true);
  Variable w2(T({0.5f, 2}, {2}), true);
  Variable h = Mul(w1, x);                        // [3, -2]
  Variable loss = Sum(Add(Mul(w2, h), Mul(w1, w1)));  // sum(w2*w1*x + w1^2)
  // d/dw2 = w1 * x = [3, -2]; d/dw1 = w2 * x + 2 w1 = [0.5 + 6, 4 - 2] = [6.5, 2]
  std::vector<std::pair<const void*, std::vector<float>>> calls;
  BackwardOptions options;
  options.on_leaf_done = [&](const Variable& leaf) { calls.emplace_back(leaf.id(), leaf.grad().ToFloatVector()); };
  loss.Backward(Tensor::Full(loss.shape(), 1.0f, loss.data().dtype(), dev()), options);
  ASSERT_EQ(calls.size(), 2u);
  std::map<const void*, std::vector<float>> by_leaf(calls.begin(), calls.end());
  ASSERT_EQ(by_leaf.size(), 2u);
  EXPECT_TRUE(AllClose(by_leaf.at(w2.id()), {3, -2}));
  EXPECT_TRUE(AllClose(by_leaf.at(w1.id()), {6.5f, 2}));
  EXPECT_TRUE(AllClose(w1.grad().ToFloatVector(), {6.5f, 2}));
}

// In a chain of layers the leaves complete from the output back: the last layer's weight first.
TEST_P(AutogradTest, LeafDoneCallbacksComeFromTheOutputBackwards) {
  std::vector<Variable> weights;
  Variable y(T({1, 2, 3}, {3}), false);
  for (int layer = 0; layer < 4; ++layer) {
    weights.emplace_back(T({1.1f, 0.9f, 1.0f}, {3}), true);
    y = Exp(MulScalar(Mul(weights.back(), y), 0.1f));
  }
  std::vector<const void*> order;
  BackwardOptions options;
  options.on_leaf_done = [&](const Variable& leaf) { order.push_back(leaf.id()); };
  Variable loss = Sum(y);
  loss.Backward(Tensor::Full(loss.shape(), 1.0f, loss.data().dtype(), dev()), options);
  EXPECT_EQ(order, (std::vector<const void*>{weights[3].id(), weights[2].id(), weights[1].id(), weights[0].id()}));
}

TEST_P(AutogradTest, LeafGradientsNeverAlias) {
  Variable a(T({1, 2}, {2}), true);
  Variable b(T({3, 4}, {2}), true);
  Variable c(T({5, 6}, {2}), true);
  Sum(Add(Add(a, b), Reshape(c, {2}))).Backward();
  EXPECT_FALSE(a.grad().SharesStorageWith(b.grad()));
  EXPECT_FALSE(a.grad().SharesStorageWith(c.grad()));
  EXPECT_FALSE(b.grad().SharesStorageWith(c.grad()));
  // An explicit seed passed straight through is copied, not aliased.
  Variable x(T({1, 2, 3}, {3}), true);
  Tensor seed = T({1, 2, 3}, {3});
  AddScalar(x, 1).Backward(seed);
  EXPECT_FALSE(x.grad().SharesStorageWith(seed));
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), {1, 2, 3}));
}

TEST_P(AutogradTest, GradientsAccumulateAcrossBackwardCallsUntilZeroGrad) {
  Variable x(T({1, 2}, {2}), true);
  Sum(MulScalar(x, 3)).Backward();
  Sum(MulScalar(x, 3)).Backward();
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), {6, 6}));
  x.ZeroGrad();
  EXPECT_FALSE(x.grad().defined());
  Sum(x).Backward();
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), {1, 1}));
}

TEST_P(AutogradTest, ExplicitSeedForNonScalarOutputs) {
  Variable x(T({1, 2, 3}, {3}), true);
  MulScalar(x, 3).Backward(T({1, 2, 3}, {3}));
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), {3, 6, 9}));
}

TEST_P(AutogradTest, InputsWithoutRequiresGradGetNoGradient) {
  Variable x(T({1, 2}, {2}), true);
  Variable c(T({5, 7}, {2}), false);
  Variable y = Mul(x, c);
  EXPECT_TRUE(y.requires_grad());
  Sum(y).Backward();
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), {5, 7}));
  EXPECT_FALSE(c.grad().defined());
  // A result of constants only records nothing.
  Variable k = Mul(c, c);
  EXPECT_FALSE(k.requires_grad());
  EXPECT_EQ(k.producer(), nullptr);
}

TEST_P(AutogradTest, NoGradGuardStopsRecordingAndRestores) {
  Variable x(T({1, 2}, {2}), true);
  EXPECT_TRUE(GradEnabled());
  {
    NoGradGuard guard;
    EXPECT_FALSE(GradEnabled());
    {
      NoGradGuard nested;
      EXPECT_FALSE(GradEnabled());
    }
    EXPECT_FALSE(GradEnabled());
    Variable y = MulScalar(x, 2);
    EXPECT_EQ(y.producer(), nullptr);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(AllClose(y.data().ToFloatVector(), {2, 4}));
  }
  EXPECT_TRUE(GradEnabled());
  EXPECT_NE(MulScalar(x, 2).producer(), nullptr);
}

TEST_P(AutogradTest, BackwardReleasesTheGraphUnlessRetained) {
  Variable x(T({1, 2}, {2}), true);
  Variable y = Sum(Square(x));
  y.Backward(/*retain_graph=*/true);
  ASSERT_NE(y.producer(), nullptr);
  EXPECT_FALSE(y.producer()->inputs().empty());
  y.Backward();  // the retained graph runs again: gradients add up
  EXPECT_TRUE(AllClose(x.grad().ToFloatVector(), {4, 8}));
  EXPECT_TRUE(y.producer()->inputs().empty());
}

TEST_P(AutogradTest, BackwardTwiceWithoutRetainAbortsWithAHint) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Variable x(T({1, 2}, {2}), true);
  Variable y = Sum(Square(x));
  y.Backward();
  EXPECT_DEATH(y.Backward(), "already released.*retain_graph");
}

TEST_P(AutogradTest, DeepChainsDoNotOverflowTheStack) {
  Variable x(T({1}, {1}), true);
  Variable y = x;
  for (int i = 0; i < 20000; ++i) y = AddScalar(y, 0.0f);
  Sum(y).Backward();
  EXPECT_EQ(x.grad().item(), 1.0f);
}

TEST_P(AutogradTest, SetDataKeepsIdentityAndGrad) {
  Variable w(T({1, 2}, {2}), true);
  Sum(w).Backward();
  const void* id = w.id();
  w.set_data(T({5, 6}, {2}));
  EXPECT_EQ(w.id(), id);
  EXPECT_TRUE(w.grad().defined());
  EXPECT_TRUE(AllClose(w.data().ToFloatVector(), {5, 6}));
}

// ---- finite-difference checks, one per function ----

TEST_P(AutogradTest, GradMatMul) {
  ExpectGradientsMatch([](const auto& in) { return Project(MatMul(in[0], in[1]), 100); },
                       {Rand({3, 4}, 1), Rand({4, 2}, 2)});
}

TEST_P(AutogradTest, GradLinearWithAndWithoutBias) {
  ExpectGradientsMatch([](const auto& in) { return Project(Linear(in[0], in[1], in[2]), 101); },
                       {Rand({3, 4}, 3), Rand({2, 4}, 4), Rand({2}, 5)});
  ExpectGradientsMatch([](const auto& in) { return Project(Linear(in[0], in[1], Variable()), 102); },
                       {Rand({3, 4}, 6), Rand({2, 4}, 7)});
}

TEST_P(AutogradTest, GradConv2d) {
  Conv2dParams same;
  same.pad_h = same.pad_w = 1;
  ExpectGradientsMatch([same](const auto& in) { return Project(Conv2d(in[0], in[1], in[2], same), 103); },
                       {Rand({2, 2, 5, 5}, 8), Rand({3, 2, 3, 3}, 9), Rand({3}, 10)});
  Conv2dParams strided;
  strided.stride_h = strided.stride_w = 2;
  strided.dilation_h = 2;
  ExpectGradientsMatch([strided](const auto& in) { return Project(Conv2d(in[0], in[1], Variable(), strided), 104); },
                       {Rand({1, 2, 7, 6}, 11), Rand({2, 2, 2, 3}, 12)});
}

TEST_P(AutogradTest, GradPool2d) {
  Pool2dParams maxp;  // 2x2 stride 2
  ExpectGradientsMatch([maxp](const auto& in) { return Project(Pool2d(in[0], maxp), 105); },
                       {Spaced({2, 2, 4, 4}, 13)});
  Pool2dParams avg;
  avg.kind = PoolKind::kAvg;
  avg.kernel_h = avg.kernel_w = 3;
  avg.stride_h = avg.stride_w = 2;
  avg.pad_h = avg.pad_w = 1;
  ExpectGradientsMatch([avg](const auto& in) { return Project(Pool2d(in[0], avg), 106); },
                       {Rand({2, 2, 5, 5}, 14)});
}

TEST_P(AutogradTest, GradBatchNormTraining) {
  for (const Shape& s : {Shape{6, 3}, Shape{2, 3, 2, 3}}) {
    const Device d = dev();
    auto fn = [d](const std::vector<Variable>& in) {
      // Fresh running statistics each evaluation: they are updated in place.
      Tensor rm = Tensor::Zeros({3}, DType::kF32, d), rv = Tensor::Full({3}, 1.0f, DType::kF32, d);
      return Project(BatchNorm(in[0], in[1], in[2], &rm, &rv, /*training=*/true, {}), 107);
    };
    ExpectGradientsMatch(fn, {Rand(s, 15, -2, 2), Rand({3}, 16, 0.5f, 1.5f), Rand({3}, 17)}, 2e-2);
  }
}

TEST_P(AutogradTest, BatchNormTrainingUpdatesRunningStatistics) {
  Tensor rm = Tensor::Zeros({2}, DType::kF32, dev()), rv = Tensor::Full({2}, 1.0f, DType::kF32, dev());
  Variable x(T({1, 10, 3, 20, 5, 30, 7, 40}, {4, 2}));
  Variable g(T({1, 1}, {2})), b(T({0, 0}, {2}));
  BatchNormParams p;
  p.momentum = 0.5f;
  Variable y = BatchNorm(x, g, b, &rm, &rv, true, p);
  // Channel 0: mean 4, biased var 5, unbiased 20/3; channel 1: mean 25, biased var 125, unbiased 500/3.
  EXPECT_TRUE(AllClose(rm.ToFloatVector(), {2.0f, 12.5f}, 1e-5f, 1e-5f));
  EXPECT_TRUE(AllClose(rv.ToFloatVector(), {0.5f + 0.5f * 20 / 3.0f, 0.5f + 0.5f * 500 / 3.0f}, 1e-4f, 1e-4f));
  const float s0 = 1 / std::sqrt(5.0f + 1e-5f);
  EXPECT_TRUE(AllClose(y.data().Slice0(0, 1).ToFloatVector(), {-3 * s0, -15 / std::sqrt(125.0f + 1e-5f)}, 1e-4f,
                       1e-5f));
}

TEST_P(AutogradTest, GradBatchNormInference) {
  const Device d = dev();
  Tensor rm = Rand({3}, 18), rv = Rand({3}, 19, 0.5f, 2.0f);
  for (const Shape& s : {Shape{4, 3}, Shape{2, 3, 2, 2}}) {
    auto fn = [d, rm, rv](const std::vector<Variable>& in) {
      Tensor m = rm, v = rv;
      return Project(BatchNorm(in[0], in[1], in[2], &m, &v, /*training=*/false, {}), 108);
    };
    ExpectGradientsMatch(fn, {Rand(s, 20), Rand({3}, 21, 0.5f, 1.5f), Rand({3}, 22)});
  }
}

TEST_P(AutogradTest, GradActivations) {
  // Values away from relu's kink at 0.
  std::vector<float> v = {-1.3f, -0.6f, -0.2f, 0.15f, 0.4f, 0.9f, 1.7f, -2.1f};
  for (ActivationKind k :
       {ActivationKind::kRelu, ActivationKind::kTanh, ActivationKind::kSigmoid, ActivationKind::kGelu}) {
    const GradCheckResult r =
        CheckGradients([k](const auto& in) { return Project(Activation(k, in[0]), 109); }, {T(v, {2, 4})});
    EXPECT_LT(r.max_rel_error, 1e-2) << ActivationName(k) << ": " << r.message;
  }
}

TEST_P(AutogradTest, GradSoftmaxAndLogSoftmax) {
  ExpectGradientsMatch([](const auto& in) { return Project(Softmax(in[0]), 110); }, {Rand({3, 4}, 23, -2, 2)});
  ExpectGradientsMatch([](const auto& in) { return Project(LogSoftmax(in[0]), 111); }, {Rand({3, 4}, 24, -2, 2)});
}

TEST_P(AutogradTest, GradDropout) {
  auto fn = [](const std::vector<Variable>& in) {
    Rng rng(42);  // the same mask on every evaluation
    return Project(Dropout(in[0], 0.5f, /*training=*/true, rng), 112);
  };
  ExpectGradientsMatch(fn, {Rand({4, 8}, 25)});
  // Inverted dropout: kept elements are scaled by 1/(1-p), roughly p of them are zero.
  Rng rng(1);
  Variable x(Tensor::Full({10000}, 1.0f, DType::kF32, dev()));
  const std::vector<float> y = Dropout(x, 0.25f, true, rng).data().ToFloatVector();
  int zeros = 0;
  for (float e : y) {
    if (e == 0.0f) {
      ++zeros;
    } else {
      ASSERT_FLOAT_EQ(e, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(zeros, 2500, 200);
  EXPECT_EQ(Dropout(x, 0.25f, /*training=*/false, rng).id(), x.id());
}

TEST_P(AutogradTest, GradReshapeAndFlatten) {
  ExpectGradientsMatch([](const auto& in) { return Project(Reshape(in[0], {4, -1}), 113); }, {Rand({2, 6}, 26)});
  Variable f = Flatten(Variable(Rand({2, 3, 2, 2}, 27)));
  EXPECT_EQ(f.shape(), (Shape{2, 12}));
  ExpectGradientsMatch([](const auto& in) { return Project(Flatten(in[0]), 114); }, {Rand({2, 3, 2}, 28)});
}

TEST_P(AutogradTest, GradAddSubMulWithBroadcasts) {
  const std::vector<Shape> b_shapes = {Shape{2, 3}, Shape{}, Shape{1}, Shape{3}};
  for (const Shape& bs : b_shapes) {
    SCOPED_TRACE("b shape " + bs.ToString());
    ExpectGradientsMatch([](const auto& in) { return Project(Add(in[0], in[1]), 115); },
                         {Rand({2, 3}, 29), Rand(bs, 30)});
    ExpectGradientsMatch([](const auto& in) { return Project(Sub(in[0], in[1]), 116); },
                         {Rand({2, 3}, 31), Rand(bs, 32)});
    ExpectGradientsMatch([](const auto& in) { return Project(Mul(in[0], in[1]), 117); },
                         {Rand({2, 3}, 33), Rand(bs, 34)});
  }
}

TEST_P(AutogradTest, GradScalarAndUnaryFunctions) {
  ExpectGradientsMatch([](const auto& in) { return Project(MulScalar(in[0], -1.5f), 118); }, {Rand({5}, 35)});
  ExpectGradientsMatch([](const auto& in) { return Project(AddScalar(in[0], 2.0f), 119); }, {Rand({5}, 36)});
  ExpectGradientsMatch([](const auto& in) { return Project(Exp(in[0]), 120); }, {Rand({5}, 37)});
  ExpectGradientsMatch([](const auto& in) { return Project(Log(in[0]), 121); }, {Rand({5}, 38, 0.5f, 3.0f)});
  ExpectGradientsMatch([](const auto& in) { return Project(Square(in[0]), 122); }, {Rand({5}, 39)});
  ExpectGradientsMatch([](const auto& in) { return Sum(in[0]); }, {Rand({2, 3}, 40)});
  ExpectGradientsMatch([](const auto& in) { return Mean(in[0]); }, {Rand({2, 3}, 41)});
  ExpectGradientsMatch([](const auto& in) { return MulScalar(Mean(Square(in[0])), 3.0f); }, {Rand({7}, 42)});
}

TEST_P(AutogradTest, GradSoftmaxCrossEntropy) {
  Tensor labels = Tensor::FromVectorI64({2, 0, 3}, {3}, dev());
  ExpectGradientsMatch([labels](const auto& in) { return SoftmaxCrossEntropy(in[0], labels); },
                       {Rand({3, 4}, 43, -2, 2)});
  // Value: the batch mean of the per-sample losses.
  Variable logits(T({1, 2, 3, 0, 0, 0}, {2, 3}));
  Tensor l2 = Tensor::FromVectorI64({2, 1}, {2}, dev());
  EXPECT_NEAR(SoftmaxCrossEntropy(logits, l2).data().item(), (0.40760596 + 1.0986123) / 2, 1e-5);
}

TEST_P(AutogradTest, GradBinaryCrossEntropyWithLogits) {
  Tensor targets = Rand({2, 3}, 44, 0, 1);
  ExpectGradientsMatch([targets](const auto& in) { return BinaryCrossEntropyWithLogits(in[0], targets); },
                       {Rand({2, 3}, 45, -3, 3)});
  // Value and stability: x = 0, t = 1 -> log 2; huge logits stay finite.
  Variable x(T({0, 100, -100}, {3}));
  Tensor t = T({1, 1, 0}, {3});
  EXPECT_NEAR(BinaryCrossEntropyWithLogits(x, t).data().item(), std::log(2.0) / 3, 1e-6);
  Variable wrong(T({-100, 100}, {2}), true);
  Variable loss = BinaryCrossEntropyWithLogits(wrong, T({1, 0}, {2}));
  EXPECT_NEAR(loss.data().item(), 100.0, 1e-3);
  loss.Backward();
  EXPECT_TRUE(AllClose(wrong.grad().ToFloatVector(), {-0.5f, 0.5f}));
}

TEST_P(AutogradTest, GradMseLoss) {
  Tensor target = Rand({3, 2}, 46);
  ExpectGradientsMatch([target](const auto& in) { return MseLoss(in[0], target); }, {Rand({3, 2}, 47)});
  Variable p(T({1, 2}, {2}));
  EXPECT_FLOAT_EQ(MseLoss(p, T({0, 4}, {2})).data().item(), 2.5f);
}

TEST_P(AutogradTest, GradSmoothL1Loss) {
  // Differences spread over both branches (|d| < beta and beyond) for beta 1 and 0.5.
  Tensor target = Rand({3, 4}, 48);
  for (float beta : {1.0f, 0.5f}) {
    ExpectGradientsMatch([target, beta](const auto& in) { return SmoothL1Loss(in[0], target, beta); },
                         {Rand({3, 4}, 49, -3, 3)}, 1e-2, GradCheckOptions{1e-3, 1e-2});
  }
  // 0.5 d^2 below beta, |d| - 0.5 beta above: d = {0.5, -3} with beta 1 -> (0.125 + 2.5) / 2.
  Variable p(T({0.5f, -3}, {2}));
  EXPECT_FLOAT_EQ(SmoothL1Loss(p, T({0, 0}, {2})).data().item(), 1.3125f);
}

TEST_P(AutogradTest, GradConcatAndSlice) {
  for (int dim : {0, 1, 2, -1}) {
    SCOPED_TRACE(dim);
    ExpectGradientsMatch(
        [dim](const auto& in) { return Project(Concat({in[0], in[1], in[2]}, dim), 110); },
        {Rand({2, 3, 2}, 50), Rand(dim == 0 ? Shape{1, 3, 2} : dim == 1 ? Shape{2, 2, 2} : Shape{2, 3, 3}, 51),
         Rand({2, 3, 2}, 52)});
    ExpectGradientsMatch([dim](const auto& in) { return Project(Slice(in[0], dim, 1, 1), 111); },
                         {Rand({2, 3, 4}, 53)});
  }
  // Exact: the slice's gradient is dy at the sliced extent and zero elsewhere; concat's is dy cut back apart.
  Variable x(T({1, 2, 3, 4, 5, 6}, {2, 3}), true);
  Variable s = Slice(x, 1, 1, 2);  // {{2, 3}, {5, 6}}
  EXPECT_EQ(s.data().ToFloatVector(), (std::vector<float>{2, 3, 5, 6}));
  Sum(Mul(s, Variable(T({10, 20, 30, 40}, {2, 2})))).Backward();
  EXPECT_EQ(x.grad().ToFloatVector(), (std::vector<float>{0, 10, 20, 0, 30, 40}));
  Variable a(T({1, 2}, {2, 1}), true), b(T({3, 4, 5, 6}, {2, 2}), true);
  Variable c = Concat({a, b}, 1);
  EXPECT_EQ(c.data().ToFloatVector(), (std::vector<float>{1, 3, 4, 2, 5, 6}));
  Sum(Mul(c, Variable(T({1, 2, 3, 4, 5, 6}, {2, 3})))).Backward();
  EXPECT_EQ(a.grad().ToFloatVector(), (std::vector<float>{1, 4}));
  EXPECT_EQ(b.grad().ToFloatVector(), (std::vector<float>{2, 3, 5, 6}));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, AutogradTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx::autograd
