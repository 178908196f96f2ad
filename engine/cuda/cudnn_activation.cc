// CudaBackend activations and softmax / log-softmax.
//   - relu, tanh, sigmoid: cuDNN activation (any tensor seen as a flat vector, in chunks that fit cuDNN's int
//     dimensions); the backward gets x, y and dy, so every kind differentiates from what it prefers.
//   - gelu (erf form): cuDNN has none; kernels launching the engine/kernels/activation.h functors.
//   - softmax over the last dimension of [N, C]: cuDNN softmax in instance mode on [N, C, 1, 1], ACCURATE (max
//     subtracted) or LOG; the LOG backward takes the log-softmax output as y, as the seam provides it.
#include <algorithm>
#include <cstdint>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/cuda_kernels.h"

namespace geomx {

namespace {

constexpr int64_t kChunk = int64_t{1} << 30;  // elements per cuDNN call for flat activations

cudnnActivationMode_t CudnnMode(ActivationKind k) {
  switch (k) {
    case ActivationKind::kRelu: return CUDNN_ACTIVATION_RELU;
    case ActivationKind::kTanh: return CUDNN_ACTIVATION_TANH;
    case ActivationKind::kSigmoid: return CUDNN_ACTIVATION_SIGMOID;
    case ActivationKind::kGelu: break;  // not a cuDNN mode: the callers launch the functor kernels instead
  }
  return CUDNN_ACTIVATION_IDENTITY;
}

// Calls fn(offset, count, desc) over [0, n) in chunks of at most kChunk elements, desc a flat [count, 1, 1, 1].
template <typename Fn>
Status ForEachChunk(int64_t n, const Fn& fn) {
  for (int64_t offset = 0; offset < n; offset += kChunk) {
    const int64_t count = std::min(kChunk, n - offset);
    GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc desc, MakeTensorDesc(count, 1, 1, 1));
    GEOMX_RETURN_IF_ERROR(fn(offset, desc.get()));
  }
  return Status::Ok();
}

const float* At(const Tensor& t, int64_t offset) { return static_cast<const float*>(t.raw_data()) + offset; }
float* At(Tensor* t, int64_t offset) { return static_cast<float*>(t->raw_data()) + offset; }

cudnnSoftmaxAlgorithm_t SoftmaxAlgo(bool log) { return log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE; }

}  // namespace

Status CudaBackend::ActivationForward(ActivationKind k, const Tensor& x, Tensor* y) {
  if (k == ActivationKind::kGelu) {
    GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchGeluForward(DeviceF32(x), DeviceF32(y), x.numel(), ctx_->stream()));
    return Status::Ok();
  }
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(CudnnActivationDesc act, MakeActivationDesc(CudnnMode(k)));
  return ForEachChunk(x.numel(), [&](int64_t off, cudnnTensorDescriptor_t desc) -> Status {
    GEOMX_CUDA_RETURN_IF_ERROR(
        cudnnActivationForward(ctx_->cudnn(), act.get(), &one, desc, At(x, off), &zero, desc, At(y, off)));
    return Status::Ok();
  });
}

Status CudaBackend::ActivationBackward(ActivationKind k, const Tensor& x, const Tensor& y, const Tensor& dy,
                                       Tensor* dx) {
  if (k == ActivationKind::kGelu) {
    GEOMX_CUDA_RETURN_IF_ERROR(
        cuda::LaunchGeluBackward(DeviceF32(x), DeviceF32(dy), DeviceF32(dx), x.numel(), ctx_->stream()));
    return Status::Ok();
  }
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(CudnnActivationDesc act, MakeActivationDesc(CudnnMode(k)));
  return ForEachChunk(x.numel(), [&](int64_t off, cudnnTensorDescriptor_t desc) -> Status {
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnActivationBackward(ctx_->cudnn(), act.get(), &one, desc, At(y, off), desc,
                                                       At(dy, off), desc, At(x, off), &zero, desc, At(dx, off)));
    return Status::Ok();
  });
}

Status CudaBackend::SoftmaxForward(bool log, const Tensor& x, Tensor* y) {
  if (x.numel() == 0) return Status::Ok();
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc desc, MakeTensorDesc(x.shape()));  // [N, C, 1, 1]
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSoftmaxForward(ctx_->cudnn(), SoftmaxAlgo(log), CUDNN_SOFTMAX_MODE_INSTANCE, &one,
                                                 desc.get(), x.raw_data(), &zero, desc.get(), y->raw_data()));
  return Status::Ok();
}

Status CudaBackend::SoftmaxBackward(bool log, const Tensor& y, const Tensor& dy, Tensor* dx) {
  if (y.numel() == 0) return Status::Ok();
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc desc, MakeTensorDesc(y.shape()));
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSoftmaxBackward(ctx_->cudnn(), SoftmaxAlgo(log), CUDNN_SOFTMAX_MODE_INSTANCE, &one,
                                                  desc.get(), y.raw_data(), desc.get(), dy.raw_data(), &zero,
                                                  desc.get(), dx->raw_data()));
  return Status::Ok();
}

}  // namespace geomx
