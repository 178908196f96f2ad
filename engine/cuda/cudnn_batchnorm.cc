// CudaBackend::BatchNorm{ForwardTraining,ForwardInference,Backward} on cuDNN spatial batch normalisation (per
// channel over N, H, W). A 2-D [N, C] input is described as [N, C, 1, 1] (same bytes), so BatchNorm1d and
// BatchNorm2d share one path.
//
// Conventions bridged here:
//   - running statistics: cuDNN's exponentialAverageFactor is Backend's p.momentum (running = (1 - m) * running +
//     m * batch) and cuDNN updates the running variance with the unbiased batch variance, as backend.h requires;
//   - saved statistics: cuDNN keeps 1 / sqrt(var + eps) where backend.h keeps the biased variance, so the
//     training forward converts into save_var and the backward converts back (convert.cu), each a [C] kernel.
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/cuda_kernels.h"

namespace geomx {

namespace {

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;

struct BnDescs {
  CudnnTensorDesc data;  // x, y, dy, dx: [N, C, H, W] or [N, C, 1, 1]
  CudnnTensorDesc stat;  // gamma, beta, means, variances: [1, C, 1, 1]
};

Result<BnDescs> MakeBnDescs(const Shape& x) {
  BnDescs d;
  GEOMX_ASSIGN_OR_RETURN(d.data, MakeTensorDesc(x));
  GEOMX_ASSIGN_OR_RETURN(d.stat, MakeTensorDesc(1, x.dim(1), 1, 1));
  return d;
}

}  // namespace

Status CudaBackend::BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                             const Tensor& beta, Tensor* y, Tensor* save_mean, Tensor* save_var,
                                             Tensor* running_mean, Tensor* running_var) {
  const float one = 1.0f, zero = 0.0f;
  GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> inv_std, ctx_->Scratch(save_var->nbytes()));
  {
    auto lock = ctx_->LockLibraries();
    GEOMX_ASSIGN_OR_RETURN(BnDescs d, MakeBnDescs(x.shape()));
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnBatchNormalizationForwardTraining(
        ctx_->cudnn(), kMode, &one, &zero, d.data.get(), x.raw_data(), d.data.get(), y->raw_data(), d.stat.get(),
        gamma.raw_data(), beta.raw_data(), static_cast<double>(p.momentum), running_mean->raw_data(),
        running_var->raw_data(), static_cast<double>(p.eps), save_mean->raw_data(), inv_std->data()));
  }
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchInvStdToVar(static_cast<const float*>(inv_std->data()), p.eps,
                                                     DeviceF32(save_var), save_var->numel(), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, const Tensor& running_mean,
                                              const Tensor& running_var, Tensor* y) {
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(BnDescs d, MakeBnDescs(x.shape()));
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnBatchNormalizationForwardInference(
      ctx_->cudnn(), kMode, &one, &zero, d.data.get(), x.raw_data(), d.data.get(), y->raw_data(), d.stat.get(),
      gamma.raw_data(), beta.raw_data(), running_mean.raw_data(), running_var.raw_data(),
      static_cast<double>(p.eps)));
  return Status::Ok();
}

Status CudaBackend::BatchNormBackward(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                      const Tensor& save_mean, const Tensor& save_var, const Tensor& dy, Tensor* dx,
                                      Tensor* dgamma, Tensor* dbeta) {
  const float one = 1.0f, zero = 0.0f;
  GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> inv_std, ctx_->Scratch(save_var.nbytes()));
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchVarToInvStd(DeviceF32(save_var), p.eps, static_cast<float*>(inv_std->data()),
                                                     save_var.numel(), ctx_->stream()));
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(BnDescs d, MakeBnDescs(x.shape()));
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnBatchNormalizationBackward(
      ctx_->cudnn(), kMode, &one, &zero, &one, &zero, d.data.get(), x.raw_data(), d.data.get(), dy.raw_data(),
      d.data.get(), dx->raw_data(), d.stat.get(), gamma.raw_data(), dgamma->raw_data(), dbeta->raw_data(),
      static_cast<double>(p.eps), save_mean.raw_data(), inv_std->data()));
  return Status::Ok();
}

}  // namespace geomx
