#include "engine/cuda/cudnn_handles.h"

#include <climits>
#include <initializer_list>
#include <string>

#include "engine/cuda/cuda_check.h"

namespace geomx {

namespace {

// cuDNN takes int dimensions; tensors beyond that are not supported by this backend (kUnimplemented names why).
Status CheckIntDims(const char* what, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) {
    if (d < 0 || d > INT_MAX) {
      return Status::Unimplemented(std::string(what) + ": dimension " + std::to_string(d) +
                                   " is outside cuDNN's int range");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<CudaStream> MakeCudaStream() {
  cudaStream_t s = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return CudaStream(s);
}

Result<CudnnHandle> MakeCudnnHandle(cudaStream_t stream) {
  cudnnHandle_t h = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreate(&h));
  CudnnHandle owned(h);
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetStream(h, stream));
  return owned;
}

Result<CublasHandle> MakeCublasHandle(cudaStream_t stream, bool allow_tf32) {
  cublasHandle_t h = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cublasCreate(&h));
  CublasHandle owned(h);
  GEOMX_CUDA_RETURN_IF_ERROR(cublasSetStream(h, stream));
  // CUBLAS_DEFAULT_MATH never lowers f32 to TF32 (that takes CUBLAS_TF32_TENSOR_OP_MATH). Scalars are host values.
  GEOMX_CUDA_RETURN_IF_ERROR(cublasSetMathMode(h, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  GEOMX_CUDA_RETURN_IF_ERROR(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  return owned;
}

Result<CudnnTensorDesc> MakeTensorDesc(int64_t n, int64_t c, int64_t h, int64_t w) {
  GEOMX_RETURN_IF_ERROR(CheckIntDims("cuDNN tensor", {n, c, h, w, n * c * h * w}));
  cudnnTensorDescriptor_t d = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d));
  CudnnTensorDesc owned(d);
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                                        static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
  return owned;
}

Result<CudnnTensorDesc> MakeTensorDesc(const Shape& s) {
  switch (s.rank()) {
    case 1: return MakeTensorDesc(1, s[0], 1, 1);
    case 2: return MakeTensorDesc(s[0], s[1], 1, 1);
    case 4: return MakeTensorDesc(s[0], s[1], s[2], s[3]);
    default: return Status::Internal("MakeTensorDesc: unsupported rank in " + s.ToString());
  }
}

Result<CudnnFilterDesc> MakeFilterDesc(const Shape& oihw) {
  GEOMX_RETURN_IF_ERROR(CheckIntDims("cuDNN filter", {oihw[0], oihw[1], oihw[2], oihw[3], oihw.numel()}));
  cudnnFilterDescriptor_t d = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&d));
  CudnnFilterDesc owned(d);
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                        static_cast<int>(oihw[0]), static_cast<int>(oihw[1]),
                                                        static_cast<int>(oihw[2]), static_cast<int>(oihw[3])));
  return owned;
}

Result<CudnnConvDesc> MakeConvDesc(const Conv2dParams& p, bool allow_tf32) {
  cudnnConvolutionDescriptor_t d = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&d));
  CudnnConvDesc owned(d);
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(d, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
                                                             p.dilation_h, p.dilation_w, CUDNN_CROSS_CORRELATION,
                                                             CUDNN_DATA_FLOAT));
  // CUDNN_DEFAULT_MATH lets cuDNN pick TF32 tensor cores for f32 data on Ampere and later (10-bit mantissa
  // products); CUDNN_FMA_MATH keeps full f32, matching the CPU backend to the conformance tolerances.
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d, allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  return owned;
}

Result<CudnnPoolingDesc> MakePoolingDesc(const Pool2dParams& p) {
  cudnnPoolingDescriptor_t d = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreatePoolingDescriptor(&d));
  CudnnPoolingDesc owned(d);
  const cudnnPoolingMode_t mode =
      p.kind == PoolKind::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetPooling2dDescriptor(d, mode, CUDNN_NOT_PROPAGATE_NAN, p.kernel_h, p.kernel_w,
                                                         p.pad_h, p.pad_w, p.stride_h, p.stride_w));
  return owned;
}

Result<CudnnActivationDesc> MakeActivationDesc(cudnnActivationMode_t mode) {
  cudnnActivationDescriptor_t d = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateActivationDescriptor(&d));
  CudnnActivationDesc owned(d);
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetActivationDescriptor(d, mode, CUDNN_NOT_PROPAGATE_NAN, /*coef=*/0.0));
  return owned;
}

}  // namespace geomx
