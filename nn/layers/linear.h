// Linear: y = x W^T + b over x [N, in_features]. Parameters "weight" [out, in] and "bias" [out] (when enabled).
// Owns its parameters; not thread-safe (Module).
#pragma once

#include <cstdint>

#include "engine/base/rng.h"
#include "nn/init.h"
#include "nn/module.h"

namespace geomx::nn {

struct LinearOptions {
  bool bias = true;                           // adds a zero-initialised "bias" parameter
  InitKind init = InitKind::kKaimingUniform;  // weight initialiser
};

class Linear : public Module {
 public:
  // Draws the weight from `rng` (borrowed only during construction).
  Linear(int64_t in_features, int64_t out_features, Rng& rng, const LinearOptions& options = {});

  // x [N, in_features] -> [N, out_features]. A wrong shape aborts (programmer error).
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return "Linear"; }

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  Parameter* weight() { return weight_; }
  Parameter* bias() { return bias_; }  // null when built without bias

 private:
  int64_t in_features_;
  int64_t out_features_;
  Parameter* weight_;
  Parameter* bias_ = nullptr;
};

}  // namespace geomx::nn
