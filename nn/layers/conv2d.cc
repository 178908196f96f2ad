#include "nn/layers/conv2d.h"

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

int64_t WindowOutputSize(int64_t in, int kernel, int stride, int pad) {
  const int64_t span = in + 2 * pad - kernel;
  // Floor division that stays correct for a negative span (window larger than the padded input).
  return (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, Rng& rng, const Conv2dOptions& options)
    : in_channels_(in_channels) {
  GEOMX_CHECK(in_channels > 0 && out_channels > 0 && kernel_size > 0 && options.stride > 0 && options.padding >= 0)
      << "Conv2d(" << in_channels << ", " << out_channels << ", k=" << kernel_size << ", s=" << options.stride
      << ", p=" << options.padding << ")";
  params_.stride_h = params_.stride_w = options.stride;
  params_.pad_h = params_.pad_w = options.padding;
  weight_ = RegisterParameter(
      "weight", InitWeight(options.init, Shape{out_channels, in_channels, kernel_size, kernel_size}, rng));
  if (options.bias) bias_ = RegisterParameter("bias", ZerosInit(Shape{out_channels}));
}

Shape Conv2d::OutputShape(const Shape& x) const {
  const Shape& w = weight_->data().shape();
  return Shape{x.dim(0), w.dim(0),
               WindowOutputSize(x.dim(2), static_cast<int>(w.dim(2)), params_.stride_h, params_.pad_h),
               WindowOutputSize(x.dim(3), static_cast<int>(w.dim(3)), params_.stride_w, params_.pad_w)};
}

autograd::Variable Conv2d::Forward(const autograd::Variable& x) {
  RunForwardHook();
  GEOMX_CHECK(x.shape().rank() == 4 && x.shape().dim(1) == in_channels_)
      << "Conv2d expects [N, " << in_channels_ << ", H, W], got " << x.shape().ToString();
  return autograd::Conv2d(x, weight_->var(), bias_ != nullptr ? bias_->var() : autograd::Variable(), params_);
}

}  // namespace geomx::nn
