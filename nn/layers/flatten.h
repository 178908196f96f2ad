// Flatten: [N, d1, d2, ...] -> [N, d1*d2*...] (a view; no copy). No parameters. Not thread-safe (Module).
#pragma once

#include "nn/module.h"

namespace geomx::nn {

class Flatten : public Module {
 public:
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return "Flatten"; }
};

}  // namespace geomx::nn
