#include "nn/layers/dropout.h"

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

Dropout::Dropout(float p, uint64_t seed) : p_(p), rng_(seed) {
  GEOMX_CHECK(p >= 0.0f && p < 1.0f) << "Dropout: p must be in [0, 1), got " << p;
}

autograd::Variable Dropout::Forward(const autograd::Variable& x) {
  // p == 0 is the identity in both modes; skip the mask (and keep the Rng stream untouched).
  if (p_ == 0.0f || !training()) return x;
  return autograd::Dropout(x, p_, /*training=*/true, rng_);
}

}  // namespace geomx::nn
