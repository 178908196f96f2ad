// Module: a layer or a model. Owns its parameters, buffers (non-trained state such as batch-norm running
// statistics) and child modules. Names compose with '.' ("block1.conv.weight"): RegisterModule prefixes every
// key in the child's subtree with "name.", so Parameter::key() is always the full key once a model is built
// (build children completely before registering them).
// Not thread-safe: one thread trains a module at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/variable.h"
#include "nn/parameter.h"

namespace geomx::nn {

class Module {
 public:
  virtual ~Module() = default;
  virtual autograd::Variable Forward(const autograd::Variable& x) = 0;
  // Short type name for summaries ("Conv2d", "Sequential", "GeomxCnn").
  virtual std::string TypeName() const = 0;

  // All parameters of this module and its children, depth-first in registration order, with full keys.
  std::vector<Parameter*> Parameters();
  // The trainable ones (not frozen), in the same order: what the trainer updates and the parameter server keys.
  std::vector<Parameter*> TrainableParameters();
  // All buffers (full keys) — saved in checkpoints, not trained.
  std::vector<std::pair<std::string, Tensor*>> Buffers();
  int64_t NumParameters();

  void Train(bool on = true);
  void Eval() { Train(false); }
  bool training() const { return training_; }

  // Moves every parameter and buffer to `device`.
  void To(Device device);
  void ZeroGrad();

  // One line per module with parameter counts (for `geomx train --dry-run` and logs).
  std::string Summary();

  // Before-forward hook: every layer that owns parameters (Conv2d, Linear, BatchNorm2d; a new such layer must do
  // the same) calls it with itself at the start of Forward, before it reads a parameter. A parameter-server
  // worker that overlaps communication with the next forward pass (P3, cli/sync/p3.cc) waits there until the
  // layer's new parameters arrived. Unset (the default) it costs one branch.
  using ForwardHook = std::function<void(Module&)>;
  // Sets `hook` on this module and its whole subtree; an empty function removes it.
  void SetForwardHook(const ForwardHook& hook);
  // This module's own parameters (not its children's), in registration order.
  std::vector<Parameter*> OwnParameters();

 protected:
  // Registration: `name` must be unique within this module and contain no '.'.
  Parameter* RegisterParameter(const std::string& name, Tensor init);
  Tensor* RegisterBuffer(const std::string& name, Tensor init);
  template <typename M>
  M* RegisterModule(const std::string& name, std::unique_ptr<M> m) {
    M* raw = m.get();
    AddChild(name, std::move(m));
    return raw;
  }
  // Called when Train() changes the mode (propagation to children is done by Train()).
  virtual void OnTrainModeChanged() {}
  // Layers that own parameters call this first thing in Forward (see SetForwardHook).
  void RunForwardHook() {
    if (forward_hook_) forward_hook_(*this);
  }

 private:
  void AddChild(const std::string& name, std::unique_ptr<Module> m);
  void Collect(const std::string& prefix, std::vector<Parameter*>* params,
               std::vector<std::pair<std::string, Tensor*>>* buffers);
  void SummaryLines(const std::string& prefix, int depth, std::string* out);

  bool training_ = true;
  ForwardHook forward_hook_;
  void PrefixKeys(const std::string& prefix);  // applied to a child's subtree by AddChild

  std::vector<std::unique_ptr<Parameter>> params_;                        // keys: full keys
  std::vector<std::pair<std::string, std::unique_ptr<Tensor>>> buffers_;  // names: full names
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
};

}  // namespace geomx::nn
