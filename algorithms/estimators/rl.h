// rl: reinforcement learning by policy gradient (docs/algorithms.md#rl; GeoMX catalogue entry 3) in the built-in
// CartPole-v1 environment (datasets/cartpole.h). This header holds the pieces the fit is made of, as pure functions
// (the test seams of tests/algorithms/estimators/rl_test.cc); the estimator itself registers by name
// (GEOMX_REGISTER_ESTIMATOR in rl.cc) and has no other interface.
//
// Networks: a policy 4 -> hidden (tanh) -> 2 logits -> softmax over the actions, and a value baseline
// 4 -> hidden (tanh) -> 1 whose output is the return divided by the value scale (RlValueScale). One flat float
// vector holds both (the model file's "rl.params"), in this order:
//   policy: W1 (hidden x 4, row-major), b1 (hidden), W2 (2 x hidden, row-major), b2 (2);
//   value:  V1 (hidden x 4, row-major), c1 (hidden), v2 (hidden), c2 (1).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace geomx::algorithms {

struct RlShape {
  int64_t hidden = 32;
  static constexpr int64_t kObservations = 4;
  static constexpr int64_t kActions = 2;
  int64_t PolicySize() const { return hidden * kObservations + hidden + kActions * hidden + kActions; }
  int64_t ValueSize() const { return hidden * kObservations + hidden + hidden + 1; }
  int64_t Size() const { return PolicySize() + ValueSize(); }
};

// One step of an episode as the gradient needs it: what the agent saw and what it did.
struct RlStep {
  std::array<float, RlShape::kObservations> observation{};
  int action = 0;
};

// pi(. | observation) under the policy part of `theta`.
std::array<double, RlShape::kActions> RlPolicyProbabilities(const RlShape& shape, std::span<const float> theta,
                                                            std::span<const float> observation);
// The value baseline's estimate of the return from `observation` (the network's output times `value_scale`).
double RlValue(const RlShape& shape, std::span<const float> theta, std::span<const float> observation,
               double value_scale);
// The factor between the value network's output and a return: 1 / (1 - gamma), at most 500 (CartPole-v1's longest
// episode), so that the network learns numbers near [0, 1].
double RlValueScale(double gamma);

// Discounted returns G_t = r_t + gamma G_{t+1} of one episode, backwards from G_T = `bootstrap` (0 after a
// termination; the value of the last state after a truncation).
std::vector<double> RlDiscountedReturns(std::span<const double> rewards, double gamma, double bootstrap);

// Adds to `grad` (shape.Size() doubles) `scale` times the gradient with respect to theta of
//   sum_t [ -advantage_t log pi(a_t | s_t) - entropy H(pi(. | s_t)) + 1/2 (v(s_t) - return_t / value_scale)^2 ]
// over `steps`, v the value network's output and H the entropy in nats. The fit calls it with scale = 1 / (the
// steps of the update over every worker), so that the summed gradients are those of the mean loss per step.
// Returns the sum of the three terms at theta (before scaling). Sizes: advantages and returns one per step.
double RlAccumulateGradient(const RlShape& shape, std::span<const float> theta, std::span<const RlStep> steps,
                            std::span<const double> advantages, std::span<const double> returns, double entropy,
                            double value_scale, double scale, std::span<double> grad);

}  // namespace geomx::algorithms
