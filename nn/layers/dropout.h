// Dropout: inverted dropout. In training mode each element is zeroed with probability p and the survivors are
// scaled by 1/(1-p); in eval mode it is the identity. Owns its Rng (seeded at construction), so a model built
// from the same seed drops the same units. No parameters. Not thread-safe (Module).
#pragma once

#include <cstdint>

#include "engine/base/rng.h"
#include "nn/module.h"

namespace geomx::nn {

class Dropout : public Module {
 public:
  // p in [0, 1) (checked: a programmer error; recipes validate it first).
  Dropout(float p, uint64_t seed);

  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return "Dropout"; }
  float p() const { return p_; }

 private:
  float p_;
  Rng rng_;
};

}  // namespace geomx::nn
