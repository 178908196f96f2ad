#include "nn/layers/activation.h"

#include "engine/autograd/functions.h"

namespace geomx::nn {

autograd::Variable Activation::Forward(const autograd::Variable& x) { return autograd::Activation(kind_, x); }

std::string Activation::TypeName() const {
  switch (kind_) {
    case ActivationKind::kRelu: return "ReLU";
    case ActivationKind::kTanh: return "Tanh";
    case ActivationKind::kSigmoid: return "Sigmoid";
    case ActivationKind::kGelu: return "GELU";
  }
  return "Activation";
}

}  // namespace geomx::nn
