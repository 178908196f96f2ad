// Conformance of the binary cross-entropy with logits (engine/autograd/functions.h BinaryCrossEntropyWithLogits, the
// GAN's loss): the forward pass against a naive per-element reference in double precision, including logits far in
// both tails where a direct log(sigmoid) overflows, and the backward pass against finite differences and against the
// closed form (sigmoid(x) - t) / n. On every available device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/autograd/functions.h"
#include "engine/autograd/grad_check.h"
#include "engine/backend_registry.h"
#include "tests/testutil.h"

namespace geomx::autograd {
namespace {

using ::geomx::testing::RandomTensor;

// -log(sigmoid(x)) = log(1 + exp(-x)), evaluated without overflow in double.
double NegLogSigmoid(double x) { return x >= 0 ? std::log1p(std::exp(-x)) : -x + std::log1p(std::exp(x)); }

// The textbook definition per element, -(t log p + (1 - t) log(1 - p)) with p = sigmoid(x), using
// log(1 - sigmoid(x)) = log(sigmoid(-x)); then the mean.
double NaiveMeanBce(const std::vector<float>& x, const std::vector<float>& t) {
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += t[i] * NegLogSigmoid(x[i]) + (1.0 - t[i]) * NegLogSigmoid(-x[i]);
  return sum / static_cast<double>(x.size());
}

class BceTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor T(const std::vector<float>& v, const Shape& s) const { return Tensor::FromVector(v, s, dev()); }
};

TEST_P(BceTest, ForwardMatchesANaiveReferenceAcrossMagnitudes) {
  // Logits from -100 to 100 (tails where exp overflows f32, and around 0), every target kind: 0, 1, soft.
  const std::vector<float> logits = {-100, -60, -30, -17.5f, -8, -2.25f, -0.5f, -1e-3f, 0, 1e-3f, 0.5f, 2.25f,
                                     8, 17.5f, 30, 60, 100, 3.75f};
  for (float target : {0.0f, 1.0f, 0.3f}) {
    SCOPED_TRACE(target);
    const std::vector<float> t(logits.size(), target);
    Variable x(T(logits, Shape{6, 3}));
    const float got = BinaryCrossEntropyWithLogits(x, T(t, Shape{6, 3})).data().item();
    const double want = NaiveMeanBce(logits, t);
    EXPECT_TRUE(std::isfinite(got));
    EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, want));
  }
  // Random logits and targets, as the GAN's D sees them ([2B, 1] columns).
  const Tensor x = RandomTensor(Shape{64, 1}, 7, -6, 6, dev()), t = RandomTensor(Shape{64, 1}, 8, 0, 1, dev());
  const float got = BinaryCrossEntropyWithLogits(Variable(x), t).data().item();
  EXPECT_NEAR(got, NaiveMeanBce(x.ToFloatVector(), t.ToFloatVector()), 1e-5);
}

TEST_P(BceTest, BackwardMatchesFiniteDifferencesAndTheClosedForm) {
  const Tensor targets = RandomTensor(Shape{4, 3}, 11, 0, 1, dev());
  const GradCheckResult r = CheckGradients(
      [targets](const std::vector<Variable>& in) { return BinaryCrossEntropyWithLogits(in[0], targets); },
      {RandomTensor(Shape{4, 3}, 12, -4, 4, dev())});
  EXPECT_LT(r.max_rel_error, 1e-2) << r.message;
  // Saturated logits: the gradient is (sigmoid(x) - t) / n, finite, and 0 or +-1/n where sigmoid is 0 or 1.
  const std::vector<float> xs = {-100, -30, -2, 0, 2, 30, 100, -0.25f};
  const std::vector<float> ts = {1, 0, 0.5f, 1, 0, 1, 0, 0.75f};
  Variable x(T(xs, Shape{8}), true);
  BinaryCrossEntropyWithLogits(x, T(ts, Shape{8})).Backward();
  const std::vector<float> g = x.grad().ToFloatVector();
  ASSERT_EQ(g.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double sigmoid = 1.0 / (1.0 + std::exp(-static_cast<double>(xs[i])));
    EXPECT_NEAR(g[i], (sigmoid - ts[i]) / 8.0, 1e-7) << "logit " << xs[i];
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, BceTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx::autograd
