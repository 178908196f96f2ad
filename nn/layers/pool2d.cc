#include "nn/layers/pool2d.h"

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

Pool2d::Pool2d(PoolKind kind, int kernel, int stride, int padding) {
  GEOMX_CHECK(kernel > 0 && stride >= 0 && padding >= 0)
      << "Pool2d(k=" << kernel << ", s=" << stride << ", p=" << padding << ")";
  params_.kind = kind;
  params_.kernel_h = params_.kernel_w = kernel;
  params_.stride_h = params_.stride_w = stride == 0 ? kernel : stride;
  params_.pad_h = params_.pad_w = padding;
}

std::string Pool2d::TypeName() const { return params_.kind == PoolKind::kMax ? "MaxPool2d" : "AvgPool2d"; }

autograd::Variable Pool2d::Forward(const autograd::Variable& x) {
  GEOMX_CHECK_EQ(x.shape().rank(), 4) << TypeName() << " expects NCHW, got " << x.shape().ToString();
  return autograd::Pool2d(x, params_);
}

}  // namespace geomx::nn
