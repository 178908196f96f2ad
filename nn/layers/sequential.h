// Sequential: runs child modules in order, feeding each one's output to the next. Children added without a
// name are called "0", "1", ... (their keys become "0.weight", ...); named children keep their names.
// Owns its children. Not thread-safe (Module).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace geomx::nn {

class Sequential : public Module {
 public:
  Sequential() = default;

  // Appends `m` named by its position. Returns *this for chaining. Build `m` completely first (module.h).
  Sequential& Add(std::unique_ptr<Module> m);
  // Appends `m` under `name` (unique, no '.').
  Sequential& Add(const std::string& name, std::unique_ptr<Module> m);

  // Runs every child in order; the identity when empty.
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return "Sequential"; }

  size_t size() const { return layers_.size(); }
  // The i-th child (borrowed; lives as long as this Sequential).
  Module* at(size_t i) const { return layers_.at(i); }

 private:
  std::vector<Module*> layers_;  // borrowed views of the children owned by Module
};

}  // namespace geomx::nn
