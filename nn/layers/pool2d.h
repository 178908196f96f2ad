// Pooling layers over NCHW input: MaxPool2d and AvgPool2d (average excludes padding). No parameters.
// Not thread-safe (Module).
#pragma once

#include "engine/op_params.h"
#include "nn/module.h"

namespace geomx::nn {

// Shared implementation; construct MaxPool2d or AvgPool2d.
class Pool2d : public Module {
 public:
  // x [N, C, H, W] -> [N, C, H', W'], H' = floor((H + 2*pad - kernel) / stride) + 1.
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override;
  const Pool2dParams& params() const { return params_; }

 protected:
  // stride 0 means "= kernel" (non-overlapping windows).
  Pool2d(PoolKind kind, int kernel, int stride, int padding);

 private:
  Pool2dParams params_;
};

class MaxPool2d : public Pool2d {
 public:
  explicit MaxPool2d(int kernel, int stride = 0, int padding = 0)
      : Pool2d(PoolKind::kMax, kernel, stride, padding) {}
};

class AvgPool2d : public Pool2d {
 public:
  explicit AvgPool2d(int kernel, int stride = 0, int padding = 0)
      : Pool2d(PoolKind::kAvg, kernel, stride, padding) {}
};

}  // namespace geomx::nn
