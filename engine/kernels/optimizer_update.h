// Optimizer update rules, one functor per UpdateRule, written once for every device (docs/style.md R7). The math
// is exactly the one commented on UpdateRule in engine/op_params.h; g' = g + wd*w is the L2-regularised gradient.
//
// Each functor updates one element in place: operator()(w, g, state...) with kStates state references (the
// state tensors of ApplyUpdate, in order). Functors are built on the host from UpdateHyper with Make() (which
// also folds the Adam bias corrections for `step`) and are then plain values, safe to copy into device kernels.
#pragma once

#include <cmath>

#include "engine/kernels/host_device.h"
#include "engine/op_params.h"

namespace geomx::kernels {

// w -= lr * (g + wd*w)
struct SgdUpdate {
  static constexpr int kStates = 0;
  float lr, wd;
  static SgdUpdate Make(const UpdateHyper& h) { return {h.lr, h.weight_decay}; }
  GEOMX_HOST_DEVICE void operator()(float& w, float g) const { w -= lr * (g + wd * w); }
};

// v = mu*v + g'; w -= lr*v
struct MomentumUpdate {
  static constexpr int kStates = 1;
  float lr, wd, mu;
  static MomentumUpdate Make(const UpdateHyper& h) { return {h.lr, h.weight_decay, h.momentum}; }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& v) const {
    v = mu * v + (g + wd * w);
    w -= lr * v;
  }
};

// v = mu*v + g'; w -= lr*(g' + mu*v)
struct NesterovUpdate {
  static constexpr int kStates = 1;
  float lr, wd, mu;
  static NesterovUpdate Make(const UpdateHyper& h) { return {h.lr, h.weight_decay, h.momentum}; }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& v) const {
    const float gp = g + wd * w;
    v = mu * v + gp;
    w -= lr * (gp + mu * v);
  }
};

// h += g'^2; w -= lr*g'/(sqrt(h)+eps)
struct AdaGradUpdate {
  static constexpr int kStates = 1;
  float lr, wd, eps;
  static AdaGradUpdate Make(const UpdateHyper& h) { return {h.lr, h.weight_decay, h.eps}; }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& hs) const {
    const float gp = g + wd * w;
    hs += gp * gp;
    w -= lr * gp / (std::sqrt(hs) + eps);
  }
};

// s = rho*s + (1-rho)*g'^2; w -= lr*g'/(sqrt(s)+eps)
struct RmsPropUpdate {
  static constexpr int kStates = 1;
  float lr, wd, rho, eps;
  static RmsPropUpdate Make(const UpdateHyper& h) { return {h.lr, h.weight_decay, h.rho, h.eps}; }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& s) const {
    const float gp = g + wd * w;
    s = rho * s + (1.0f - rho) * gp * gp;
    w -= lr * gp / (std::sqrt(s) + eps);
  }
};

// s = rho*s + (1-rho)*g'^2; d = sqrt(u+eps)/sqrt(s+eps)*g'; u = rho*u + (1-rho)*d^2; w -= lr*d
struct AdaDeltaUpdate {
  static constexpr int kStates = 2;
  float lr, wd, rho, eps;
  static AdaDeltaUpdate Make(const UpdateHyper& h) { return {h.lr, h.weight_decay, h.rho, h.eps}; }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& s, float& u) const {
    const float gp = g + wd * w;
    s = rho * s + (1.0f - rho) * gp * gp;
    const float d = std::sqrt(u + eps) / std::sqrt(s + eps) * gp;
    u = rho * u + (1.0f - rho) * d * d;
    w -= lr * d;
  }
};

// m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2; w -= lr * (m/bc1) / (sqrt(v/bc2) + eps),
// bc1 = 1 - b1^step, bc2 = 1 - b2^step.
struct AdamUpdate {
  static constexpr int kStates = 2;
  float lr, wd, b1, b2, eps, bc1, bc2;
  static AdamUpdate Make(const UpdateHyper& h) {
    const double step = static_cast<double>(h.step);
    return {h.lr,
            h.weight_decay,
            h.beta1,
            h.beta2,
            h.eps,
            static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), step)),
            static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), step))};
  }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& m, float& v) const {
    const float gp = g + wd * w;
    m = b1 * m + (1.0f - b1) * gp;
    v = b2 * v + (1.0f - b2) * gp * gp;
    const float mhat = m / bc1;
    const float vhat = v / bc2;
    w -= lr * mhat / (std::sqrt(vhat) + eps);
  }
};

// AdamW: Adam on the raw gradient plus decoupled weight decay w -= lr*wd*w (applied to the pre-update w).
struct AdamWUpdate {
  static constexpr int kStates = 2;
  AdamUpdate adam;  // with wd = 0
  float lr, wd;
  static AdamWUpdate Make(const UpdateHyper& h) {
    UpdateHyper no_wd = h;
    no_wd.weight_decay = 0.0f;
    return {AdamUpdate::Make(no_wd), h.lr, h.weight_decay};
  }
  GEOMX_HOST_DEVICE void operator()(float& w, float g, float& m, float& v) const {
    const float decay = lr * wd * w;
    adam(w, g, m, v);
    w -= decay;
  }
};

}  // namespace geomx::kernels
