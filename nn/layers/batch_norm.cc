#include "nn/layers/batch_norm.h"

#include "engine/autograd/functions.h"
#include "engine/base/check.h"
#include "nn/init.h"

namespace geomx::nn {

BatchNorm2d::BatchNorm2d(int64_t num_features, const BatchNormParams& params)
    : num_features_(num_features), params_(params) {
  GEOMX_CHECK_GT(num_features, 0) << "BatchNorm2d";
  gamma_ = RegisterParameter("gamma", OnesInit(Shape{num_features}));
  beta_ = RegisterParameter("beta", ZerosInit(Shape{num_features}));
  running_mean_ = RegisterBuffer("running_mean", ZerosInit(Shape{num_features}));
  running_var_ = RegisterBuffer("running_var", OnesInit(Shape{num_features}));
}

autograd::Variable BatchNorm2d::Forward(const autograd::Variable& x) {
  RunForwardHook();
  const Shape& s = x.shape();
  GEOMX_CHECK((s.rank() == 4 || s.rank() == 2) && s.dim(1) == num_features_)
      << "BatchNorm2d expects [N, " << num_features_ << ", H, W] or [N, " << num_features_ << "], got "
      << s.ToString();
  if (s.rank() == 4) {
    return autograd::BatchNorm(x, gamma_->var(), beta_->var(), running_mean_, running_var_, training(), params_);
  }
  // [N, C] is [N, C, 1, 1]: the same per-channel statistics over N.
  autograd::Variable x4 = autograd::Reshape(x, Shape{s.dim(0), s.dim(1), 1, 1});
  autograd::Variable y4 =
      autograd::BatchNorm(x4, gamma_->var(), beta_->var(), running_mean_, running_var_, training(), params_);
  return autograd::Reshape(y4, s);
}

}  // namespace geomx::nn
