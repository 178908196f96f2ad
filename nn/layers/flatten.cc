#include "nn/layers/flatten.h"

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

autograd::Variable Flatten::Forward(const autograd::Variable& x) {
  GEOMX_CHECK_GE(x.shape().rank(), 1) << "Flatten of a scalar";
  return autograd::Flatten(x);
}

}  // namespace geomx::nn
