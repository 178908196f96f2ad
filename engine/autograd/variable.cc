#include "engine/autograd/variable.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/base/check.h"
#include "engine/ops.h"

namespace geomx::autograd {

namespace {

// Gradient recording mode of this thread (see the header: the one deliberate thread-local of the engine).
thread_local bool t_grad_enabled = true;

// Every node reachable from `root` through its inputs' producers, each after all of its consumers (reverse
// topological order: processing in this order sees a node only once all gradient into it has arrived). Holds
// shared_ptrs so that releasing one node's inputs cannot destroy a node still to be processed.
std::vector<std::shared_ptr<Node>> ReverseTopologicalOrder(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> post_order;
  std::unordered_set<const Node*> visited{root.get()};
  // Iterative DFS (graphs of deep networks would overflow a recursive one): (node, next input to look at).
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    auto& inputs = node->inputs();
    if (next < inputs.size()) {
      const Variable& in = inputs[next++];
      if (in.defined() && in.producer() && visited.insert(in.producer().get()).second) {
        stack.emplace_back(in.producer(), 0);  // invalidates `node`/`next`; the loop re-reads the top
      }
      continue;
    }
    post_order.push_back(std::move(node));
    stack.pop_back();
  }
  return {post_order.rbegin(), post_order.rend()};
}

// slot += g, out of place: gradients flowing through pass-through ops (Add, Reshape) share storage, so an
// in-place add could corrupt a tensor someone else still holds.
void Accumulate(Tensor* slot, const Tensor& g) { *slot = slot->defined() ? ops::Add(*slot, g) : g; }

}  // namespace

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<Impl>()) {
  impl_->data = std::move(data);
  impl_->requires_grad = requires_grad;
}

const Tensor& Variable::data() const {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::data on an undefined Variable";
  return impl_->data;
}

void Variable::set_data(Tensor t) {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::set_data on an undefined Variable";
  impl_->data = std::move(t);
}

bool Variable::requires_grad() const { return impl_ != nullptr && (impl_->requires_grad || impl_->producer); }

void Variable::set_requires_grad(bool r) {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::set_requires_grad on an undefined Variable";
  impl_->requires_grad = r;
}

const Tensor& Variable::grad() const {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::grad on an undefined Variable";
  return impl_->grad;
}

void Variable::set_grad(Tensor g) {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::set_grad on an undefined Variable";
  impl_->grad = std::move(g);
  impl_->row_sparse_grad = RowSparseTensor();
}

const RowSparseTensor& Variable::row_sparse_grad() const {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::row_sparse_grad on an undefined Variable";
  return impl_->row_sparse_grad;
}

void Variable::set_row_sparse_grad(RowSparseTensor g) {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::set_row_sparse_grad on an undefined Variable";
  impl_->row_sparse_grad = std::move(g);
  impl_->grad = Tensor();
}

GradLayout Variable::grad_layout() const { return impl_ ? impl_->grad_layout : GradLayout::kDense; }

void Variable::set_grad_layout(GradLayout layout) {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::set_grad_layout on an undefined Variable";
  impl_->grad_layout = layout;
}

void Variable::ZeroGrad() {
  if (impl_) {
    impl_->grad = Tensor();
    impl_->row_sparse_grad = RowSparseTensor();
  }
}

const std::shared_ptr<Node>& Variable::producer() const {
  static const std::shared_ptr<Node> kNone;
  return impl_ ? impl_->producer : kNone;
}

void Variable::set_producer(std::shared_ptr<Node> node) {
  GEOMX_CHECK(impl_ != nullptr) << "Variable::set_producer on an undefined Variable";
  impl_->producer = std::move(node);
}

void Variable::Backward(bool retain_graph) {
  GEOMX_CHECK_EQ(data().numel(), 1) << "Variable::Backward() without a seed needs a scalar, got "
                                    << data().shape().ToString();
  Backward(Tensor::Full(data().shape(), 1.0f, data().dtype(), data().device()), retain_graph);
}

void Variable::Backward(const Tensor& seed, bool retain_graph) {
  Backward(seed, BackwardOptions{.retain_graph = retain_graph});
}

void Variable::Backward(const Tensor& seed, const BackwardOptions& options) {
  GEOMX_CHECK(seed.defined() && seed.shape() == data().shape())
      << "Variable::Backward: seed " << seed.ToString() << " for " << data().ToString();
  // Storage already handed to a leaf's grad during this pass (plus the caller's seed): a second leaf receiving
  // the same storage gets a copy, so no two grads (and no grad and the seed) ever alias.
  std::unordered_set<const Storage*> handed_out{seed.storage().get()};
  std::unordered_set<const void*> got_gradient;  // leaves that received a gradient in this pass
  auto accumulate_leaf = [&](Variable leaf, const Tensor& g) {  // a handle copy: the impl is shared
    Tensor grad = leaf.grad();
    if (grad.defined()) {
      Accumulate(&grad, g);
    } else {
      grad = handed_out.insert(g.storage().get()).second ? g : g.Clone();
    }
    // A dense gradient next to row-sparse ones: all of it becomes dense (GradLayout). AddRowSparse is out of place.
    if (leaf.row_sparse_grad().defined()) grad = ops::AddRowSparse(grad, leaf.row_sparse_grad());
    leaf.set_grad(std::move(grad));
    got_gradient.insert(leaf.id());
  };
  // A row-sparse gradient for a leaf: kept row-sparse while the leaf asks for that and holds no dense gradient,
  // densified otherwise. The values are fresh tensors of the node that made them (never shared).
  auto accumulate_leaf_row_sparse = [&](Variable leaf, RowSparseTensor g) {
    if (leaf.grad_layout() == GradLayout::kRowSparse && !leaf.grad().defined()) {
      const RowSparseTensor& have = leaf.row_sparse_grad();
      leaf.set_row_sparse_grad(have.defined() ? ops::AddRowSparse(have, g) : std::move(g));
    } else {
      const Tensor& have = leaf.grad();
      leaf.set_grad(have.defined() ? ops::AddRowSparse(have, g) : ops::RowSparseToDense(g));
    }
    got_gradient.insert(leaf.id());
  };

  if (!impl_->producer) {
    if (impl_->requires_grad) {
      accumulate_leaf(*this, seed.Clone());
      if (options.on_leaf_done) options.on_leaf_done(*this);
    }
    return;
  }
  NoGradGuard no_grad;  // gradient rules run ops, never record them
  const std::vector<std::shared_ptr<Node>> order = ReverseTopologicalOrder(impl_->producer);
  // For on_leaf_done: how many uses (node input slots) of each leaf are still to run. A leaf is complete when its
  // count reaches zero, whether or not its last users passed it a gradient.
  std::unordered_map<const void*, size_t> uses_left;
  if (options.on_leaf_done) {
    for (const std::shared_ptr<Node>& node : order) {
      for (const Variable& in : node->inputs()) {
        if (in.defined() && !in.producer() && in.requires_grad()) ++uses_left[in.id()];
      }
    }
  }
  auto used = [&](const Variable& in) {  // one use of `in` has run
    if (!options.on_leaf_done || !in.defined() || in.producer() || !in.requires_grad()) return;
    auto it = uses_left.find(in.id());
    if (--it->second == 0 && got_gradient.count(in.id())) options.on_leaf_done(in);
  };
  std::unordered_map<const Node*, Tensor> grads;  // d(output of node) / d(root), as it accumulates
  grads[impl_->producer.get()] = seed;
  for (const std::shared_ptr<Node>& node : order) {
    auto it = grads.find(node.get());
    if (it == grads.end()) {  // no gradient reached this node (its consumers did not need it)
      for (const Variable& in : node->inputs()) used(in);
      continue;
    }
    const Tensor grad_out = std::move(it->second);
    grads.erase(it);
    // Recorded nodes always have inputs (MakeResult attaches them only then): none left means a previous
    // Backward already released this graph.
    GEOMX_CHECK(!node->inputs().empty()) << "Backward through " << node->name()
                                         << ": the graph was already released by an earlier Backward (pass "
                                            "retain_graph = true to back-propagate twice)";
    const std::vector<Tensor> in_grads = node->Backward(grad_out);
    const std::vector<Variable>& inputs = node->inputs();
    GEOMX_CHECK_EQ(in_grads.size(), inputs.size()) << node->name() << "::Backward returned a wrong count";
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Variable& in = inputs[i];
      if (!in.requires_grad()) continue;
      if (!in_grads[i].defined()) {
        RowSparseTensor sparse = node->TakeRowSparseGrad(i);
        if (!sparse.defined()) continue;
        GEOMX_CHECK(sparse.dense_shape() == in.shape())
            << node->name() << "::TakeRowSparseGrad: gradient " << sparse.dense_shape().ToString() << " for input "
            << i << " of shape " << in.shape().ToString();
        if (in.producer()) {
          Accumulate(&grads[in.producer().get()], ops::RowSparseToDense(sparse));
        } else {
          accumulate_leaf_row_sparse(in, std::move(sparse));
        }
        continue;
      }
      GEOMX_CHECK(in_grads[i].shape() == in.shape())
          << node->name() << "::Backward: gradient " << in_grads[i].shape().ToString() << " for input " << i
          << " of shape " << in.shape().ToString();
      if (in.producer()) {
        Accumulate(&grads[in.producer().get()], in_grads[i]);
      } else {
        accumulate_leaf(in, in_grads[i]);
      }
    }
    for (const Variable& in : inputs) used(in);
    if (!options.retain_graph) node->ReleaseInputs();
  }
}

bool GradEnabled() { return t_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }

NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

Variable MakeResult(Tensor out, std::shared_ptr<Node> node, std::vector<Variable> inputs) {
  Variable result(std::move(out));
  if (!GradEnabled()) return result;
  bool any = false;
  for (const Variable& v : inputs) any = any || v.requires_grad();
  if (!any) return result;
  node->set_inputs(std::move(inputs));
  result.set_producer(std::move(node));
  return result;
}

}  // namespace geomx::autograd
