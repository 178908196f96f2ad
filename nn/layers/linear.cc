#include "nn/layers/linear.h"

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

Linear::Linear(int64_t in_features, int64_t out_features, Rng& rng, const LinearOptions& options)
    : in_features_(in_features), out_features_(out_features) {
  GEOMX_CHECK(in_features > 0 && out_features > 0) << "Linear(" << in_features << ", " << out_features << ")";
  weight_ = RegisterParameter("weight", InitWeight(options.init, Shape{out_features, in_features}, rng));
  if (options.bias) bias_ = RegisterParameter("bias", ZerosInit(Shape{out_features}));
}

autograd::Variable Linear::Forward(const autograd::Variable& x) {
  RunForwardHook();
  GEOMX_CHECK(x.shape().rank() == 2 && x.shape().dim(1) == in_features_)
      << "Linear expects [N, " << in_features_ << "], got " << x.shape().ToString();
  return autograd::Linear(x, weight_->var(), bias_ != nullptr ? bias_->var() : autograd::Variable());
}

}  // namespace geomx::nn
