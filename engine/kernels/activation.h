// Activation math that no vendor library provides on every device, written once (docs/style.md R7). The CPU backend
// gets GELU from oneDNN (eltwise_gelu_erf); the CUDA backend launches these functors (cuDNN has no erf GELU).
// Small value types, safe to copy into device kernels.
#pragma once

#include <cmath>

#include "engine/kernels/host_device.h"

namespace geomx::kernels {

// GELU, erf form: y = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))).
struct GeluFn {
  GEOMX_HOST_DEVICE float operator()(float x) const { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
};

// dx = dy * GELU'(x), GELU'(x) = Phi(x) + x * phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
struct GeluBackwardFn {
  GEOMX_HOST_DEVICE float operator()(float x, float dy) const {
    const float cdf = 0.5f * (1.0f + std::erf(x * 0.70710678118654752f));
    const float pdf = std::exp(-0.5f * x * x) * 0.39894228040143268f;
    return dy * (cdf + x * pdf);
  }
};

}  // namespace geomx::kernels
