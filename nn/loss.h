// Loss functions: thin nn-level wrappers over the differentiable losses in engine/autograd/functions.h. Each
// returns a scalar Variable (mean over the batch) ready for Backward(). Stateless; thread-compatible.
// Shape/dtype mismatches are programmer errors (GEOMX_CHECK): loaders validate labels when they load data.
#pragma once

#include "engine/autograd/variable.h"
#include "engine/tensor.h"

namespace geomx::nn {

// Softmax cross-entropy: logits [N, C] (f32), labels i64 [N] with values in [0, C). Mean over N.
autograd::Variable CrossEntropyLoss(const autograd::Variable& logits, const Tensor& labels);
// Binary cross-entropy on logits (numerically stable): logits and targets (f32 in [0, 1]) of the same shape.
// Mean over all elements.
autograd::Variable BceWithLogitsLoss(const autograd::Variable& logits, const Tensor& targets);
// Mean squared error over all elements: mean((pred - target)^2); same shapes.
autograd::Variable MseLoss(const autograd::Variable& pred, const Tensor& target);
// Smooth L1 (Huber with beta, PyTorch's SmoothL1Loss) over all elements: per element d = pred - target,
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; mean. Same shapes; beta > 0.
autograd::Variable SmoothL1Loss(const autograd::Variable& pred, const Tensor& target, float beta = 1.0f);

}  // namespace geomx::nn
