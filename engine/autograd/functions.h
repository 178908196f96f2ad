// Differentiable operations: each forward calls engine/ops.h and records its gradient rule (a Node).
// Shapes follow ops.h. Every function here has a finite-difference test in tests/engine/.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/autograd/variable.h"
#include "engine/base/rng.h"
#include "engine/base/status.h"
#include "engine/op_params.h"

namespace geomx::autograd {

Variable MatMul(const Variable& a, const Variable& b);
Variable Linear(const Variable& x, const Variable& w, const Variable& b);  // b may be undefined
Variable Conv2d(const Variable& x, const Variable& w, const Variable& b, const Conv2dParams& p);
Variable Pool2d(const Variable& x, const Pool2dParams& p);
// One recurrent layer, LSTM or GRU (op_params.h RnnParams): x [N, T, I] -> [N, T, H] (p.sequences) or the last
// h [N, H].
Variable Rnn(const Variable& x, const Variable& w_ih, const Variable& w_hh, const Variable& b, const RnnParams& p);
// training: batch statistics and running-stat update; otherwise running statistics (no grad to stats).
Variable BatchNorm(const Variable& x, const Variable& gamma, const Variable& beta, Tensor* running_mean,
                   Tensor* running_var, bool training, const BatchNormParams& p);
Variable Activation(ActivationKind k, const Variable& x);
Variable Softmax(const Variable& x);
Variable LogSoftmax(const Variable& x);
// Inverted dropout: zeroes with probability p and scales by 1/(1-p) when training; identity otherwise.
Variable Dropout(const Variable& x, float p, bool training, Rng& rng);
Variable Reshape(const Variable& x, const Shape& shape);
Variable Flatten(const Variable& x);  // [N, ...] -> [N, prod(...)]
// Along one dimension (ops.h Concat/Slice: dim may be negative; copies, not views).
Variable Concat(const std::vector<Variable>& xs, int dim);
Variable Slice(const Variable& x, int dim, int64_t start, int64_t length);
// Embedding lookup (ops.h EmbeddingLookup): the rows of `weight` [V, D] picked by `indices` (i64 of any shape S,
// on weight's device; data, no gradient) -> [S..., D]. The weight's gradient is row-sparse (only the touched rows,
// duplicates summed): the node hands it over through Node::TakeRowSparseGrad and a weight leaf keeps it by its
// GradLayout (variable.h; densified by default). kInvalidArgument for an index outside [0, V).
Result<Variable> Embedding(const Variable& weight, const Tensor& indices);
// RoI crop-and-resize (ops.h CropAndResize: TensorFlow's crop_and_resize, bilinear): x [N, C, H, W], boxes f32
// [K, 4] as (y1, x1, y2, x2) normalised, box_index i64 [K] -> [K, C, p.crop_h, p.crop_w]. Gradient to x only
// (the boxes are data). kInvalidArgument for a box_index outside [0, N) or a coordinate that is not finite.
Result<Variable> CropAndResize(const Variable& x, const Tensor& boxes, const Tensor& box_index,
                               const CropAndResizeParams& p);

Variable Add(const Variable& a, const Variable& b);  // same shape, or b scalar / [C] broadcast (ops.h)
Variable Sub(const Variable& a, const Variable& b);
Variable Mul(const Variable& a, const Variable& b);
Variable MulScalar(const Variable& x, float s);
Variable AddScalar(const Variable& x, float s);
Variable Exp(const Variable& x);
Variable Log(const Variable& x);
Variable Square(const Variable& x);
Variable Sum(const Variable& x);   // -> scalar
Variable Mean(const Variable& x);  // -> scalar

// Losses (mean over the batch):
// logits [N, C], labels i64 [N].
Variable SoftmaxCrossEntropy(const Variable& logits, const Tensor& labels);
// logits and targets (f32 in [0,1]) of the same shape; numerically stable log-sum-exp form.
Variable BinaryCrossEntropyWithLogits(const Variable& logits, const Tensor& targets);
Variable MseLoss(const Variable& pred, const Tensor& target);
// PyTorch's SmoothL1Loss (Huber with beta, mean reduction): per element d = pred - target,
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta. beta > 0.
Variable SmoothL1Loss(const Variable& pred, const Tensor& target, float beta = 1.0f);

}  // namespace geomx::autograd
