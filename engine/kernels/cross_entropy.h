// Softmax cross-entropy for one row of logits, written once for every device (docs/style.md R7). A CPU loop runs
// it per row; a device kernel can run it per row too (or use a library softmax plus these definitions).
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/kernels/host_device.h"

namespace geomx::kernels {

// Writes softmax(logits[0..c)) into probs and returns -log softmax(logits)[label], computed stably as
// logsumexp(x) - x[label] with the row max subtracted before exp. Requires c > 0 and label in [0, c).
GEOMX_HOST_DEVICE inline float SoftmaxCrossEntropyRow(const float* logits, int64_t c, int64_t label,
                                                      float* probs) {
  float mx = logits[0];
  for (int64_t j = 1; j < c; ++j) mx = logits[j] > mx ? logits[j] : mx;
  float sum = 0.0f;
  for (int64_t j = 0; j < c; ++j) {
    probs[j] = std::exp(logits[j] - mx);
    sum += probs[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < c; ++j) probs[j] *= inv;
  return std::log(sum) + mx - logits[label];
}

// dlogits = (probs - onehot(label)) * scale for one row.
GEOMX_HOST_DEVICE inline void SoftmaxCrossEntropyBackwardRow(const float* probs, int64_t c, int64_t label,
                                                             float scale, float* dlogits) {
  for (int64_t j = 0; j < c; ++j) dlogits[j] = probs[j] * scale;
  dlogits[label] -= scale;
}

}  // namespace geomx::kernels
