#include "nn/loss.h"

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

autograd::Variable CrossEntropyLoss(const autograd::Variable& logits, const Tensor& labels) {
  GEOMX_CHECK_EQ(logits.shape().rank(), 2)
      << "CrossEntropyLoss: logits must be [N, C], got " << logits.shape().ToString();
  GEOMX_CHECK(labels.dtype() == DType::kI64)
      << "CrossEntropyLoss: labels must be i64, got " << DTypeName(labels.dtype());
  GEOMX_CHECK(labels.rank() == 1 && labels.dim(0) == logits.shape().dim(0))
      << "CrossEntropyLoss: labels must be [" << logits.shape().dim(0) << "], got " << labels.shape().ToString();
  return autograd::SoftmaxCrossEntropy(logits, labels);
}

autograd::Variable BceWithLogitsLoss(const autograd::Variable& logits, const Tensor& targets) {
  GEOMX_CHECK(logits.shape() == targets.shape())
      << "BceWithLogitsLoss: logits " << logits.shape().ToString() << " vs targets " << targets.shape().ToString();
  return autograd::BinaryCrossEntropyWithLogits(logits, targets);
}

autograd::Variable MseLoss(const autograd::Variable& pred, const Tensor& target) {
  GEOMX_CHECK(pred.shape() == target.shape())
      << "MseLoss: pred " << pred.shape().ToString() << " vs target " << target.shape().ToString();
  return autograd::MseLoss(pred, target);
}

autograd::Variable SmoothL1Loss(const autograd::Variable& pred, const Tensor& target, float beta) {
  GEOMX_CHECK(pred.shape() == target.shape())
      << "SmoothL1Loss: pred " << pred.shape().ToString() << " vs target " << target.shape().ToString();
  GEOMX_CHECK(beta > 0.0f) << "SmoothL1Loss: beta must be positive, got " << beta;
  return autograd::SmoothL1Loss(pred, target, beta);
}

}  // namespace geomx::nn
