// Activation: an elementwise non-linearity (ReLU, Tanh, Sigmoid, GELU) as a parameter-free layer.
// Not thread-safe (Module).
#pragma once

#include "engine/op_params.h"
#include "nn/module.h"

namespace geomx::nn {

class Activation : public Module {
 public:
  explicit Activation(ActivationKind kind) : kind_(kind) {}

  // Any shape -> same shape.
  autograd::Variable Forward(const autograd::Variable& x) override;
  // "ReLU", "Tanh", "Sigmoid" or "GELU".
  std::string TypeName() const override;
  ActivationKind kind() const { return kind_; }

 private:
  ActivationKind kind_;
};

}  // namespace geomx::nn
