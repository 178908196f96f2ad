// CartPole: the cart-pole balancing environment (Barto, Sutton & Anderson 1983) with the dynamics, thresholds,
// rewards and time limit of Gymnasium's CartPole-v1, built in so that reinforcement learning (algorithm `rl`,
// docs/algorithms.md#rl) needs no Python and no files; and the generated table `cartpole` of start states through
// which a recipe names the environment (`data: {name: cartpole}`).
//
// Contract (Gymnasium gymnasium/envs/classic_control/cartpole.py, CartPole-v1):
//  - State (x, x_dot, theta, theta_dot): cart position (m), cart velocity, pole angle from upright (rad), angular
//    velocity, held in double. The observation is the state rounded to float, in that order.
//  - Constants: gravity 9.8, cart mass 1.0, pole mass 0.1 (total 1.1), pole half-length 0.5, force 10 N, tau 0.02 s.
//  - Step(action): action 1 pushes right (+10 N), 0 pushes left (-10 N). With F the force, c = cos(theta),
//    s = sin(theta): temp = (F + 0.05 theta_dot^2 s) / 1.1, theta_acc = (9.8 s - c temp) / (0.5 (4/3 - 0.1 c^2 /
//    1.1)), x_acc = temp - 0.05 theta_acc c / 1.1; then explicit Euler, each position with the OLD velocity:
//    x += tau x_dot, x_dot += tau x_acc, theta += tau theta_dot, theta_dot += tau theta_acc.
//  - Termination after a step: |x| > 2.4 or |theta| > 12 * 2 pi / 360 (strictly outside). Reward 1 for every step,
//    the terminating one included. Truncation (the TimeLimit wrapper): the 500th step ends the episode with
//    truncated = true unless it terminated. Stepping an ended episode is a programmer error (GEOMX_CHECK).
//  - Reset(rng): the four state values uniform in [-0.05, 0.05), drawn in state order from the caller's Rng.
//    Reset(state) starts from a given state (a row of the `cartpole` table).
// A CartPole is a small value; not thread-safe (one per thread).
#pragma once

#include <array>
#include <cstdint>

#include "datasets/data_config.h"
#include "datasets/table.h"
#include "engine/base/rng.h"
#include "engine/base/status.h"

namespace geomx::data {

struct CartPoleState {
  double x = 0, x_dot = 0, theta = 0, theta_dot = 0;
};

// What one step gives back.
struct CartPoleStep {
  double reward = 0;
  bool terminated = false;  // the pole fell or the cart left the track
  bool truncated = false;   // the time limit (kMaxSteps) ended the episode
};

class CartPole {
 public:
  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kLength = 0.5;  // half the pole's length
  static constexpr double kForceMag = 10.0;
  static constexpr double kTau = 0.02;  // seconds per step
  static constexpr double kThetaThreshold = 12 * 2 * 3.14159265358979323846 / 360;  // radians
  static constexpr double kXThreshold = 2.4;
  static constexpr int kMaxSteps = 500;  // CartPole-v1's time limit
  static constexpr int kObservations = 4;
  static constexpr int kActions = 2;

  // Draws a start state (see the contract) and clears the step count.
  void Reset(Rng* rng);
  void Reset(const CartPoleState& state);
  // One step of `action` (0 or 1); GEOMX_CHECK that the episode has not ended and the action is valid.
  CartPoleStep Step(int action);

  const CartPoleState& state() const { return state_; }
  std::array<float, kObservations> Observation() const;
  int steps() const { return steps_; }
  bool done() const { return done_; }

 private:
  CartPoleState state_;
  int steps_ = 0;
  bool done_ = false;
};

// The generated table `cartpole`: `rows` start states (4 dense columns x, x_dot, theta, theta_dot, each drawn as
// Reset(rng) draws them), no labels or targets, source "cartpole".
Table CartPoleStartStates(int64_t rows, Rng* rng);
// data.name cartpole: train = synthetic_train start states, then test = synthetic_test start states (the
// evaluation episodes), from Rng(synthetic_seed). rl draws its training episodes' start states itself and reads
// only the test table's (docs/algorithms.md#rl).
Result<TableSplits> OpenCartPole(const DataConfig& config);

}  // namespace geomx::data
