#include "datasets/cartpole.h"

#include <cmath>

#include "engine/base/check.h"

namespace geomx::data {

namespace {

double StartValue(Rng* rng) { return -0.05 + 0.1 * rng->Uniform(); }

}  // namespace

void CartPole::Reset(Rng* rng) {
  CartPoleState s;
  s.x = StartValue(rng);
  s.x_dot = StartValue(rng);
  s.theta = StartValue(rng);
  s.theta_dot = StartValue(rng);
  Reset(s);
}

void CartPole::Reset(const CartPoleState& state) {
  state_ = state;
  steps_ = 0;
  done_ = false;
}

CartPoleStep CartPole::Step(int action) {
  GEOMX_CHECK(!done_) << "CartPole::Step after the episode ended";
  GEOMX_CHECK(action == 0 || action == 1) << "CartPole action " << action;
  constexpr double kTotalMass = kMassCart + kMassPole;
  constexpr double kPoleMassLength = kMassPole * kLength;
  const double force = action == 1 ? kForceMag : -kForceMag;
  CartPoleState& s = state_;
  const double cos_theta = std::cos(s.theta), sin_theta = std::sin(s.theta);
  // Gymnasium's expressions, in its order of operations.
  const double temp = (force + kPoleMassLength * s.theta_dot * s.theta_dot * sin_theta) / kTotalMass;
  const double theta_acc = (kGravity * sin_theta - cos_theta * temp) /
                           (kLength * (4.0 / 3.0 - kMassPole * cos_theta * cos_theta / kTotalMass));
  const double x_acc = temp - kPoleMassLength * theta_acc * cos_theta / kTotalMass;
  s.x = s.x + kTau * s.x_dot;
  s.x_dot = s.x_dot + kTau * x_acc;
  s.theta = s.theta + kTau * s.theta_dot;
  s.theta_dot = s.theta_dot + kTau * theta_acc;
  ++steps_;
  CartPoleStep out;
  out.reward = 1.0;
  out.terminated = s.x < -kXThreshold || s.x > kXThreshold || s.theta < -kThetaThreshold || s.theta > kThetaThreshold;
  out.truncated = !out.terminated && steps_ >= kMaxSteps;
  done_ = out.terminated || out.truncated;
  return out;
}

std::array<float, CartPole::kObservations> CartPole::Observation() const {
  return {static_cast<float>(state_.x), static_cast<float>(state_.x_dot), static_cast<float>(state_.theta),
          static_cast<float>(state_.theta_dot)};
}

Table CartPoleStartStates(int64_t rows, Rng* rng) {
  Table t;
  t.rows = rows;
  t.cols = CartPole::kObservations;
  t.dense.reserve(static_cast<size_t>(rows * t.cols));
  CartPole env;
  for (int64_t i = 0; i < rows; ++i) {
    env.Reset(rng);
    for (float v : env.Observation()) t.dense.push_back(v);
  }
  t.source = "cartpole";
  return t;
}

Result<TableSplits> OpenCartPole(const DataConfig& config) {
  Rng rng(config.synthetic_seed ^ 0xca27);
  TableSplits s;
  s.train = CartPoleStartStates(config.synthetic_train, &rng);
  s.test = CartPoleStartStates(config.synthetic_test, &rng);
  return s;
}

}  // namespace geomx::data
