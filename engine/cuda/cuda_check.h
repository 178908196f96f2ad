// CUDA status -> geomx::Status. Runtime failures of the CUDA runtime, cuDNN and cuBLAS (out of memory, no driver,
// a library refusing a configuration) are values, never aborts (docs/style.md R3):
//
//   GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream));
//   GEOMX_CUDA_RETURN_IF_ERROR(cudnnConvolutionForward(...));
//   GEOMX_CUDA_RETURN_IF_ERROR(cublasSgemm(...));
//
// One macro serves the three libraries through the CudaStatus overloads. Codes: out-of-memory ->
// kResourceExhausted; no device / no driver -> kFailedPrecondition; a configuration the library does not support
// -> kUnimplemented; everything else -> kInternal. Messages name the call, the library's error name and text, and
// file:line. Only engine/cuda/ includes this header (it pulls in cudnn.h and cublas_v2.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "engine/base/status.h"

namespace geomx {

// Slow paths (only reached on failure), defined in cuda_check.cc.
Status CudaErrorStatus(cudaError_t err, const char* call, const char* file, int line);
Status CudnnErrorStatus(cudnnStatus_t err, const char* call, const char* file, int line);
Status CublasErrorStatus(cublasStatus_t err, const char* call, const char* file, int line);

inline Status CudaStatus(cudaError_t err, const char* call, const char* file, int line) {
  return err == cudaSuccess ? Status::Ok() : CudaErrorStatus(err, call, file, line);
}
inline Status CudaStatus(cudnnStatus_t err, const char* call, const char* file, int line) {
  return err == CUDNN_STATUS_SUCCESS ? Status::Ok() : CudnnErrorStatus(err, call, file, line);
}
inline Status CudaStatus(cublasStatus_t err, const char* call, const char* file, int line) {
  return err == CUBLAS_STATUS_SUCCESS ? Status::Ok() : CublasErrorStatus(err, call, file, line);
}

}  // namespace geomx

// Returns the converted Status from the current function when `expr` (a cudaError_t, cudnnStatus_t or
// cublasStatus_t) is not success.
#define GEOMX_CUDA_RETURN_IF_ERROR(expr)                                                              \
  do {                                                                                                \
    ::geomx::Status geomx_cuda_status_ = ::geomx::CudaStatus((expr), #expr, __FILE__, __LINE__);      \
    if (!geomx_cuda_status_.ok()) return geomx_cuda_status_;                                          \
  } while (0)
