// Conv2d: 2-D convolution over NCHW input with a square kernel. Parameters "weight" [out, in, k, k] and "bias"
// [out] (when enabled). Owns its parameters; not thread-safe (Module).
#pragma once

#include <cstdint>

#include "engine/base/rng.h"
#include "engine/op_params.h"
#include "nn/init.h"
#include "nn/module.h"

namespace geomx::nn {

struct Conv2dOptions {
  int stride = 1;                             // >= 1
  int padding = 0;                            // zero padding on every side, >= 0
  bool bias = true;                           // adds a zero-initialised "bias" parameter
  InitKind init = InitKind::kKaimingUniform;  // weight initialiser
};

class Conv2d : public Module {
 public:
  // Draws the weight from `rng` (borrowed only during construction).
  Conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, Rng& rng, const Conv2dOptions& options = {});

  // x [N, in_channels, H, W] -> [N, out_channels, H', W'] (see OutputShape). A wrong shape aborts.
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return "Conv2d"; }

  // The output shape for an input shape [N, C, H, W] (no check that H', W' >= 1).
  Shape OutputShape(const Shape& x) const;
  const Conv2dParams& params() const { return params_; }
  Parameter* weight() { return weight_; }
  Parameter* bias() { return bias_; }  // null when built without bias

 private:
  int64_t in_channels_;
  Conv2dParams params_;
  Parameter* weight_;
  Parameter* bias_ = nullptr;
};

// Output length of a convolution/pooling window along one axis: floor((in + 2*pad - kernel) / stride) + 1.
// May be <= 0 when the window does not fit (callers validate geometry with it).
int64_t WindowOutputSize(int64_t in, int kernel, int stride, int pad);

}  // namespace geomx::nn
