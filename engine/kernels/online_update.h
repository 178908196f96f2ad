// Per-coordinate update rules of the online learners (algorithms/estimators/ftrl.cc: `ftrl`, `ftml`), written once
// for every device (docs/style.md R7) like the optimizer rules of optimizer_update.h. In a parameter server these
// are the server-side rules applied to pushed gradients; the estimators apply them on every worker to the summed
// gradient so that all workers keep the same model.
//
// Each functor updates one coordinate in place: operator()(w, g, state...). `w` is the weight that produced the
// gradient `g` (read) and receives the new weight (written); the state references are zero-initialised by the
// caller. Functors are plain values (built on the host, safe to copy into device kernels).
#pragma once

#include <cmath>

#include "engine/kernels/host_device.h"
#include "engine/op_params.h"

namespace geomx::kernels {

// FTRL-Proximal (McMahan et al. 2013, "Ad Click Prediction: a View from the Trenches", Algorithm 1), state z, n:
//   sigma = (sqrt(n + g^2) - sqrt(n)) / alpha
//   z    += g - sigma * w
//   n    += g^2
//   w     = 0                                                   if |z| <= l1
//           -(z - sign(z) * l1) / ((beta + sqrt(n)) / alpha + l2)  otherwise
// A coordinate with g = 0 keeps z, n and w unchanged, so updating only the coordinates of the features present in
// an example (lazy weights) is exact.
struct FtrlUpdate {
  static constexpr int kStates = 2;
  float alpha, beta, l1, l2;
  // The optimizer form (UpdateRule::kFtrl): alpha = lr, beta = ftrl_beta, l1, l2 = weight_decay.
  static FtrlUpdate Make(const UpdateHyper& h) { return {h.lr, h.ftrl_beta, h.l1, h.weight_decay}; }
  // The weight the state (z, n) stands for (the last line above).
  GEOMX_HOST_DEVICE float Weight(float z, float n) const { return WeightOfSqrt(z, std::sqrt(n)); }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& z, float& n) const {
    const float sqrt_old = std::sqrt(n);
    const float n_new = n + g * g;
    const float sqrt_new = std::sqrt(n_new);
    z += g - (sqrt_new - sqrt_old) / alpha * w;
    n = n_new;
    w = WeightOfSqrt(z, sqrt_new);
  }

 private:
  GEOMX_HOST_DEVICE float WeightOfSqrt(float z, float sqrt_n) const {
    const float az = z < 0.0f ? -z : z;
    if (az <= l1) return 0.0f;
    const float shrunk = z > 0.0f ? z - l1 : z + l1;
    return -shrunk / ((beta + sqrt_n) / alpha + l2);
  }
};

// FTML, Follow the Moving Leader (Zheng & Kwok 2017, Algorithm 1; the form of MXNet's ftml_update), state d, v, z,
// at step t (1-based) with g' = g + wd * w:
//   v = b2 * v + (1 - b2) * g'^2
//   d_t = (1 - b1^t) / lr * (sqrt(v / (1 - b2^t)) + eps)
//   z = b1 * z + (1 - b1) * g' - (d_t - b1 * d) * w
//   d = d_t
//   w = -z / d
// bc1 = 1 - b1^t and bc2 = 1 - b2^t are folded in by Make() for the step.
struct FtmlUpdate {
  static constexpr int kStates = 3;
  float lr, wd, b1, b2, eps, bc1, bc2;
  // The optimizer form (UpdateRule::kFtml): lr, weight_decay, beta1, beta2, eps, step.
  static FtmlUpdate Make(const UpdateHyper& h) {
    return Make(h.lr, h.weight_decay, h.beta1, h.beta2, h.eps, static_cast<long long>(h.step));
  }
  static FtmlUpdate Make(float lr, float wd, float b1, float b2, float eps, long long step) {
    const double t = static_cast<double>(step);
    return {lr,
            wd,
            b1,
            b2,
            eps,
            static_cast<float>(1.0 - std::pow(static_cast<double>(b1), t)),
            static_cast<float>(1.0 - std::pow(static_cast<double>(b2), t))};
  }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& d, float& v, float& z) const {
    const float gp = g + wd * w;
    v = b2 * v + (1.0f - b2) * gp * gp;
    const float d_t = bc1 / lr * (std::sqrt(v / bc2) + eps);
    z = b1 * z + (1.0f - b1) * gp - (d_t - b1 * d) * w;
    d = d_t;
    w = -z / d_t;
  }
};

}  // namespace geomx::kernels
