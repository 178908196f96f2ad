// ops: validation (GEOMX_CHECK: a mismatch is a programmer error), output allocation on the inputs' device, and
// dispatch to the backend. No math here.
#include "engine/ops.h"

#include <string>

#include "engine/base/check.h"
#include "engine/ops_checks.h"

namespace geomx::ops {

namespace {

// [N, C, H, W] or [N, C]: the layouts batch norm accepts.
void CheckBatchNormInput(const char* op, const Tensor& x) {
  CheckF32(op, x, "x");
  GEOMX_CHECK(x.rank() == 4 || x.rank() == 2) << op << " expects [N, C, H, W] or [N, C], got "
                                              << x.shape().ToString();
}

// A per-channel parameter of batch norm: f32 [C] on x's device.
void CheckChannelVector(const char* op, const Tensor& x, const Tensor& v, const char* name) {
  CheckF32(op, v, name);
  CheckSameDevice(op, x, v);
  CheckShape(op, v, Shape{x.dim(1)}, name);
}

}  // namespace

// ---- creation / movement ----

void Fill(Tensor* t, float value) {
  CheckDefined("Fill", *t, "t");
  GEOMX_CHECK_OK(BackendOf(*t).Fill(value, t));
}

Tensor Cast(const Tensor& x, DType dtype) {
  CheckDefined("Cast", x, "x");
  Tensor out = Tensor::Empty(x.shape(), dtype, x.device());
  GEOMX_CHECK_OK(BackendOf(x).Cast(x, &out));
  return out;
}

void Copy(const Tensor& src, Tensor* dst) { dst->CopyFrom(src); }

// ---- concatenation / slicing ----

namespace {

int NormalizeDim(const char* op, const Tensor& t, int dim) {
  GEOMX_CHECK(t.rank() >= 1) << op << " needs a tensor of rank >= 1, got " << t.ToString();
  const int d = dim < 0 ? dim + t.rank() : dim;
  GEOMX_CHECK(0 <= d && d < t.rank()) << op << ": dim " << dim << " out of range for " << t.ToString();
  return d;
}

// A tensor seen as [outer, t.dim(d), inner]: `outer` rows of t.dim(d) * inner_bytes contiguous bytes.
struct Blocks {
  int64_t outer = 1;
  size_t inner_bytes = 0;
};

Blocks BlocksAround(const Tensor& t, int d) {
  Blocks b;
  for (int i = 0; i < d; ++i) b.outer *= t.dim(i);
  b.inner_bytes = static_cast<size_t>(t.shape().numel_from(d + 1)) * SizeOf(t.dtype());
  return b;
}

// `want` must equal `t` in every dimension but d.
void CheckSameBut(const char* op, const Tensor& t, const Tensor& want, int d) {
  bool ok = t.rank() == want.rank() && t.dtype() == want.dtype();
  for (int i = 0; ok && i < t.rank(); ++i) ok = i == d || t.dim(i) == want.dim(i);
  GEOMX_CHECK(ok) << op << ": " << t.ToString() << " does not match " << want.ToString() << " outside dim " << d;
  CheckSameDevice(op, t, want);
}

}  // namespace

void CopyIntoSlice(const Tensor& src, Tensor* dst, int dim, int64_t start) {
  CheckDefined("CopyIntoSlice", src, "src");
  CheckDefined("CopyIntoSlice", *dst, "dst");
  const int d = NormalizeDim("CopyIntoSlice", *dst, dim);
  CheckSameBut("CopyIntoSlice", src, *dst, d);
  const int64_t len = src.dim(d);
  GEOMX_CHECK(start >= 0 && start <= dst->dim(d) - len)
      << "CopyIntoSlice: [" << start << ", " << start + len << ") outside dim " << d << " of " << dst->ToString();
  GEOMX_CHECK(!src.SharesStorageWith(*dst)) << "CopyIntoSlice: src and dst share storage";
  const Blocks b = BlocksAround(*dst, d);
  const size_t row = static_cast<size_t>(len) * b.inner_bytes;
  GEOMX_CHECK_OK(BackendOf(src).CopyBlocks(src, dst, b.outer, row, row,
                                           static_cast<size_t>(dst->dim(d)) * b.inner_bytes, 0,
                                           static_cast<size_t>(start) * b.inner_bytes));
}

Tensor Slice(const Tensor& x, int dim, int64_t start, int64_t length) {
  CheckDefined("Slice", x, "x");
  const int d = NormalizeDim("Slice", x, dim);
  GEOMX_CHECK(start >= 0 && length >= 0 && start <= x.dim(d) - length)
      << "Slice: [" << start << ", " << start + length << ") outside dim " << d << " of " << x.ToString();
  std::vector<int64_t> dims = x.shape().dims();
  dims[static_cast<size_t>(d)] = length;
  Tensor out = Tensor::Empty(Shape(std::move(dims)), x.dtype(), x.device());
  const Blocks b = BlocksAround(x, d);
  const size_t row = static_cast<size_t>(length) * b.inner_bytes;
  GEOMX_CHECK_OK(BackendOf(x).CopyBlocks(x, &out, b.outer, row, static_cast<size_t>(x.dim(d)) * b.inner_bytes, row,
                                         static_cast<size_t>(start) * b.inner_bytes, 0));
  return out;
}

Tensor Concat(const std::vector<Tensor>& xs, int dim) {
  GEOMX_CHECK(!xs.empty()) << "Concat of no tensors";
  CheckDefined("Concat", xs[0], "xs[0]");
  const int d = NormalizeDim("Concat", xs[0], dim);
  int64_t total = 0;
  for (const Tensor& x : xs) {
    CheckDefined("Concat", x, "xs[i]");
    CheckSameBut("Concat", x, xs[0], d);
    total += x.dim(d);
  }
  std::vector<int64_t> dims = xs[0].shape().dims();
  dims[static_cast<size_t>(d)] = total;
  Tensor out = Tensor::Empty(Shape(std::move(dims)), xs[0].dtype(), xs[0].device());
  int64_t at = 0;
  for (const Tensor& x : xs) {
    CopyIntoSlice(x, &out, d, at);
    at += x.dim(d);
  }
  return out;
}

// ---- linear algebra ----

Tensor MatMul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  CheckF32("MatMul", a, "a");
  CheckF32("MatMul", b, "b");
  CheckSameDevice("MatMul", a, b);
  GEOMX_CHECK(a.rank() == 2 && b.rank() == 2)
      << "MatMul expects 2-D operands, got " << a.shape().ToString() << " and " << b.shape().ToString();
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t ka = trans_a ? a.dim(0) : a.dim(1);
  const int64_t kb = trans_b ? b.dim(1) : b.dim(0);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  GEOMX_CHECK_EQ(ka, kb) << "MatMul: inner dimensions differ: " << a.shape().ToString()
                         << (trans_a ? "^T" : "") << " x " << b.shape().ToString() << (trans_b ? "^T" : "");
  Tensor c = Tensor::Empty({m, n}, DType::kF32, a.device());
  GEOMX_CHECK_OK(BackendOf(a).MatMul(a, trans_a, b, trans_b, /*accumulate=*/false, &c));
  return c;
}

Tensor Linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  CheckF32("Linear", x, "x");
  CheckF32("Linear", w, "w");
  CheckSameDevice("Linear", x, w);
  GEOMX_CHECK(x.rank() == 2 && w.rank() == 2)
      << "Linear expects x [N, I] and w [O, I], got " << x.shape().ToString() << " and " << w.shape().ToString();
  GEOMX_CHECK_EQ(x.dim(1), w.dim(1)) << "Linear: x " << x.shape().ToString() << " vs w " << w.shape().ToString();
  if (b.defined()) {
    CheckF32("Linear", b, "b");
    CheckSameDevice("Linear", x, b);
    CheckShape("Linear", b, Shape{w.dim(0)}, "b");
  }
  Tensor y = Tensor::Empty({x.dim(0), w.dim(0)}, DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).LinearForward(x, w, b.defined() ? &b : nullptr, &y));
  return y;
}

// ---- convolution ----

Shape Conv2dOutputShape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  GEOMX_CHECK(x.rank() == 4 && w.rank() == 4)
      << "Conv2d expects x NCHW and w OIHW, got " << x.ToString() << " and " << w.ToString();
  GEOMX_CHECK_EQ(x[1], w[1]) << "Conv2d: input channels of x " << x.ToString() << " and w " << w.ToString();
  GEOMX_CHECK(p.stride_h > 0 && p.stride_w > 0 && p.dilation_h > 0 && p.dilation_w > 0 && p.pad_h >= 0 &&
              p.pad_w >= 0)
      << "Conv2d: strides and dilations must be positive, padding non-negative";
  const int64_t eff_kh = int64_t{p.dilation_h} * (w[2] - 1) + 1;
  const int64_t eff_kw = int64_t{p.dilation_w} * (w[3] - 1) + 1;
  const int64_t oh = (x[2] + 2 * p.pad_h - eff_kh) / p.stride_h + 1;
  const int64_t ow = (x[3] + 2 * p.pad_w - eff_kw) / p.stride_w + 1;
  GEOMX_CHECK(x[2] + 2 * p.pad_h >= eff_kh && x[3] + 2 * p.pad_w >= eff_kw && oh > 0 && ow > 0)
      << "Conv2d: kernel " << w.ToString() << " larger than the padded input " << x.ToString();
  return Shape{x[0], w[0], oh, ow};
}

Tensor Conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  CheckF32("Conv2d", x, "x");
  CheckF32("Conv2d", w, "w");
  CheckSameDevice("Conv2d", x, w);
  const Shape out_shape = Conv2dOutputShape(x.shape(), w.shape(), p);
  if (b.defined()) {
    CheckF32("Conv2d", b, "b");
    CheckSameDevice("Conv2d", x, b);
    CheckShape("Conv2d", b, Shape{w.dim(0)}, "b");
  }
  Tensor y = Tensor::Empty(out_shape, DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).Conv2dForward(p, x, w, b.defined() ? &b : nullptr, &y));
  return y;
}

Tensor Conv2dBackwardData(const Tensor& dy, const Tensor& w, const Shape& x_shape, const Conv2dParams& p) {
  CheckF32("Conv2dBackwardData", dy, "dy");
  CheckF32("Conv2dBackwardData", w, "w");
  CheckSameDevice("Conv2dBackwardData", dy, w);
  CheckShape("Conv2dBackwardData", dy, Conv2dOutputShape(x_shape, w.shape(), p), "dy");
  Tensor dx = Tensor::Empty(x_shape, DType::kF32, dy.device());
  GEOMX_CHECK_OK(BackendOf(dy).Conv2dBackwardData(p, dy, w, &dx));
  return dx;
}

std::pair<Tensor, Tensor> Conv2dBackwardFilter(const Tensor& x, const Tensor& dy, const Shape& w_shape,
                                               bool with_bias, const Conv2dParams& p) {
  CheckF32("Conv2dBackwardFilter", x, "x");
  CheckF32("Conv2dBackwardFilter", dy, "dy");
  CheckSameDevice("Conv2dBackwardFilter", x, dy);
  CheckShape("Conv2dBackwardFilter", dy, Conv2dOutputShape(x.shape(), w_shape, p), "dy");
  Tensor dw = Tensor::Empty(w_shape, DType::kF32, x.device());
  Tensor db;
  if (with_bias) db = Tensor::Empty({w_shape[0]}, DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).Conv2dBackwardFilter(p, x, dy, &dw, with_bias ? &db : nullptr));
  return {std::move(dw), std::move(db)};
}

// ---- pooling ----

Shape Pool2dOutputShape(const Shape& x, const Pool2dParams& p) {
  GEOMX_CHECK_EQ(x.rank(), 4) << "Pool2d expects NCHW, got " << x.ToString();
  GEOMX_CHECK(p.kernel_h > 0 && p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0)
      << "Pool2d: kernel and stride must be positive";
  GEOMX_CHECK(p.pad_h >= 0 && p.pad_w >= 0 && 2 * p.pad_h <= p.kernel_h && 2 * p.pad_w <= p.kernel_w)
      << "Pool2d: padding must be in [0, kernel/2]";
  const int64_t oh = (x[2] + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
  const int64_t ow = (x[3] + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
  GEOMX_CHECK(x[2] + 2 * p.pad_h >= p.kernel_h && x[3] + 2 * p.pad_w >= p.kernel_w)
      << "Pool2d: window " << p.kernel_h << "x" << p.kernel_w << " larger than the padded input " << x.ToString();
  return Shape{x[0], x[1], oh, ow};
}

PoolResult Pool2d(const Tensor& x, const Pool2dParams& p) {
  CheckF32("Pool2d", x, "x");
  PoolResult r;
  r.y = Tensor::Empty(Pool2dOutputShape(x.shape(), p), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).Pool2dForward(p, x, &r.y, &r.workspace));
  return r;
}

Tensor Pool2dBackward(const Tensor& x, const Tensor& dy, const Tensor& workspace, const Pool2dParams& p) {
  CheckF32("Pool2dBackward", x, "x");
  CheckF32("Pool2dBackward", dy, "dy");
  CheckSameDevice("Pool2dBackward", x, dy);
  CheckShape("Pool2dBackward", dy, Pool2dOutputShape(x.shape(), p), "dy");
  Tensor dx = Tensor::Empty(x.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).Pool2dBackward(p, x, dy, workspace, &dx));
  return dx;
}

// ---- recurrent ----

namespace {

// x [N, T, I], w_ih [G*H, I], w_hh [G*H, H], b [BiasBlocks*H] (op_params.h RnnParams), all f32 on x's device.
// Returns the output shape.
Shape CheckRnn(const char* op, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b,
               const RnnParams& p) {
  CheckF32(op, x, "x");
  CheckF32(op, w_ih, "w_ih");
  CheckF32(op, w_hh, "w_hh");
  CheckF32(op, b, "b");
  const int64_t g = RnnGates(p.cell);
  GEOMX_CHECK(x.rank() == 3) << op << ": x must be [N, T, I], got " << x.shape().ToString();
  GEOMX_CHECK(w_hh.rank() == 2 && w_hh.dim(1) > 0 && w_hh.dim(0) == g * w_hh.dim(1))
      << op << ": w_hh must be [" << g << "H, H], got " << w_hh.shape().ToString();
  const int64_t h = w_hh.dim(1);
  CheckShape(op, w_ih, Shape{g * h, x.dim(2)}, "w_ih");
  CheckShape(op, b, Shape{RnnBiasBlocks(p.cell) * h}, "b");
  CheckSameDevice(op, x, w_ih);
  CheckSameDevice(op, x, w_hh);
  CheckSameDevice(op, x, b);
  return p.sequences ? Shape{x.dim(0), x.dim(1), h} : Shape{x.dim(0), h};
}

}  // namespace

RnnResult Rnn(const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b, const RnnParams& p,
                bool training) {
  RnnResult r;
  r.y = Tensor::Empty(CheckRnn("Rnn", x, w_ih, w_hh, b, p), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).RnnForward(p, x, w_ih, w_hh, b, &r.y, training ? &r.workspace : nullptr));
  return r;
}

RnnGrads RnnBackward(const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b, const Tensor& dy,
                       const Tensor& workspace, const RnnParams& p) {
  const char* op = "RnnBackward";
  const Shape y_shape = CheckRnn(op, x, w_ih, w_hh, b, p);
  CheckF32(op, dy, "dy");
  CheckSameDevice(op, x, dy);
  CheckShape(op, dy, y_shape, "dy");
  RnnGrads g;
  g.dx = Tensor::Empty(x.shape(), DType::kF32, x.device());
  g.dw_ih = Tensor::Empty(w_ih.shape(), DType::kF32, x.device());
  g.dw_hh = Tensor::Empty(w_hh.shape(), DType::kF32, x.device());
  g.db = Tensor::Empty(b.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).RnnBackward(p, x, w_ih, w_hh, b, dy, workspace, &g.dx, &g.dw_ih, &g.dw_hh, &g.db));
  return g;
}

// ---- batch norm ----

BatchNormResult BatchNormTraining(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor* running_mean,
                                  Tensor* running_var, const BatchNormParams& p) {
  const char* op = "BatchNormTraining";
  CheckBatchNormInput(op, x);
  CheckChannelVector(op, x, gamma, "gamma");
  CheckChannelVector(op, x, beta, "beta");
  CheckChannelVector(op, x, *running_mean, "running_mean");
  CheckChannelVector(op, x, *running_var, "running_var");
  const Shape c{x.dim(1)};
  BatchNormResult r;
  r.y = Tensor::Empty(x.shape(), DType::kF32, x.device());
  r.save_mean = Tensor::Empty(c, DType::kF32, x.device());
  r.save_var = Tensor::Empty(c, DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).BatchNormForwardTraining(p, x, gamma, beta, &r.y, &r.save_mean, &r.save_var,
                                                       running_mean, running_var));
  return r;
}

Tensor BatchNormInference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                          const Tensor& running_var, const BatchNormParams& p) {
  const char* op = "BatchNormInference";
  CheckBatchNormInput(op, x);
  CheckChannelVector(op, x, gamma, "gamma");
  CheckChannelVector(op, x, beta, "beta");
  CheckChannelVector(op, x, running_mean, "running_mean");
  CheckChannelVector(op, x, running_var, "running_var");
  Tensor y = Tensor::Empty(x.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).BatchNormForwardInference(p, x, gamma, beta, running_mean, running_var, &y));
  return y;
}

BatchNormGrads BatchNormBackward(const Tensor& x, const Tensor& gamma, const Tensor& save_mean,
                                 const Tensor& save_var, const Tensor& dy, const BatchNormParams& p) {
  const char* op = "BatchNormBackward";
  CheckBatchNormInput(op, x);
  CheckChannelVector(op, x, gamma, "gamma");
  CheckChannelVector(op, x, save_mean, "save_mean");
  CheckChannelVector(op, x, save_var, "save_var");
  CheckF32(op, dy, "dy");
  CheckSameDevice(op, x, dy);
  CheckShape(op, dy, x.shape(), "dy");
  BatchNormGrads g;
  g.dx = Tensor::Empty(x.shape(), DType::kF32, x.device());
  g.dgamma = Tensor::Empty(gamma.shape(), DType::kF32, x.device());
  g.dbeta = Tensor::Empty(gamma.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).BatchNormBackward(p, x, gamma, save_mean, save_var, dy, &g.dx, &g.dgamma, &g.dbeta));
  return g;
}

// ---- activations / softmax ----

Tensor Activation(ActivationKind k, const Tensor& x) {
  CheckF32("Activation", x, "x");
  Tensor y = Tensor::Empty(x.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).ActivationForward(k, x, &y));
  return y;
}

Tensor ActivationBackward(ActivationKind k, const Tensor& x, const Tensor& y, const Tensor& dy) {
  const char* op = "ActivationBackward";
  CheckF32(op, x, "x");
  CheckF32(op, y, "y");
  CheckF32(op, dy, "dy");
  CheckSameDevice(op, x, dy);
  CheckShape(op, y, x.shape(), "y");
  CheckShape(op, dy, x.shape(), "dy");
  Tensor dx = Tensor::Empty(x.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).ActivationBackward(k, x, y, dy, &dx));
  return dx;
}

namespace {
Tensor SoftmaxImpl(bool log, const Tensor& x) {
  CheckF32(log ? "LogSoftmax" : "Softmax", x, "x");
  GEOMX_CHECK_EQ(x.rank(), 2) << (log ? "LogSoftmax" : "Softmax") << " expects [N, C], got "
                              << x.shape().ToString();
  Tensor y = Tensor::Empty(x.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).SoftmaxForward(log, x, &y));
  return y;
}
}  // namespace

Tensor Softmax(const Tensor& x) { return SoftmaxImpl(false, x); }
Tensor LogSoftmax(const Tensor& x) { return SoftmaxImpl(true, x); }

Tensor SoftmaxBackward(bool log, const Tensor& y, const Tensor& dy) {
  CheckF32("SoftmaxBackward", y, "y");
  CheckF32("SoftmaxBackward", dy, "dy");
  CheckSameDevice("SoftmaxBackward", y, dy);
  GEOMX_CHECK_EQ(y.rank(), 2) << "SoftmaxBackward expects [N, C], got " << y.shape().ToString();
  CheckShape("SoftmaxBackward", dy, y.shape(), "dy");
  Tensor dx = Tensor::Empty(y.shape(), DType::kF32, y.device());
  GEOMX_CHECK_OK(BackendOf(y).SoftmaxBackward(log, y, dy, &dx));
  return dx;
}

// ---- elementwise ----

Tensor Binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  CheckF32("Binary", a, "a");
  CheckF32("Binary", b, "b");
  CheckSameDevice("Binary", a, b);
  const bool same = a.shape() == b.shape();
  const bool scalar = b.numel() == 1;
  const bool bias = b.rank() == 1 && a.rank() >= 1 && b.dim(0) == a.dim(-1);
  GEOMX_CHECK(same || scalar || bias) << "Binary: cannot broadcast " << b.shape().ToString() << " onto "
                                      << a.shape().ToString()
                                      << " (b must match a, have one element, or be [C] with C = a's last dim)";
  Tensor out = Tensor::Empty(a.shape(), DType::kF32, a.device());
  GEOMX_CHECK_OK(BackendOf(a).Binary(op, a, b, &out));
  return out;
}

Tensor Unary(UnaryOp op, const Tensor& x, float alpha) {
  CheckF32("Unary", x, "x");
  Tensor out = Tensor::Empty(x.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).Unary(op, alpha, x, &out));
  return out;
}

void Axpy(float alpha, const Tensor& x, Tensor* y) {
  CheckF32("Axpy", x, "x");
  CheckF32("Axpy", *y, "y");
  CheckSameDevice("Axpy", x, *y);
  GEOMX_CHECK_EQ(x.numel(), y->numel()) << "Axpy: x " << x.shape().ToString() << " vs y " << y->shape().ToString();
  GEOMX_CHECK_OK(BackendOf(x).Axpy(alpha, x, y));
}

Tensor MaskScale(const Tensor& x, const Tensor& mask, float scale) {
  CheckF32("MaskScale", x, "x");
  CheckDefined("MaskScale", mask, "mask");
  GEOMX_CHECK(mask.dtype() == DType::kU8) << "MaskScale: mask must be u8, got " << mask.ToString();
  CheckSameDevice("MaskScale", x, mask);
  GEOMX_CHECK_EQ(x.numel(), mask.numel()) << "MaskScale: mask " << mask.shape().ToString() << " vs x "
                                          << x.shape().ToString();
  Tensor out = Tensor::Empty(x.shape(), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).MaskScale(x, mask, scale, &out));
  return out;
}

// ---- reductions ----

Tensor Reduce(ReduceOp op, const Tensor& x, int axis_begin, int axis_end) {
  CheckF32("Reduce", x, "x");
  GEOMX_CHECK(0 <= axis_begin && axis_begin <= axis_end && axis_end <= x.rank())
      << "Reduce: axes [" << axis_begin << ", " << axis_end << ") out of range for " << x.shape().ToString();
  GEOMX_CHECK(op != ReduceOp::kMax || x.numel() > 0) << "Reduce: max of an empty tensor";
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (i < axis_begin || i >= axis_end) dims.push_back(x.dim(i));
  }
  Tensor out = Tensor::Empty(Shape(std::move(dims)), DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).Reduce(op, x, axis_begin, axis_end, &out));
  return out;
}

Tensor Sum(const Tensor& x) { return Reduce(ReduceOp::kSum, x, 0, x.rank()); }
Tensor Mean(const Tensor& x) { return Reduce(ReduceOp::kMean, x, 0, x.rank()); }

Tensor ArgMax(const Tensor& x) {
  CheckF32("ArgMax", x, "x");
  GEOMX_CHECK(x.rank() == 2 && x.dim(1) > 0) << "ArgMax expects [N, C] with C > 0, got " << x.shape().ToString();
  Tensor out = Tensor::Empty({x.dim(0)}, DType::kI64, x.device());
  GEOMX_CHECK_OK(BackendOf(x).ArgMax(x, &out));
  return out;
}

// ---- losses ----

namespace {
void CheckLogitsAndLabels(const char* op, const Tensor& logits, const Tensor& labels) {
  CheckF32(op, logits, "logits");
  CheckDefined(op, labels, "labels");
  CheckSameDevice(op, logits, labels);
  GEOMX_CHECK(logits.rank() == 2 && logits.dim(1) > 0)
      << op << " expects logits [N, C] with C > 0, got " << logits.shape().ToString();
  GEOMX_CHECK(labels.dtype() == DType::kI64) << op << ": labels must be i64, got " << labels.ToString();
  CheckShape(op, labels, Shape{logits.dim(0)}, "labels");
}
}  // namespace

CrossEntropyResult SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels) {
  CheckLogitsAndLabels("SoftmaxCrossEntropy", logits, labels);
  CrossEntropyResult r;
  r.loss = Tensor::Empty({logits.dim(0)}, DType::kF32, logits.device());
  r.probs = Tensor::Empty(logits.shape(), DType::kF32, logits.device());
  GEOMX_CHECK_OK(BackendOf(logits).SoftmaxCrossEntropyForward(logits, labels, &r.loss, &r.probs));
  return r;
}

Tensor SoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels, float scale) {
  CheckLogitsAndLabels("SoftmaxCrossEntropyBackward", probs, labels);
  Tensor dlogits = Tensor::Empty(probs.shape(), DType::kF32, probs.device());
  GEOMX_CHECK_OK(BackendOf(probs).SoftmaxCrossEntropyBackward(probs, labels, scale, &dlogits));
  return dlogits;
}

// ---- optimizer ----

void ApplyUpdate(UpdateRule rule, const UpdateHyper& h, const Tensor& grad, Tensor* param,
                 const std::vector<Tensor*>& state) {
  CheckF32("ApplyUpdate", grad, "grad");
  CheckF32("ApplyUpdate", *param, "param");
  CheckSameDevice("ApplyUpdate", grad, *param);
  GEOMX_CHECK_EQ(grad.numel(), param->numel()) << "ApplyUpdate: grad " << grad.shape().ToString() << " vs param "
                                               << param->shape().ToString();
  GEOMX_CHECK_EQ(static_cast<int>(state.size()), UpdateRuleStateCount(rule)) << "ApplyUpdate: state tensor count";
  for (const Tensor* s : state) {
    GEOMX_CHECK(s != nullptr) << "ApplyUpdate: null state tensor";
    CheckF32("ApplyUpdate", *s, "state");
    CheckSameDevice("ApplyUpdate", *s, *param);
    GEOMX_CHECK_EQ(s->numel(), param->numel()) << "ApplyUpdate: state " << s->shape().ToString();
  }
  GEOMX_CHECK(h.step >= 1) << "ApplyUpdate: step is 1-based, got " << h.step;
  GEOMX_CHECK_OK(BackendOf(*param).ApplyUpdate(rule, h, grad, param, state));
}

}  // namespace geomx::ops
