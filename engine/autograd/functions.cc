// Differentiable operations. Each forward runs engine/ops.h and, when recording, attaches a Node whose Backward
// applies the gradient rule. Nodes read their inputs' tensors through inputs() (held until the backward pass
// releases them) and keep only what the inputs do not provide (outputs, workspaces, masks, parameters).
#include "engine/autograd/functions.h"

#include <cmath>
#include <utility>
#include <vector>

#include "engine/backend_registry.h"
#include "engine/base/check.h"
#include "engine/ops.h"

namespace geomx::autograd {

namespace {

// Base for the nodes below: NeedsGrad(i) tells whether input i wants a gradient (others are skipped).
class FunctionNode : public Node {
 protected:
  bool NeedsGrad(size_t i) { return i < inputs().size() && inputs()[i].requires_grad(); }
  const Tensor& In(size_t i) { return inputs()[i].data(); }
};

// Sums `g` (shaped like the output) down to `shape`, undoing the broadcasts ops::Binary allows for its second
// operand: same shape (identity), one element (sum of everything), or [C] over the last dimension.
Tensor ReduceToShape(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (shape.numel() == 1) return ops::Sum(g).Reshape(shape);
  return ops::Reduce(ReduceOp::kSum, g, 0, g.rank() - 1);
}

// Per-channel sum of an [N, C, H, W] or [N, C] tensor -> [C].
Tensor ChannelSum(const Tensor& t) {
  const Tensor nc = t.rank() == 4 ? ops::Reduce(ReduceOp::kSum, t, 2, 4) : t;
  return ops::Reduce(ReduceOp::kSum, nc, 0, 1);
}

// ---- linear algebra ----

class MatMulNode final : public FunctionNode {
 public:
  const char* name() const override { return "MatMul"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    std::vector<Tensor> g(2);
    if (NeedsGrad(0)) g[0] = ops::MatMul(dy, In(1), false, true);  // dA = dY B^T
    if (NeedsGrad(1)) g[1] = ops::MatMul(In(0), dy, true, false);  // dB = A^T dY
    return g;
  }
};

class LinearNode final : public FunctionNode {
 public:
  const char* name() const override { return "Linear"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    std::vector<Tensor> g(3);
    if (NeedsGrad(0)) g[0] = ops::MatMul(dy, In(1));              // dx [N,I] = dy [N,O] w [O,I]
    if (NeedsGrad(1)) g[1] = ops::MatMul(dy, In(0), true, false);  // dw [O,I] = dy^T x
    if (NeedsGrad(2)) g[2] = ops::Reduce(ReduceOp::kSum, dy, 0, 1);
    return g;
  }
};

// ---- convolution, pooling, normalisation ----

class Conv2dNode final : public FunctionNode {
 public:
  explicit Conv2dNode(const Conv2dParams& p) : p_(p) {}
  const char* name() const override { return "Conv2d"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    std::vector<Tensor> g(3);
    if (NeedsGrad(0)) g[0] = ops::Conv2dBackwardData(dy, In(1), In(0).shape(), p_);
    if (NeedsGrad(1) || NeedsGrad(2)) {
      auto [dw, db] = ops::Conv2dBackwardFilter(In(0), dy, In(1).shape(), NeedsGrad(2), p_);
      if (NeedsGrad(1)) g[1] = std::move(dw);
      g[2] = std::move(db);
    }
    return g;
  }

 private:
  Conv2dParams p_;
};

class Pool2dNode final : public FunctionNode {
 public:
  Pool2dNode(const Pool2dParams& p, Tensor workspace) : p_(p), workspace_(std::move(workspace)) {}
  const char* name() const override { return "Pool2d"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    return {ops::Pool2dBackward(In(0), dy, workspace_, p_)};
  }

 private:
  Pool2dParams p_;
  Tensor workspace_;
};

class RnnNode final : public FunctionNode {
 public:
  RnnNode(const RnnParams& p, Tensor workspace) : p_(p), workspace_(std::move(workspace)) {}
  const char* name() const override { return p_.cell == RnnCell::kLstm ? "Lstm" : "Gru"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    ops::RnnGrads r = ops::RnnBackward(In(0), In(1), In(2), In(3), dy, workspace_, p_);
    return {std::move(r.dx), std::move(r.dw_ih), std::move(r.dw_hh), std::move(r.db)};
  }

 private:
  RnnParams p_;
  Tensor workspace_;
};

class BatchNormTrainingNode final : public FunctionNode {
 public:
  BatchNormTrainingNode(const BatchNormParams& p, Tensor save_mean, Tensor save_var)
      : p_(p), save_mean_(std::move(save_mean)), save_var_(std::move(save_var)) {}
  const char* name() const override { return "BatchNorm"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    ops::BatchNormGrads r = ops::BatchNormBackward(In(0), In(1), save_mean_, save_var_, dy, p_);
    return {std::move(r.dx), std::move(r.dgamma), std::move(r.dbeta)};
  }

 private:
  BatchNormParams p_;
  Tensor save_mean_, save_var_;
};

// Evaluation-mode batch norm is a per-channel affine map y = gamma*xhat + beta with xhat = (x-mean)/sqrt(var+eps)
// from the running statistics; its gradients reuse the inference kernel: dx = BN(dy; gamma, 0, mean 0, var).
class BatchNormInferenceNode final : public FunctionNode {
 public:
  BatchNormInferenceNode(const BatchNormParams& p, Tensor running_mean, Tensor running_var)
      : p_(p), mean_(std::move(running_mean)), var_(std::move(running_var)) {}
  const char* name() const override { return "BatchNormInference"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    std::vector<Tensor> g(3);
    const Tensor zeros = Tensor::Zeros(mean_.shape(), DType::kF32, mean_.device());
    if (NeedsGrad(0)) g[0] = ops::BatchNormInference(dy, In(1), zeros, zeros, var_, p_);
    if (NeedsGrad(1)) {
      const Tensor ones = Tensor::Full(mean_.shape(), 1.0f, DType::kF32, mean_.device());
      const Tensor xhat = ops::BatchNormInference(In(0), ones, zeros, mean_, var_, p_);
      g[1] = ChannelSum(ops::Mul(dy, xhat));
    }
    if (NeedsGrad(2)) g[2] = ChannelSum(dy);
    return g;
  }

 private:
  BatchNormParams p_;
  Tensor mean_, var_;
};

// ---- activations, softmax, dropout, shapes ----

class ActivationNode final : public FunctionNode {
 public:
  ActivationNode(ActivationKind k, Tensor y) : k_(k), y_(std::move(y)) {}
  const char* name() const override { return "Activation"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    return {ops::ActivationBackward(k_, In(0), y_, dy)};
  }

 private:
  ActivationKind k_;
  Tensor y_;
};

class SoftmaxNode final : public FunctionNode {
 public:
  SoftmaxNode(bool log, Tensor y) : log_(log), y_(std::move(y)) {}
  const char* name() const override { return log_ ? "LogSoftmax" : "Softmax"; }
  std::vector<Tensor> Backward(const Tensor& dy) override { return {ops::SoftmaxBackward(log_, y_, dy)}; }

 private:
  bool log_;
  Tensor y_;
};

class MaskScaleNode final : public FunctionNode {
 public:
  MaskScaleNode(Tensor mask, float scale) : mask_(std::move(mask)), scale_(scale) {}
  const char* name() const override { return "Dropout"; }
  std::vector<Tensor> Backward(const Tensor& dy) override { return {ops::MaskScale(dy, mask_, scale_)}; }

 private:
  Tensor mask_;
  float scale_;
};

class ReshapeNode final : public FunctionNode {
 public:
  const char* name() const override { return "Reshape"; }
  std::vector<Tensor> Backward(const Tensor& dy) override { return {dy.Reshape(In(0).shape())}; }
};

// Concat's gradient: dy sliced back into the inputs' extents along dim.
class ConcatNode final : public FunctionNode {
 public:
  explicit ConcatNode(int dim) : dim_(dim) {}
  const char* name() const override { return "Concat"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    std::vector<Tensor> g(inputs().size());
    int64_t at = 0;
    for (size_t i = 0; i < inputs().size(); ++i) {
      const int64_t len = In(i).shape().dims()[static_cast<size_t>(dim_)];
      if (NeedsGrad(i)) g[i] = ops::Slice(dy, dim_, at, len);
      at += len;
    }
    return g;
  }

 private:
  int dim_;  // non-negative
};

// Embedding's gradient: row-sparse for the table, handed over through TakeRowSparseGrad; the indices are data.
class EmbeddingNode final : public FunctionNode {
 public:
  explicit EmbeddingNode(Tensor indices) : indices_(std::move(indices)) {}
  const char* name() const override { return "Embedding"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    Result<RowSparseTensor> g = ops::EmbeddingBackward(dy, indices_, In(0).dim(0));
    GEOMX_CHECK_OK(g.status());  // the forward checked these indices: a failure here is a broken invariant
    grad_ = std::move(g).value();
    return {Tensor()};
  }
  RowSparseTensor TakeRowSparseGrad(size_t input) override {
    return input == 0 ? std::exchange(grad_, RowSparseTensor()) : RowSparseTensor();
  }

 private:
  Tensor indices_;
  RowSparseTensor grad_;  // from Backward until taken
};

// CropAndResize's gradient: dy scattered back onto x with the bilinear weights (boxes get none).
class CropAndResizeNode final : public FunctionNode {
 public:
  CropAndResizeNode(Tensor boxes, Tensor box_index, const CropAndResizeParams& p)
      : boxes_(std::move(boxes)), box_index_(std::move(box_index)), p_(p) {}
  const char* name() const override { return "CropAndResize"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    Result<Tensor> dx = ops::CropAndResizeBackward(dy, boxes_, box_index_, In(0).shape(), p_);
    GEOMX_CHECK_OK(dx.status());  // the forward checked these boxes
    return {std::move(dx).value()};
  }

 private:
  Tensor boxes_, box_index_;
  CropAndResizeParams p_;
};

// Slice's gradient: zeros shaped like the input with dy written at the sliced extent.
class SliceNode final : public FunctionNode {
 public:
  SliceNode(int dim, int64_t start) : dim_(dim), start_(start) {}
  const char* name() const override { return "Slice"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    Tensor dx = Tensor::Zeros(In(0).shape(), DType::kF32, dy.device());
    ops::CopyIntoSlice(dy, &dx, dim_, start_);
    return {dx};
  }

 private:
  int dim_;
  int64_t start_;
};

// ---- elementwise ----

// a + sign*b with ops::Binary's broadcasting of b.
class AddSubNode final : public FunctionNode {
 public:
  explicit AddSubNode(bool subtract) : subtract_(subtract) {}
  const char* name() const override { return subtract_ ? "Sub" : "Add"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    std::vector<Tensor> g(2);
    if (NeedsGrad(0)) g[0] = dy;
    if (NeedsGrad(1)) {
      Tensor db = ReduceToShape(dy, In(1).shape());
      g[1] = subtract_ ? ops::Unary(UnaryOp::kNeg, db) : db;
    }
    return g;
  }

 private:
  bool subtract_;
};

class MulNode final : public FunctionNode {
 public:
  const char* name() const override { return "Mul"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    std::vector<Tensor> g(2);
    if (NeedsGrad(0)) g[0] = ops::Mul(dy, In(1));
    if (NeedsGrad(1)) g[1] = ReduceToShape(ops::Mul(dy, In(0)), In(1).shape());
    return g;
  }
};

// dx = s * dy: MulScalar, and AddScalar with s = 1 (the gradient passes through).
class ScaleNode final : public FunctionNode {
 public:
  ScaleNode(const char* name, float s) : name_(name), s_(s) {}
  const char* name() const override { return name_; }
  std::vector<Tensor> Backward(const Tensor& dy) override { return {s_ == 1.0f ? dy : ops::MulScalar(dy, s_)}; }

 private:
  const char* name_;  // a string literal
  float s_;
};

class ExpNode final : public FunctionNode {
 public:
  explicit ExpNode(Tensor y) : y_(std::move(y)) {}
  const char* name() const override { return "Exp"; }
  std::vector<Tensor> Backward(const Tensor& dy) override { return {ops::Mul(dy, y_)}; }

 private:
  Tensor y_;
};

class LogNode final : public FunctionNode {
 public:
  const char* name() const override { return "Log"; }
  std::vector<Tensor> Backward(const Tensor& dy) override { return {ops::Div(dy, In(0))}; }
};

class SquareNode final : public FunctionNode {
 public:
  const char* name() const override { return "Square"; }
  std::vector<Tensor> Backward(const Tensor& dy) override { return {ops::MulScalar(ops::Mul(dy, In(0)), 2.0f)}; }
};

// Sum (scale 1) and Mean (scale 1/numel): every input element gets dy * scale.
class SumNode final : public FunctionNode {
 public:
  explicit SumNode(float scale) : scale_(scale) {}
  const char* name() const override { return "Sum"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    const Tensor& x = In(0);
    return {Tensor::Full(x.shape(), dy.item() * scale_, DType::kF32, x.device())};
  }

 private:
  float scale_;
};

// ---- losses ----

class SoftmaxCrossEntropyNode final : public FunctionNode {
 public:
  SoftmaxCrossEntropyNode(Tensor probs, Tensor labels) : probs_(std::move(probs)), labels_(std::move(labels)) {}
  const char* name() const override { return "SoftmaxCrossEntropy"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    const float scale = dy.item() / static_cast<float>(probs_.dim(0));
    return {ops::SoftmaxCrossEntropyBackward(probs_, labels_, scale)};
  }

 private:
  Tensor probs_, labels_;
};

class BinaryCrossEntropyNode final : public FunctionNode {
 public:
  explicit BinaryCrossEntropyNode(Tensor targets) : targets_(std::move(targets)) {}
  const char* name() const override { return "BinaryCrossEntropyWithLogits"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    // d/dx mean(bce) = (sigmoid(x) - t) / numel; sigmoid(x) = (1 + exp(-x))^-1 saturates cleanly to 0 and 1.
    const Tensor& x = In(0);
    const Tensor e = ops::Unary(UnaryOp::kExp, ops::Unary(UnaryOp::kNeg, x));
    const Tensor sig = ops::Unary(UnaryOp::kPowScalar, ops::AddScalar(e, 1.0f), -1.0f);
    return {ops::MulScalar(ops::Sub(sig, targets_), dy.item() / static_cast<float>(x.numel()))};
  }

 private:
  Tensor targets_;
};

class MseNode final : public FunctionNode {
 public:
  explicit MseNode(Tensor diff) : diff_(std::move(diff)) {}
  const char* name() const override { return "MseLoss"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    return {ops::MulScalar(diff_, 2.0f * dy.item() / static_cast<float>(diff_.numel()))};
  }

 private:
  Tensor diff_;
};

// d/dpred of mean(smooth_l1(pred - target)) = clamp(diff / beta, -1, 1) / n, times the upstream scalar.
class SmoothL1Node final : public FunctionNode {
 public:
  SmoothL1Node(Tensor diff, float beta) : diff_(std::move(diff)), beta_(beta) {}
  const char* name() const override { return "SmoothL1Loss"; }
  std::vector<Tensor> Backward(const Tensor& dy) override {
    const Tensor at_least_minus_one = ops::Unary(UnaryOp::kClampMin, ops::MulScalar(diff_, 1.0f / beta_), -1.0f);
    // min(v, 1) = -max(-v, -1)
    const Tensor clamped = ops::Unary(
        UnaryOp::kNeg, ops::Unary(UnaryOp::kClampMin, ops::Unary(UnaryOp::kNeg, at_least_minus_one), -1.0f));
    return {ops::MulScalar(clamped, dy.item() / static_cast<float>(diff_.numel()))};
  }

 private:
  Tensor diff_;
  float beta_;
};

template <typename NodeT, typename... Args>
std::shared_ptr<Node> Make(Args&&... args) {
  return std::make_shared<NodeT>(std::forward<Args>(args)...);
}

}  // namespace

Variable MatMul(const Variable& a, const Variable& b) {
  return MakeResult(ops::MatMul(a.data(), b.data()), Make<MatMulNode>(), {a, b});
}

Variable Linear(const Variable& x, const Variable& w, const Variable& b) {
  const Tensor bias = b.defined() ? b.data() : Tensor();
  return MakeResult(ops::Linear(x.data(), w.data(), bias), Make<LinearNode>(), {x, w, b});
}

Variable Conv2d(const Variable& x, const Variable& w, const Variable& b, const Conv2dParams& p) {
  const Tensor bias = b.defined() ? b.data() : Tensor();
  return MakeResult(ops::Conv2d(x.data(), w.data(), bias, p), Make<Conv2dNode>(p), {x, w, b});
}

Variable Rnn(const Variable& x, const Variable& w_ih, const Variable& w_hh, const Variable& b, const RnnParams& p) {
  const bool record = GradEnabled() && (x.requires_grad() || w_ih.requires_grad() || w_hh.requires_grad() ||
                                        b.requires_grad());
  ops::RnnResult r = ops::Rnn(x.data(), w_ih.data(), w_hh.data(), b.data(), p, record);
  return MakeResult(std::move(r.y), Make<RnnNode>(p, std::move(r.workspace)), {x, w_ih, w_hh, b});
}

Variable Pool2d(const Variable& x, const Pool2dParams& p) {
  ops::PoolResult r = ops::Pool2d(x.data(), p);
  return MakeResult(std::move(r.y), Make<Pool2dNode>(p, std::move(r.workspace)), {x});
}

Variable BatchNorm(const Variable& x, const Variable& gamma, const Variable& beta, Tensor* running_mean,
                   Tensor* running_var, bool training, const BatchNormParams& p) {
  GEOMX_CHECK(running_mean != nullptr && running_var != nullptr) << "BatchNorm needs running statistics";
  if (training) {
    ops::BatchNormResult r =
        ops::BatchNormTraining(x.data(), gamma.data(), beta.data(), running_mean, running_var, p);
    return MakeResult(std::move(r.y),
                      Make<BatchNormTrainingNode>(p, std::move(r.save_mean), std::move(r.save_var)),
                      {x, gamma, beta});
  }
  Tensor y = ops::BatchNormInference(x.data(), gamma.data(), beta.data(), *running_mean, *running_var, p);
  return MakeResult(std::move(y), Make<BatchNormInferenceNode>(p, *running_mean, *running_var), {x, gamma, beta});
}

Variable Activation(ActivationKind k, const Variable& x) {
  Tensor y = ops::Activation(k, x.data());
  return MakeResult(y, Make<ActivationNode>(k, y), {x});
}

Variable Softmax(const Variable& x) {
  Tensor y = ops::Softmax(x.data());
  return MakeResult(y, Make<SoftmaxNode>(false, y), {x});
}

Variable LogSoftmax(const Variable& x) {
  Tensor y = ops::LogSoftmax(x.data());
  return MakeResult(y, Make<SoftmaxNode>(true, y), {x});
}

Variable Dropout(const Variable& x, float p, bool training, Rng& rng) {
  GEOMX_CHECK(p >= 0.0f && p <= 1.0f) << "Dropout: p must be in [0, 1], got " << p;
  if (!training || p == 0.0f) return x;
  // Keep an element when a 16-bit uniform draw is >= p * 2^16: four draws per NextU64 keep mask generation
  // cheap next to the layers around it (p is honoured to 1/65536).
  const Tensor& xd = x.data();
  const size_t n = static_cast<size_t>(xd.numel());
  const uint32_t threshold = static_cast<uint32_t>(std::lround(static_cast<double>(p) * 65536.0));
  std::vector<uint8_t> keep(n);
  for (size_t i = 0; i < n; i += 4) {
    uint64_t bits = rng.NextU64();
    for (size_t j = i; j < i + 4 && j < n; ++j, bits >>= 16) keep[j] = (bits & 0xffffu) >= threshold ? 1 : 0;
  }
  Tensor mask = Tensor::Empty(xd.shape(), DType::kU8, xd.device());
  GEOMX_CHECK_OK(BackendFor(xd.device()).CopyFromHost(keep.data(), n, &mask));
  const float scale = p >= 1.0f ? 0.0f : 1.0f / (1.0f - p);
  return MakeResult(ops::MaskScale(xd, mask, scale), Make<MaskScaleNode>(mask, scale), {x});
}

Variable Reshape(const Variable& x, const Shape& shape) {
  return MakeResult(x.data().Reshape(shape), Make<ReshapeNode>(), {x});
}

Variable Flatten(const Variable& x) {
  GEOMX_CHECK_GE(x.data().rank(), 1) << "Flatten needs a batch dimension, got " << x.shape().ToString();
  return Reshape(x, Shape{x.data().dim(0), x.data().shape().numel_from(1)});
}

Variable Concat(const std::vector<Variable>& xs, int dim) {
  GEOMX_CHECK(!xs.empty()) << "Concat of no tensors";
  std::vector<Tensor> data;
  data.reserve(xs.size());
  for (const Variable& x : xs) data.push_back(x.data());
  Tensor y = ops::Concat(data, dim);  // validates dim
  const int d = dim < 0 ? dim + y.rank() : dim;
  return MakeResult(std::move(y), Make<ConcatNode>(d), xs);
}

Result<Variable> Embedding(const Variable& weight, const Tensor& indices) {
  GEOMX_ASSIGN_OR_RETURN(Tensor y, ops::EmbeddingLookup(weight.data(), indices));
  return MakeResult(std::move(y), Make<EmbeddingNode>(indices), {weight});
}

Result<Variable> CropAndResize(const Variable& x, const Tensor& boxes, const Tensor& box_index,
                               const CropAndResizeParams& p) {
  GEOMX_ASSIGN_OR_RETURN(Tensor y, ops::CropAndResize(x.data(), boxes, box_index, p));
  return MakeResult(std::move(y), Make<CropAndResizeNode>(boxes, box_index, p), {x});
}

Variable Slice(const Variable& x, int dim, int64_t start, int64_t length) {
  Tensor y = ops::Slice(x.data(), dim, start, length);  // validates dim and the range
  const int d = dim < 0 ? dim + y.rank() : dim;
  return MakeResult(std::move(y), Make<SliceNode>(d, start), {x});
}

Variable Add(const Variable& a, const Variable& b) {
  return MakeResult(ops::Add(a.data(), b.data()), Make<AddSubNode>(false), {a, b});
}

Variable Sub(const Variable& a, const Variable& b) {
  return MakeResult(ops::Sub(a.data(), b.data()), Make<AddSubNode>(true), {a, b});
}

Variable Mul(const Variable& a, const Variable& b) {
  return MakeResult(ops::Mul(a.data(), b.data()), Make<MulNode>(), {a, b});
}

Variable MulScalar(const Variable& x, float s) {
  return MakeResult(ops::MulScalar(x.data(), s), Make<ScaleNode>("MulScalar", s), {x});
}

Variable AddScalar(const Variable& x, float s) {
  return MakeResult(ops::AddScalar(x.data(), s), Make<ScaleNode>("AddScalar", 1.0f), {x});
}

Variable Exp(const Variable& x) {
  Tensor y = ops::Unary(UnaryOp::kExp, x.data());
  return MakeResult(y, Make<ExpNode>(y), {x});
}

Variable Log(const Variable& x) { return MakeResult(ops::Unary(UnaryOp::kLog, x.data()), Make<LogNode>(), {x}); }

Variable Square(const Variable& x) {
  return MakeResult(ops::Unary(UnaryOp::kSquare, x.data()), Make<SquareNode>(), {x});
}

Variable Sum(const Variable& x) { return MakeResult(ops::Sum(x.data()), Make<SumNode>(1.0f), {x}); }

Variable Mean(const Variable& x) {
  const float scale = 1.0f / static_cast<float>(x.data().numel());
  return MakeResult(ops::Mean(x.data()), Make<SumNode>(scale), {x});
}

Variable SoftmaxCrossEntropy(const Variable& logits, const Tensor& labels) {
  ops::CrossEntropyResult r = ops::SoftmaxCrossEntropy(logits.data(), labels);
  return MakeResult(ops::Mean(r.loss), Make<SoftmaxCrossEntropyNode>(std::move(r.probs), labels), {logits});
}

Variable BinaryCrossEntropyWithLogits(const Variable& logits, const Tensor& targets) {
  const Tensor& x = logits.data();
  GEOMX_CHECK(targets.defined() && targets.shape() == x.shape())
      << "BinaryCrossEntropyWithLogits: targets " << targets.ToString() << " for logits " << x.ToString();
  // max(x, 0) - x*t + log(1 + exp(-|x|)): never exponentiates a positive number.
  const Tensor softplus_tail = ops::Unary(
      UnaryOp::kLog,
      ops::AddScalar(ops::Unary(UnaryOp::kExp, ops::Unary(UnaryOp::kNeg, ops::Unary(UnaryOp::kAbs, x))), 1.0f));
  const Tensor per_element =
      ops::Add(ops::Sub(ops::Unary(UnaryOp::kClampMin, x, 0.0f), ops::Mul(x, targets)), softplus_tail);
  return MakeResult(ops::Mean(per_element), Make<BinaryCrossEntropyNode>(targets), {logits});
}

Variable MseLoss(const Variable& pred, const Tensor& target) {
  GEOMX_CHECK(target.defined() && target.shape() == pred.shape())
      << "MseLoss: target " << target.ToString() << " for prediction " << pred.data().ToString();
  Tensor diff = ops::Sub(pred.data(), target);
  Tensor loss = ops::Mean(ops::Unary(UnaryOp::kSquare, diff));
  return MakeResult(std::move(loss), Make<MseNode>(std::move(diff)), {pred});
}

Variable SmoothL1Loss(const Variable& pred, const Tensor& target, float beta) {
  GEOMX_CHECK(target.defined() && target.shape() == pred.shape())
      << "SmoothL1Loss: target " << target.ToString() << " for prediction " << pred.data().ToString();
  GEOMX_CHECK(beta > 0.0f) << "SmoothL1Loss: beta must be positive, got " << beta;
  Tensor diff = ops::Sub(pred.data(), target);
  // With a = |d| and m = min(a, beta): 0.5 m^2 / beta + (a - m) is 0.5 d^2 / beta below beta and
  // |d| - 0.5 beta from beta on.
  const Tensor a = ops::Unary(UnaryOp::kAbs, diff);
  const Tensor m = ops::Unary(UnaryOp::kNeg, ops::Unary(UnaryOp::kClampMin, ops::Unary(UnaryOp::kNeg, a), -beta));
  const Tensor per_element =
      ops::Add(ops::MulScalar(ops::Unary(UnaryOp::kSquare, m), 0.5f / beta), ops::Sub(a, m));
  return MakeResult(ops::Mean(per_element), Make<SmoothL1Node>(std::move(diff), beta), {pred});
}

}  // namespace geomx::autograd
