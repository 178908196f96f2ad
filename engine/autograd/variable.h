// Reverse-mode autograd. A Variable is a handle (shared) to a tensor, its gradient and the Node that produced it.
// Backward() walks producers in reverse topological order and accumulates into each leaf's grad.
//
// Ownership: Variables share their impl (copying a Variable aliases it). A Node holds its input Variables, so a
// graph lives as long as its output; Backward() releases the graph (nodes drop their inputs) unless
// retain_graph. Thread-safety: a graph is used by one thread; different threads may build different graphs.
// Gradient recording is on unless a NoGradGuard is alive on the current thread (thread-local mode, the one
// deliberate thread-local in the engine: it is scoped and never configured from outside).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/row_sparse_tensor.h"
#include "engine/tensor.h"

namespace geomx::autograd {

class Node;
class Variable;

// How a leaf keeps gradients that arrive row-sparse (the table of Embedding, functions.h). Every other gradient is
// dense and lands in grad() whatever the layout.
enum class GradLayout : uint8_t {
  // Densified on arrival: grad() is a [V, D] tensor. What Optimizer::Step, gradient clipping and the trainer's
  // parameter sync read; the default.
  kDense,
  // Kept in row_sparse_grad() (the touched rows, summed over uses and backward passes) for code that pushes rows
  // itself (a row-sparse parameter-server key). If a dense gradient reaches the leaf too (the table also used by
  // a dense op), everything accumulated is moved into grad() and row_sparse_grad() becomes undefined.
  kRowSparse,
};

struct BackwardOptions {
  bool retain_graph = false;
  // Called once for every leaf that requires grad and receives a gradient, as soon as that gradient is complete
  // (every node of the graph that uses the leaf has run), while the rest of the backward pass still runs: leaves
  // used near the output come first. The leaf's grad() (or row_sparse_grad()) is final when it is called. Used to
  // start sending a layer's gradient before the earlier layers' backward has run (P3, docs/accelerators.md).
  std::function<void(const Variable& leaf)> on_leaf_done;
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const;
  // Replaces the data in place (parameters being updated); keeps grad and identity.
  void set_data(Tensor t);
  const Shape& shape() const { return data().shape(); }
  bool requires_grad() const;
  void set_requires_grad(bool r);
  // The accumulated dense gradient (undefined until a backward reaches this variable).
  const Tensor& grad() const;
  void set_grad(Tensor g);  // also clears row_sparse_grad()
  // The accumulated row-sparse gradient of a kRowSparse leaf (see GradLayout); undefined otherwise. At most one of
  // grad() and row_sparse_grad() is defined.
  const RowSparseTensor& row_sparse_grad() const;
  void set_row_sparse_grad(RowSparseTensor g);  // also clears grad()
  GradLayout grad_layout() const;
  void set_grad_layout(GradLayout layout);
  void ZeroGrad();  // makes both gradients undefined (cheap; the next accumulation allocates)

  // Seeds d(this)/d(this) = 1 (this must have numel 1) and back-propagates.
  void Backward(bool retain_graph = false);
  // Back-propagates with an explicit seed of this variable's shape.
  void Backward(const Tensor& seed, bool retain_graph = false);
  void Backward(const Tensor& seed, const BackwardOptions& options);

  // The producing node (null for leaves and for results computed without grad).
  const std::shared_ptr<Node>& producer() const;
  void set_producer(std::shared_ptr<Node> node);
  // Identity (for graph bookkeeping and tests).
  const void* id() const { return impl_.get(); }

 private:
  struct Impl {
    Tensor data;
    Tensor grad;
    RowSparseTensor row_sparse_grad;
    GradLayout grad_layout = GradLayout::kDense;
    bool requires_grad = false;
    std::shared_ptr<Node> producer;
  };
  std::shared_ptr<Impl> impl_;
};

// One recorded operation. Subclasses implement Backward: given d(out) return d(input_i) for every input (an
// undefined Tensor for inputs that do not need a gradient).
class Node {
 public:
  virtual ~Node() = default;
  virtual std::vector<Tensor> Backward(const Tensor& grad_output) = 0;
  virtual const char* name() const = 0;
  // A node whose gradient for an input is row-sparse (Embedding's table) leaves that input's slot of Backward's
  // result undefined and hands the gradient over here; the engine asks right after Backward, once per input whose
  // slot is undefined. The engine delivers it to a leaf by its GradLayout and densifies it for anything else.
  virtual RowSparseTensor TakeRowSparseGrad(size_t input) {
    (void)input;
    return {};
  }

  std::vector<Variable>& inputs() { return inputs_; }
  void set_inputs(std::vector<Variable> inputs) { inputs_ = std::move(inputs); }
  void ReleaseInputs() { inputs_.clear(); }

 private:
  std::vector<Variable> inputs_;
};

// True while gradients are being recorded on this thread.
bool GradEnabled();

// Disables recording in its scope (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Helper for function implementations: wraps `out` in a Variable and, when recording and any input requires
// grad, attaches `node` with those inputs.
Variable MakeResult(Tensor out, std::shared_ptr<Node> node, std::vector<Variable> inputs);

}  // namespace geomx::autograd
