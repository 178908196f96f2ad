// Parameter: a trainable Variable with a stable, hierarchical key ("features.conv1.weight"). Keys are the
// parameter-server keys and checkpoint names, so they must not depend on construction order or addresses.
#pragma once

#include <string>

#include "engine/autograd/variable.h"

namespace geomx::nn {

class Module;

class Parameter {
 public:
  Parameter(std::string key, Tensor init) : key_(std::move(key)), var_(std::move(init), /*requires_grad=*/true) {}

  const std::string& key() const { return key_; }
  autograd::Variable& var() { return var_; }
  const autograd::Variable& var() const { return var_; }
  const Tensor& data() const { return var_.data(); }
  const Tensor& grad() const { return var_.grad(); }
  int64_t numel() const { return var_.data().numel(); }
  // A frozen parameter (nn/transfer.h, FreezeLayers) gets no gradient, no optimizer state and no
  // parameter-server key; it stays a model parameter (checkpoints save it).
  bool trainable() const { return var_.requires_grad(); }
  void set_trainable(bool on) { var_.set_requires_grad(on); }

 private:
  friend class Module;  // prefixes keys when a module is registered as a child
  std::string key_;
  autograd::Variable var_;
};

}  // namespace geomx::nn
