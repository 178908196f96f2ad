// BatchNorm2d: per-channel batch normalisation over [N, C, H, W] (statistics over N, H, W) or [N, C]
// (statistics over N, i.e. BatchNorm1d). Parameters "gamma" (ones) and "beta" (zeros), shape [C]; buffers
// "running_mean" (zeros) and "running_var" (ones), shape [C], saved in checkpoints but not trained.
// Training mode normalises with batch statistics and updates the running ones
// (running = (1 - momentum) * running + momentum * batch); eval mode uses the running statistics.
// Not thread-safe (Module).
#pragma once

#include <cstdint>

#include "engine/op_params.h"
#include "nn/module.h"

namespace geomx::nn {

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, const BatchNormParams& params = {});

  // x [N, C, H, W] or [N, C] -> same shape. A wrong channel count aborts (programmer error).
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return "BatchNorm2d"; }

  int64_t num_features() const { return num_features_; }
  Parameter* gamma() { return gamma_; }
  Parameter* beta() { return beta_; }
  const Tensor& running_mean() const { return *running_mean_; }
  const Tensor& running_var() const { return *running_var_; }

 private:
  int64_t num_features_;
  BatchNormParams params_;
  Parameter* gamma_;
  Parameter* beta_;
  Tensor* running_mean_;  // owned by Module::buffers_
  Tensor* running_var_;   // owned by Module::buffers_
};

}  // namespace geomx::nn
