// CudaBackend::Pool2dForward / Pool2dBackward on cuDNN pooling (NCHW, f32).
//
// cuDNN's pooling backward takes x, y and dy (it finds each window's maximum again by comparing x with y). The
// seam passes x, dy and the workspace back, so for max pooling the workspace is a device copy of y (f32, y's
// shape): the caller's y may be modified in place later, the copy cannot. Average pooling (padding excluded from
// the divisor) needs no workspace; its backward recomputes y into scratch memory, because cuDNN's contract
// requires a valid y for every mode.
#include <string>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"

namespace geomx {

Status CudaBackend::Pool2dForward(const Pool2dParams& p, const Tensor& x, Tensor* y, Tensor* workspace) {
  if (workspace != nullptr) *workspace = Tensor();
  if (y->numel() == 0) return Status::Ok();
  const float one = 1.0f, zero = 0.0f;
  {
    auto lock = ctx_->LockLibraries();
    GEOMX_ASSIGN_OR_RETURN(CudnnPoolingDesc pool, MakePoolingDesc(p));
    GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc x_desc, MakeTensorDesc(x.shape()));
    GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc y_desc, MakeTensorDesc(y->shape()));
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnPoolingForward(ctx_->cudnn(), pool.get(), &one, x_desc.get(), x.raw_data(), &zero,
                                                   y_desc.get(), y->raw_data()));
  }
  if (p.kind != PoolKind::kMax || workspace == nullptr) return Status::Ok();  // inference: nothing to keep
  // Always a fresh tensor: the caller may still hold an earlier workspace for a pending backward.
  Tensor saved_y = Tensor::Empty(y->shape(), DType::kF32, allocator_.device());
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(saved_y.raw_data(), y->raw_data(), y->nbytes(), cudaMemcpyDeviceToDevice,
                                             ctx_->stream()));
  *workspace = saved_y;
  return Status::Ok();
}

Status CudaBackend::Pool2dBackward(const Pool2dParams& p, const Tensor& x, const Tensor& dy, const Tensor& workspace,
                                   Tensor* dx) {
  if (dx->numel() == 0) return Status::Ok();
  if (dy.numel() == 0) return Fill(0.0f, dx);
  const bool is_max = p.kind == PoolKind::kMax;
  if (is_max && (!workspace.defined() || workspace.device() != allocator_.device() ||
                 workspace.dtype() != DType::kF32 || workspace.shape() != dy.shape())) {
    return Status::InvalidArgument("Pool2dBackward: max pooling needs the workspace from Pool2dForward (a copy of y, " +
                                   dy.shape().ToString() + " on " + allocator_.device().ToString() + "), got " +
                                   (workspace.defined() ? workspace.ToString() : std::string("none")));
  }
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(CudnnPoolingDesc pool, MakePoolingDesc(p));
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc x_desc, MakeTensorDesc(x.shape()));
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc y_desc, MakeTensorDesc(dy.shape()));
  const void* y = nullptr;
  std::shared_ptr<Storage> recomputed;
  if (is_max) {
    y = workspace.raw_data();
  } else {
    GEOMX_ASSIGN_OR_RETURN(recomputed, ctx_->Scratch(dy.nbytes()));
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnPoolingForward(ctx_->cudnn(), pool.get(), &one, x_desc.get(), x.raw_data(), &zero,
                                                   y_desc.get(), recomputed->data()));
    y = recomputed->data();
  }
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnPoolingBackward(ctx_->cudnn(), pool.get(), &one, y_desc.get(), y, y_desc.get(),
                                                  dy.raw_data(), x_desc.get(), x.raw_data(), &zero, x_desc.get(),
                                                  dx->raw_data()));
  return Status::Ok();
}

}  // namespace geomx
