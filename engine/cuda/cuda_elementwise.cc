// CudaBackend's elementwise ops, reductions, fused losses, arg-max and optimizer updates: argument plumbing to the
// kernel launchers of cuda_kernels.h (the math is the engine/kernels/ functors, launched by the .cu files).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/cuda_kernels.h"

namespace geomx {

namespace {

// After a loss kernel: reads its label check back (waits for the stream, since the Status must say whether the
// labels were valid) and reports the first row whose label is outside [0, c), like the CPU backend.
Status ReadLabelCheck(CudaContext& ctx, const char* op, const Tensor& labels, int64_t c, const void* bad_row) {
  int64_t row = cuda::kNoBadRow;
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&row, bad_row, sizeof(row), cudaMemcpyDeviceToHost, ctx.stream()));
  GEOMX_RETURN_IF_ERROR(ctx.Sync());
  if (row == cuda::kNoBadRow) return Status::Ok();
  int64_t label = 0;
  const int64_t* labels_dev = static_cast<const int64_t*>(labels.raw_data());
  GEOMX_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&label, labels_dev + row, sizeof(label), cudaMemcpyDeviceToHost, ctx.stream()));
  GEOMX_RETURN_IF_ERROR(ctx.Sync());
  return Status::InvalidArgument(std::string(op) + ": label " + std::to_string(label) + " at row " +
                                 std::to_string(row) + " is outside [0, " + std::to_string(c) + ")");
}

}  // namespace

Status CudaBackend::Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor* out) {
  GEOMX_CUDA_RETURN_IF_ERROR(
      cuda::LaunchBinary(op, DeviceF32(a), DeviceF32(b), b.numel(), DeviceF32(out), a.numel(), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::Unary(UnaryOp op, float alpha, const Tensor& x, Tensor* out) {
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchUnary(op, alpha, DeviceF32(x), DeviceF32(out), x.numel(), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::Reduce(ReduceOp op, const Tensor& x, int axis_begin, int axis_end, Tensor* out) {
  const Shape& s = x.shape();
  int64_t outer = 1, red = 1, inner = 1;
  for (int i = 0; i < axis_begin; ++i) outer *= s[i];
  for (int i = axis_begin; i < axis_end; ++i) red *= s[i];
  for (int i = axis_end; i < s.rank(); ++i) inner *= s[i];
  if (red == 0) {  // empty reduction: the identity (sum 0, mean NaN like 0/0); ops.cc rejects an empty max
    return Fill(op == ReduceOp::kMean ? NAN : 0.0f, out);
  }
  GEOMX_CUDA_RETURN_IF_ERROR(
      cuda::LaunchReduce(op, DeviceF32(x), outer, red, inner, DeviceF32(out), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::Axpy(float alpha, const Tensor& x, Tensor* y) {
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchAxpy(alpha, DeviceF32(x), DeviceF32(y), x.numel(), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::MaskScale(const Tensor& x, const Tensor& mask, float scale, Tensor* out) {
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchMaskScale(DeviceF32(x), static_cast<const uint8_t*>(mask.raw_data()), scale,
                                                   DeviceF32(out), x.numel(), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::SoftmaxCrossEntropyForward(const Tensor& logits, const Tensor& labels, Tensor* loss,
                                               Tensor* probs) {
  const int64_t n = logits.dim(0), c = logits.dim(1);
  GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> bad_row, ctx_->Scratch(sizeof(int64_t)));
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchSoftmaxCrossEntropyForward(
      DeviceF32(logits), static_cast<const int64_t*>(labels.raw_data()), n, c, DeviceF32(loss), DeviceF32(probs),
      static_cast<int64_t*>(bad_row->data()), ctx_->stream()));
  return ReadLabelCheck(*ctx_, "SoftmaxCrossEntropy", labels, c, bad_row->data());
}

Status CudaBackend::SoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels, float scale,
                                                Tensor* dlogits) {
  const int64_t n = probs.dim(0), c = probs.dim(1);
  GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> bad_row, ctx_->Scratch(sizeof(int64_t)));
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchSoftmaxCrossEntropyBackward(
      DeviceF32(probs), static_cast<const int64_t*>(labels.raw_data()), n, c, scale, DeviceF32(dlogits),
      static_cast<int64_t*>(bad_row->data()), ctx_->stream()));
  return ReadLabelCheck(*ctx_, "SoftmaxCrossEntropyBackward", labels, c, bad_row->data());
}

Status CudaBackend::ArgMax(const Tensor& x, Tensor* out) {
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchArgMax(DeviceF32(x), x.dim(0), x.dim(1),
                                                static_cast<int64_t*>(out->raw_data()), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::ApplyUpdate(UpdateRule rule, const UpdateHyper& h, const Tensor& grad, Tensor* param,
                                const std::vector<Tensor*>& state) {
  float* s0 = state.size() > 0 ? DeviceF32(state[0]) : nullptr;
  float* s1 = state.size() > 1 ? DeviceF32(state[1]) : nullptr;
  float* s2 = state.size() > 2 ? DeviceF32(state[2]) : nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(
      cuda::LaunchUpdate(rule, h, DeviceF32(grad), DeviceF32(param), s0, s1, s2, param->numel(), ctx_->stream()));
  return Status::Ok();
}

}  // namespace geomx
