// ops: the user-facing tensor math API. Each function validates shapes, dtypes and devices (GEOMX_CHECK: a
// mismatch here is a programmer error), allocates the output on the inputs' device, and dispatches to
// BackendFor(device). Backend failures (library errors, OOM) also abort with the backend's message; user input is
// validated before it reaches these functions. Differentiable versions live in engine/autograd/functions.h.
#pragma once

#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "engine/op_params.h"
#include "engine/row_sparse_tensor.h"
#include "engine/tensor.h"

namespace geomx::ops {

// ---- creation / movement ----
void Fill(Tensor* t, float value);
Tensor Cast(const Tensor& x, DType dtype);
void Copy(const Tensor& src, Tensor* dst);  // same shape/dtype, any devices

// ---- concatenation / slicing along one dimension (Backend::CopyBlocks) ----
// `dim` may be negative (counted from the end); tensors have rank >= 1 and any dtype. The results are copies.
// Concat: all inputs share dtype, device and rank and match xs[0] in every dimension but `dim`.
Tensor Concat(const std::vector<Tensor>& xs, int dim);
// Elements [start, start + length) along `dim`.
Tensor Slice(const Tensor& x, int dim, int64_t start, int64_t length);
// Writes `src` into `*dst` at [start, start + src.dim(dim)) along `dim`; src matches dst in every other dimension
// and has its own storage.
void CopyIntoSlice(const Tensor& src, Tensor* dst, int dim, int64_t start);

// ---- embedding lookup and row-sparse tensors (Backend::GatherRows, Backend::SegmentSumRows) ----
// Indices are i64 on the table's device. Index values are data, so they are checked (on the host: a copy and a
// wait for device tensors) and reported as kInvalidArgument naming the first bad one and its flat position;
// nothing is ever read out of bounds. Shapes and dtypes abort as everywhere in this file.
//
// Rows of `table` f32 [V, D] picked by `indices` of any shape S: out [S..., D], out[s, :] = table[indices[s], :].
Result<Tensor> EmbeddingLookup(const Tensor& table, const Tensor& indices);
// The gradient of EmbeddingLookup with respect to its table, row-sparse (row_sparse_tensor.h): rows = the
// distinct indices in increasing order, values[r, :] = the sum of dy[s, :] over every s with indices[s] ==
// rows[r], added in increasing s. dy f32 [S..., D] on the indices' device; num_rows = V.
Result<RowSparseTensor> EmbeddingBackward(const Tensor& dy, const Tensor& indices, int64_t num_rows);
// The dense [num_rows, width] tensor that `s` stands for (zeros in the rows it does not store).
Tensor RowSparseToDense(const RowSparseTensor& s);
// dense + s, a new tensor; `dense` has s's dense shape and device.
Tensor AddRowSparse(const Tensor& dense, const RowSparseTensor& s);
// a + b, row-sparse: the union of the rows, shared rows summed (a's row, then b's). Same num_rows, width, device.
RowSparseTensor AddRowSparse(const RowSparseTensor& a, const RowSparseTensor& b);

// ---- RoI crop-and-resize (Backend::CropAndResizeForward/Backward) ----
// TensorFlow's tf.image.crop_and_resize(method="bilinear") on NCHW features: x f32 [N, C, H, W]; boxes f32 [K, 4],
// row k = (y1, x1, y2, x2) in normalised image coordinates, where 0 is the centre of the first pixel row (column)
// and 1 the centre of the last, so y maps to y * (H - 1) pixels (y1 > y2 or x1 > x2 flips the crop; coordinates
// outside [0, 1] reach beyond the image); box_index i64 [K], the image of each box. Output [K, C, crop_h, crop_w]:
// sample (i, j) of box k reads image box_index[k] at
//   in_y = y1 (H - 1) + i (y2 - y1)(H - 1) / (crop_h - 1)   (crop_h > 1; crop_h == 1: in_y = (y1 + y2)(H - 1) / 2)
//   in_x likewise with x1, x2, W, crop_w,
// computed in f32 in that order. A sample with in_y outside [0, H - 1] or in_x outside [0, W - 1] is
// p.extrapolation_value; otherwise it interpolates bilinearly between pixels floor(in) and ceil(in) on both axes.
// kInvalidArgument, naming the box, for a box_index outside [0, N) or a coordinate that is not finite (checked on
// the host). K may be 0.
Result<Tensor> CropAndResize(const Tensor& x, const Tensor& boxes, const Tensor& box_index,
                             const CropAndResizeParams& p);
// The gradient with respect to x (the boxes get none): every element of dy [K, C, crop_h, crop_w] goes to the
// four pixels it was interpolated from, with the bilinear weights; extrapolated samples pass nothing back.
Result<Tensor> CropAndResizeBackward(const Tensor& dy, const Tensor& boxes, const Tensor& box_index,
                                     const Shape& x_shape, const CropAndResizeParams& p);

// ---- linear algebra ----
Tensor MatMul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x [N, I], w [O, I], b [O] or undefined -> [N, O]
Tensor Linear(const Tensor& x, const Tensor& w, const Tensor& b);

// ---- convolution ----
Shape Conv2dOutputShape(const Shape& x, const Shape& w, const Conv2dParams& p);
Tensor Conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);  // b may be undefined
Tensor Conv2dBackwardData(const Tensor& dy, const Tensor& w, const Shape& x_shape, const Conv2dParams& p);
// Returns {dw, db}; db undefined when !with_bias.
std::pair<Tensor, Tensor> Conv2dBackwardFilter(const Tensor& x, const Tensor& dy, const Shape& w_shape,
                                               bool with_bias, const Conv2dParams& p);

// ---- pooling ----
Shape Pool2dOutputShape(const Shape& x, const Pool2dParams& p);
struct PoolResult {
  Tensor y;
  Tensor workspace;  // pass back to Pool2dBackward
};
PoolResult Pool2d(const Tensor& x, const Pool2dParams& p);
Tensor Pool2dBackward(const Tensor& x, const Tensor& dy, const Tensor& workspace, const Pool2dParams& p);

// ---- recurrent ----
// One recurrent layer (op_params.h RnnParams): x [N, T, I], w_ih [G*H, I], w_hh [G*H, H], b -> y [N, T, H] when
// p.sequences, else [N, H]. `training`: also returns the workspace RnnBackward needs.
struct RnnResult {
  Tensor y;
  Tensor workspace;  // defined when training; pass back to RnnBackward
};
RnnResult Rnn(const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b, const RnnParams& p,
                bool training);
struct RnnGrads {
  Tensor dx, dw_ih, dw_hh, db;
};
RnnGrads RnnBackward(const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b, const Tensor& dy,
                       const Tensor& workspace, const RnnParams& p);

// ---- batch norm ----
struct BatchNormResult {
  Tensor y, save_mean, save_var;
};
BatchNormResult BatchNormTraining(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor* running_mean,
                                  Tensor* running_var, const BatchNormParams& p);
Tensor BatchNormInference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                          const Tensor& running_var, const BatchNormParams& p);
struct BatchNormGrads {
  Tensor dx, dgamma, dbeta;
};
BatchNormGrads BatchNormBackward(const Tensor& x, const Tensor& gamma, const Tensor& save_mean,
                                 const Tensor& save_var, const Tensor& dy, const BatchNormParams& p);

// ---- activations / softmax ----
Tensor Activation(ActivationKind k, const Tensor& x);
Tensor ActivationBackward(ActivationKind k, const Tensor& x, const Tensor& y, const Tensor& dy);
Tensor Softmax(const Tensor& x);     // [N, C], over C
Tensor LogSoftmax(const Tensor& x);  // [N, C], over C
Tensor SoftmaxBackward(bool log, const Tensor& y, const Tensor& dy);

// ---- elementwise ----
Tensor Binary(BinaryOp op, const Tensor& a, const Tensor& b);
inline Tensor Add(const Tensor& a, const Tensor& b) { return Binary(BinaryOp::kAdd, a, b); }
inline Tensor Sub(const Tensor& a, const Tensor& b) { return Binary(BinaryOp::kSub, a, b); }
inline Tensor Mul(const Tensor& a, const Tensor& b) { return Binary(BinaryOp::kMul, a, b); }
inline Tensor Div(const Tensor& a, const Tensor& b) { return Binary(BinaryOp::kDiv, a, b); }
Tensor Unary(UnaryOp op, const Tensor& x, float alpha = 0.0f);
inline Tensor MulScalar(const Tensor& x, float s) { return Unary(UnaryOp::kMulScalar, x, s); }
inline Tensor AddScalar(const Tensor& x, float s) { return Unary(UnaryOp::kAddScalar, x, s); }
void Axpy(float alpha, const Tensor& x, Tensor* y);  // y += alpha * x
Tensor MaskScale(const Tensor& x, const Tensor& mask, float scale);

// ---- reductions ----
Tensor Reduce(ReduceOp op, const Tensor& x, int axis_begin, int axis_end);
Tensor Sum(const Tensor& x);   // all elements -> shape [] (numel 1)
Tensor Mean(const Tensor& x);  // all elements -> shape []
Tensor ArgMax(const Tensor& x);  // [N, C] -> i64 [N]

// ---- losses ----
struct CrossEntropyResult {
  Tensor loss;   // per-sample [N]
  Tensor probs;  // [N, C]
};
// labels: i64 [N], values in [0, C). A label out of range aborts: loaders validate labels at load time.
CrossEntropyResult SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels);
Tensor SoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels, float scale);

// ---- optimizer ----
void ApplyUpdate(UpdateRule rule, const UpdateHyper& h, const Tensor& grad, Tensor* param,
                 const std::vector<Tensor*>& state);

}  // namespace geomx::ops
