// Elementwise ops, reductions, fused losses and optimizer updates against hand-computed values and naive
// reference loops, on every available device (docs/style.md R14).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

using ::geomx::testing::AllClose;
using ::geomx::testing::RandomTensor;

class ElementwiseTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor T(const std::vector<float>& v, const Shape& s) const { return Tensor::FromVector(v, s, dev()); }
};

TEST_P(ElementwiseTest, BinarySameShape) {
  Tensor a = T({1, -2, 3, 4.5f}, {2, 2});
  Tensor b = T({2, 2, -1, 0.5f}, {2, 2});
  EXPECT_TRUE(AllClose(ops::Add(a, b).ToFloatVector(), {3, 0, 2, 5}));
  EXPECT_TRUE(AllClose(ops::Sub(a, b).ToFloatVector(), {-1, -4, 4, 4}));
  EXPECT_TRUE(AllClose(ops::Mul(a, b).ToFloatVector(), {2, -4, -3, 2.25f}));
  EXPECT_TRUE(AllClose(ops::Div(a, b).ToFloatVector(), {0.5f, -1, -3, 9}));
  EXPECT_TRUE(AllClose(ops::Binary(BinaryOp::kMax, a, b).ToFloatVector(), {2, 2, 3, 4.5f}));
  EXPECT_TRUE(AllClose(ops::Binary(BinaryOp::kMin, a, b).ToFloatVector(), {1, -2, -1, 0.5f}));
  EXPECT_EQ(ops::Add(a, b).shape(), (Shape{2, 2}));
  EXPECT_EQ(ops::Add(a, b).device(), dev());
}

TEST_P(ElementwiseTest, BinaryBroadcasts) {
  Tensor a = T({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(AllClose(ops::Mul(a, T({2}, {})).ToFloatVector(), {2, 4, 6, 8, 10, 12}));
  EXPECT_TRUE(AllClose(ops::Sub(a, T({1}, {1})).ToFloatVector(), {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(AllClose(ops::Add(a, T({10, 20, 30}, {3})).ToFloatVector(), {11, 22, 33, 14, 25, 36}));
  EXPECT_TRUE(AllClose(ops::Div(a, T({1, 2, 4}, {3})).ToFloatVector(), {1, 1, 0.75f, 4, 2.5f, 1.5f}));
  // Bias over the last dim of a 4-D tensor.
  Tensor x = RandomTensor({2, 3, 2, 5}, 1, -1, 1, dev());
  Tensor bias = RandomTensor({5}, 2, -1, 1, dev());
  std::vector<float> xv = x.ToFloatVector(), bv = bias.ToFloatVector(), want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) want[i] = xv[i] + bv[i % 5];
  EXPECT_TRUE(AllClose(ops::Add(x, bias).ToFloatVector(), want));
}

TEST_P(ElementwiseTest, LargeBinaryMatchesSerialReference) {
  // Large enough to take the parallel path; odd so chunks do not divide evenly.
  const int64_t n = 300007;
  Tensor a = RandomTensor({n}, 3, -2, 2, dev());
  Tensor b = RandomTensor({n}, 4, -2, 2, dev());
  std::vector<float> av = a.ToFloatVector(), bv = b.ToFloatVector(), want(av.size());
  for (size_t i = 0; i < av.size(); ++i) want[i] = av[i] * bv[i];
  EXPECT_EQ(ops::Mul(a, b).ToFloatVector(), want);
  Tensor rows = RandomTensor({n / 7, 7}, 5, -1, 1, dev()).Reshape({-1, 7});
  Tensor bias = RandomTensor({7}, 6, -1, 1, dev());
  std::vector<float> rv = rows.ToFloatVector(), biv = bias.ToFloatVector(), want2(rv.size());
  for (size_t i = 0; i < rv.size(); ++i) want2[i] = rv[i] - biv[i % 7];
  EXPECT_EQ(ops::Sub(rows, bias).ToFloatVector(), want2);
}

TEST_P(ElementwiseTest, Unary) {
  Tensor x = T({0.25f, 1, 4, 9}, {4});
  Tensor s = T({-1.5f, 0, 2, -3}, {4});
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kNeg, s).ToFloatVector(), {1.5f, 0, -2, 3}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kExp, s).ToFloatVector(),
                       {std::exp(-1.5f), 1, std::exp(2.0f), std::exp(-3.0f)}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kLog, x).ToFloatVector(),
                       {std::log(0.25f), 0, std::log(4.0f), std::log(9.0f)}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kSqrt, x).ToFloatVector(), {0.5f, 1, 2, 3}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kAbs, s).ToFloatVector(), {1.5f, 0, 2, 3}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kSquare, s).ToFloatVector(), {2.25f, 0, 4, 9}));
  EXPECT_TRUE(AllClose(ops::AddScalar(s, 1.5f).ToFloatVector(), {0, 1.5f, 3.5f, -1.5f}));
  EXPECT_TRUE(AllClose(ops::MulScalar(s, -2).ToFloatVector(), {3, 0, -4, 6}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kClampMin, s, -1).ToFloatVector(), {-1, 0, 2, -1}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kPowScalar, x, 3).ToFloatVector(), {0.015625f, 1, 64, 729}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kPowScalar, x, 1.5f).ToFloatVector(), {0.125f, 1, 8, 27}));
  // The exponents with dedicated fast paths.
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kPowScalar, x, 2).ToFloatVector(), {0.0625f, 1, 16, 81}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kPowScalar, x, 0.5f).ToFloatVector(), {0.5f, 1, 2, 3}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kPowScalar, x, -1).ToFloatVector(), {4, 1, 0.25f, 1.0f / 9}));
  EXPECT_TRUE(AllClose(ops::Unary(UnaryOp::kPowScalar, x, 1).ToFloatVector(), {0.25f, 1, 4, 9}));
}

TEST_P(ElementwiseTest, ReduceHandValues) {
  Tensor x = T({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(AllClose(ops::Reduce(ReduceOp::kSum, x, 0, 1).ToFloatVector(), {5, 7, 9}));
  EXPECT_TRUE(AllClose(ops::Reduce(ReduceOp::kSum, x, 1, 2).ToFloatVector(), {6, 15}));
  EXPECT_TRUE(AllClose(ops::Reduce(ReduceOp::kMax, x, 1, 2).ToFloatVector(), {3, 6}));
  EXPECT_TRUE(AllClose(ops::Reduce(ReduceOp::kMax, x, 0, 1).ToFloatVector(), {4, 5, 6}));
  EXPECT_TRUE(AllClose(ops::Reduce(ReduceOp::kMean, x, 0, 1).ToFloatVector(), {2.5f, 3.5f, 4.5f}));
  Tensor all = ops::Sum(x);
  EXPECT_EQ(all.shape(), Shape());
  EXPECT_FLOAT_EQ(all.item(), 21);
  EXPECT_FLOAT_EQ(ops::Mean(x).item(), 3.5f);
  EXPECT_FLOAT_EQ(ops::Reduce(ReduceOp::kMax, T({-5, -2, -9}, {3}), 0, 1).item(), -2);
  EXPECT_EQ(ops::Reduce(ReduceOp::kSum, x, 1, 1).ToFloatVector(), x.ToFloatVector());  // empty axis range
}

// Naive reference: x viewed as [outer, red, inner].
std::vector<float> NaiveReduce(ReduceOp op, const std::vector<float>& x, int64_t outer, int64_t red, int64_t inner) {
  std::vector<float> out(static_cast<size_t>(outer * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = op == ReduceOp::kMax ? -INFINITY : 0.0;
      for (int64_t r = 0; r < red; ++r) {
        const double v = x[static_cast<size_t>((o * red + r) * inner + i)];
        acc = op == ReduceOp::kMax ? std::max(acc, v) : acc + v;
      }
      if (op == ReduceOp::kMean) acc /= static_cast<double>(red);
      out[static_cast<size_t>(o * inner + i)] = static_cast<float>(acc);
    }
  }
  return out;
}

TEST_P(ElementwiseTest, ReduceEveryAxisRangeMatchesNaive) {
  const Shape s{3, 4, 5, 6};
  Tensor x = RandomTensor(s, 8, -1, 1, dev());
  const std::vector<float> xv = x.ToFloatVector();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax}) {
    for (int b = 0; b <= 4; ++b) {
      for (int e = b; e <= 4; ++e) {
        int64_t outer = 1, red = 1, inner = 1;
        for (int i = 0; i < b; ++i) outer *= s[i];
        for (int i = b; i < e; ++i) red *= s[i];
        for (int i = e; i < 4; ++i) inner *= s[i];
        Tensor got = ops::Reduce(op, x, b, e);
        EXPECT_EQ(got.rank(), 4 - (e - b));
        EXPECT_TRUE(AllClose(got.ToFloatVector(), NaiveReduce(op, xv, outer, red, inner), 1e-5f, 1e-5f))
            << "op " << static_cast<int>(op) << " axes [" << b << ", " << e << ")";
      }
    }
  }
}

TEST_P(ElementwiseTest, LargeReductionsAreAccurate) {
  // 2M elements of 0.1: a naive float accumulator drifts by percent; blocked lanes + double stay exact-ish.
  const int64_t n = 2000000;
  Tensor x = Tensor::Full({n}, 0.1f, DType::kF32, dev());
  EXPECT_NEAR(ops::Sum(x).item(), 0.1 * n, 0.1 * n * 1e-6);
  EXPECT_NEAR(ops::Mean(x).item(), 0.1, 1e-7);
  // Column sums of a tall matrix (bias gradients), parallel over column blocks.
  Tensor m = RandomTensor({4096, 300}, 9, -1, 1, dev());
  EXPECT_TRUE(AllClose(ops::Reduce(ReduceOp::kSum, m, 0, 1).ToFloatVector(),
                       NaiveReduce(ReduceOp::kSum, m.ToFloatVector(), 1, 4096, 300), 1e-4f, 1e-4f));
  // Row sums of many rows, parallel over rows.
  Tensor r = RandomTensor({20000, 33}, 10, -1, 1, dev());
  EXPECT_TRUE(AllClose(ops::Reduce(ReduceOp::kMax, r, 1, 2).ToFloatVector(),
                       NaiveReduce(ReduceOp::kMax, r.ToFloatVector(), 20000, 33, 1)));
  std::vector<float> ramp(100003);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i % 1000) - 500.0f;
  ramp[77777] = 1e6f;
  EXPECT_EQ(ops::Reduce(ReduceOp::kMax, T(ramp, {100003}), 0, 1).item(), 1e6f);
}

TEST_P(ElementwiseTest, AxpyAndMaskScale) {
  Tensor y = T({1, 2}, {2});
  ops::Axpy(2, T({3, 4}, {2}), &y);
  EXPECT_TRUE(AllClose(y.ToFloatVector(), {7, 10}));
  Tensor mask = ops::Cast(T({1, 0, 1, 0}, {4}), DType::kU8);
  EXPECT_TRUE(AllClose(ops::MaskScale(T({1, 2, 3, 4}, {4}), mask, 2).ToFloatVector(), {2, 0, 6, 0}));
}

TEST_P(ElementwiseTest, SoftmaxCrossEntropyForwardBackward) {
  Tensor logits = T({1, 2, 3, 0, 0, 0, 1000, 0, -1000}, {3, 3});
  Tensor labels = Tensor::FromVectorI64({2, 0, 1}, {3}, dev());
  ops::CrossEntropyResult r = ops::SoftmaxCrossEntropy(logits, labels);
  // Row 0: log(e^1 + e^2 + e^3) - 3; row 1: log 3; row 2: stable at huge logits, loss = 1000.
  EXPECT_TRUE(AllClose(r.loss.ToFloatVector(), {0.40760596f, 1.0986123f, 1000.0f}, 1e-5f, 1e-5f));
  EXPECT_TRUE(AllClose(r.probs.ToFloatVector(),
                       {0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f, 1, 0, 0}, 1e-5f,
                       1e-6f));
  Tensor d = ops::SoftmaxCrossEntropyBackward(r.probs, labels, 0.5f);
  EXPECT_TRUE(AllClose(d.ToFloatVector(),
                       {0.045015285f, 0.122364235f, -0.16737952f, -1 / 3.0f, 1 / 6.0f, 1 / 6.0f, 0.5f, -0.5f, 0},
                       1e-5f, 1e-6f));
}

TEST_P(ElementwiseTest, SoftmaxCrossEntropyRejectsBadLabels) {
  Backend& backend = BackendFor(dev());
  Tensor logits = RandomTensor({2, 4}, 11, -1, 1, dev());
  Tensor loss = Tensor::Empty({2}, DType::kF32, dev());
  Tensor probs = Tensor::Empty({2, 4}, DType::kF32, dev());
  for (int64_t bad : {int64_t{4}, int64_t{-1}}) {
    Tensor labels = Tensor::FromVectorI64({0, bad}, {2}, dev());
    Status s = backend.SoftmaxCrossEntropyForward(logits, labels, &loss, &probs);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("row 1"), std::string::npos) << s.message();
    EXPECT_EQ(backend.SoftmaxCrossEntropyBackward(probs, labels, 1, &probs).code(), StatusCode::kInvalidArgument);
  }
}

TEST_P(ElementwiseTest, ArgMax) {
  Tensor x = T({1, 3, 2, 5, 5, 0, -1, -2, -0.5f}, {3, 3});
  Tensor a = ops::ArgMax(x);
  EXPECT_EQ(a.dtype(), DType::kI64);
  EXPECT_EQ(a.ToI64Vector(), (std::vector<int64_t>{1, 0, 2}));  // first maximum wins ties
}

// ---- optimizer updates ----

struct UpdateCase {
  UpdateRule rule;
  UpdateHyper h;
};

// Double-precision reference of the rules in engine/op_params.h for one element, state in s0/s1/s2.
void ReferenceUpdate(UpdateRule rule, const UpdateHyper& h, double g, double* w, double* s0, double* s1,
                     double* s2) {
  const double gp = g + h.weight_decay * *w;
  switch (rule) {
    case UpdateRule::kSgd: *w -= h.lr * gp; break;
    case UpdateRule::kMomentum:
      *s0 = h.momentum * *s0 + gp;
      *w -= h.lr * *s0;
      break;
    case UpdateRule::kNesterov:
      *s0 = h.momentum * *s0 + gp;
      *w -= h.lr * (gp + h.momentum * *s0);
      break;
    case UpdateRule::kAdaGrad:
      *s0 += gp * gp;
      *w -= h.lr * gp / (std::sqrt(*s0) + h.eps);
      break;
    case UpdateRule::kRmsProp:
      *s0 = h.rho * *s0 + (1 - h.rho) * gp * gp;
      *w -= h.lr * gp / (std::sqrt(*s0) + h.eps);
      break;
    case UpdateRule::kAdaDelta: {
      *s0 = h.rho * *s0 + (1 - h.rho) * gp * gp;
      const double d = std::sqrt(*s1 + h.eps) / std::sqrt(*s0 + h.eps) * gp;
      *s1 = h.rho * *s1 + (1 - h.rho) * d * d;
      *w -= h.lr * d;
      break;
    }
    case UpdateRule::kFtrl: {  // McMahan et al. 2013, Algorithm 1, alpha = lr, l2 = weight decay
      const double sigma = (std::sqrt(*s1 + g * g) - std::sqrt(*s1)) / h.lr;
      *s0 += g - sigma * *w;
      *s1 += g * g;
      *w = std::fabs(*s0) <= h.l1 ? 0.0
                                   : -(*s0 - (*s0 > 0 ? h.l1 : -h.l1)) /
                                         ((h.ftrl_beta + std::sqrt(*s1)) / h.lr + h.weight_decay);
      break;
    }
    case UpdateRule::kFtml: {  // Zheng & Kwok 2017, Algorithm 1 (L2 folded into g): s0 = d, s1 = v, s2 = z
      const double t = static_cast<double>(h.step);
      *s1 = h.beta2 * *s1 + (1 - h.beta2) * gp * gp;
      const double d = (1 - std::pow(h.beta1, t)) / h.lr * (std::sqrt(*s1 / (1 - std::pow(h.beta2, t))) + h.eps);
      const double sigma = d - h.beta1 * *s0;
      *s2 = h.beta1 * *s2 + (1 - h.beta1) * gp - sigma * *w;
      *s0 = d;
      *w = -*s2 / d;
      break;
    }
    case UpdateRule::kAdam:
    case UpdateRule::kAdamW: {
      const double gg = rule == UpdateRule::kAdam ? gp : g;
      const double decay = rule == UpdateRule::kAdamW ? h.lr * h.weight_decay * *w : 0.0;
      *s0 = h.beta1 * *s0 + (1 - h.beta1) * gg;
      *s1 = h.beta2 * *s1 + (1 - h.beta2) * gg * gg;
      const double mhat = *s0 / (1 - std::pow(h.beta1, static_cast<double>(h.step)));
      const double vhat = *s1 / (1 - std::pow(h.beta2, static_cast<double>(h.step)));
      *w -= h.lr * mhat / (std::sqrt(vhat) + h.eps) + decay;
      break;
    }
  }
}

// One step of `rule` on a single element w = 1, g = 0.5 (fresh state).
float OneStep(Device dev, UpdateRule rule, const UpdateHyper& h) {
  Tensor w = Tensor::Full({1}, 1.0f, DType::kF32, dev);
  Tensor g = Tensor::Full({1}, 0.5f, DType::kF32, dev);
  std::vector<Tensor> state;
  for (int i = 0; i < UpdateRuleStateCount(rule); ++i) state.push_back(Tensor::Zeros({1}, DType::kF32, dev));
  std::vector<Tensor*> ptrs;
  for (Tensor& s : state) ptrs.push_back(&s);
  ops::ApplyUpdate(rule, h, g, &w, ptrs);
  return w.item();
}

TEST_P(ElementwiseTest, UpdateRulesFirstStepHandValues) {
  UpdateHyper h;
  h.lr = 0.1f;
  h.weight_decay = 0.01f;
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kSgd, h), 1 - 0.1 * (0.5 + 0.01), 1e-7);  // 0.949
  h.weight_decay = 0;
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kMomentum, h), 0.95, 1e-7);    // v = 0.5
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kNesterov, h), 0.905, 1e-7);   // 1 - 0.1 * (0.5 + 0.9*0.5)
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kAdaGrad, h), 0.9, 1e-6);      // h = 0.25: 0.1 * 0.5 / 0.5
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kRmsProp, h), 0.68377223, 1e-6);  // s = 0.025: 0.05 / 0.1581139
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kAdam, h), 0.9, 1e-6);         // first Adam step = lr * sign(g)
  h.lr = 1.0f;
  h.eps = 1e-6f;
  // s = 0.025, d = sqrt(1e-6) / sqrt(0.025 + 1e-6) * 0.5 = 0.0031622145
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kAdaDelta, h), 1 - 0.0031622145, 1e-6);
  h.lr = 0.1f;
  h.eps = 1e-8f;
  h.weight_decay = 0.1f;
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kAdamW, h), 1 - 0.1 - 0.01, 1e-6);  // decoupled decay lr*wd*w
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kAdam, h), 0.9, 1e-6);   // L2 folded into g: still lr * sign(g')
  // FTRL from w = 1, g = 0.5, alpha 0.1, beta 1, l1 0.01, l2 0.1: sigma = 0.5 / 0.1 = 5, z = 0.5 - 5 = -4.5,
  // n = 0.25, w = (4.5 - 0.01) / ((1 + 0.5) / 0.1 + 0.1) = 4.49 / 15.1.
  h.l1 = 0.01f;
  h.ftrl_beta = 1.0f;
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kFtrl, h), 4.49 / 15.1, 1e-6);
  h.l1 = 5.0f;  // |z| = 4.5 <= l1: exactly zero
  EXPECT_EQ(OneStep(dev(), UpdateRule::kFtrl, h), 0.0f);
  // FTML's first step from w = 1, g = 0.5, lr 0.1, beta1 0.9, beta2 0.999, no decay: v = 0.00025, d = (0.1 / 0.1)
  // * sqrt(0.00025 / 0.001) = 0.5, z = 0.1 * 0.5 - 0.5 * 1 = -0.45, w = 0.45 / 0.5 = 0.9 (like Adam: lr * sign(g)).
  h.weight_decay = 0.0f;
  EXPECT_NEAR(OneStep(dev(), UpdateRule::kFtml, h), 0.9, 1e-6);
}

TEST_P(ElementwiseTest, UpdateRulesMatchReferenceOverSeveralSteps) {
  const std::vector<UpdateRule> rules = {UpdateRule::kSgd,     UpdateRule::kMomentum, UpdateRule::kNesterov,
                                         UpdateRule::kAdaGrad, UpdateRule::kRmsProp,  UpdateRule::kAdaDelta,
                                         UpdateRule::kAdam,    UpdateRule::kAdamW,    UpdateRule::kFtrl,
                                         UpdateRule::kFtml};
  for (int64_t n : {int64_t{5}, int64_t{100003}}) {
    for (UpdateRule rule : rules) {
      UpdateHyper h;
      h.lr = rule == UpdateRule::kAdaDelta ? 1.0f : 0.05f;
      h.weight_decay = 0.01f;
      h.eps = rule == UpdateRule::kAdaDelta ? 1e-6f : 1e-8f;
      Tensor w = RandomTensor({n}, 20, -1, 1, dev());
      const std::vector<float> w0 = w.ToFloatVector();
      std::vector<double> rw(w0.begin(), w0.end());
      std::vector<double> rs0(static_cast<size_t>(n), 0.0), rs1(static_cast<size_t>(n), 0.0),
          rs2(static_cast<size_t>(n), 0.0);
      std::vector<Tensor> state;
      for (int i = 0; i < UpdateRuleStateCount(rule); ++i) state.push_back(Tensor::Zeros({n}, DType::kF32, dev()));
      std::vector<Tensor*> ptrs;
      for (Tensor& s : state) ptrs.push_back(&s);
      for (int64_t step = 1; step <= 3; ++step) {
        h.step = step;
        Tensor g = RandomTensor({n}, static_cast<uint64_t>(30 + step), -1, 1, dev());
        const std::vector<float> gv = g.ToFloatVector();
        ops::ApplyUpdate(rule, h, g, &w, ptrs);
        for (size_t i = 0; i < rw.size(); ++i) ReferenceUpdate(rule, h, gv[i], &rw[i], &rs0[i], &rs1[i], &rs2[i]);
      }
      std::vector<float> want(rw.begin(), rw.end());
      EXPECT_TRUE(AllClose(w.ToFloatVector(), want, 1e-4f, 1e-5f))
          << "rule " << static_cast<int>(rule) << " n " << n;
      if (!state.empty()) {
        std::vector<float> want_s0(rs0.begin(), rs0.end());
        EXPECT_TRUE(AllClose(state[0].ToFloatVector(), want_s0, 1e-4f, 1e-6f)) << "rule " << static_cast<int>(rule);
      }
      if (state.size() == 3) {
        std::vector<float> want_s2(rs2.begin(), rs2.end());
        EXPECT_TRUE(AllClose(state[2].ToFloatVector(), want_s2, 1e-4f, 1e-6f)) << "rule " << static_cast<int>(rule);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, ElementwiseTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx
