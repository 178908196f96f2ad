#include "engine/cuda/cuda_check.h"

#include <string>

namespace geomx {

namespace {

std::string Where(const char* call, const char* file, int line) {
  return std::string(call) + " (" + file + ":" + std::to_string(line) + ")";
}

}  // namespace

Status CudaErrorStatus(cudaError_t err, const char* call, const char* file, int line) {
  // A failed runtime call also sets the thread's "last error"; clear it so an unrelated later
  // cudaGetLastError() (after a kernel launch) does not report this failure a second time. Sticky errors (a
  // crashed kernel) stay in the context whatever we do here.
  (void)cudaGetLastError();
  const std::string msg = std::string("CUDA error ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err) +
                          " in " + Where(call, file, line);
  switch (err) {
    case cudaErrorMemoryAllocation:
      return Status::ResourceExhausted(msg);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable:
      return Status::FailedPrecondition(msg);
    default:
      return Status::Internal(msg);
  }
}

Status CudnnErrorStatus(cudnnStatus_t err, const char* call, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));  // cuDNN 9: why the last call failed (may be empty)
  std::string msg = std::string("cuDNN error ") + cudnnGetErrorString(err) + " in " + Where(call, file, line);
  if (detail[0] != '\0') msg += ": " + std::string(detail);
  // cuDNN 9 groups codes by thousands: 2xxx bad parameter, 3xxx not supported, 4xxx internal, 5xxx execution.
  const int category = static_cast<int>(err) / 1000 * 1000;
  if (err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
      err == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) {
    return Status::ResourceExhausted(msg);
  }
  if (err == CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER ||
      err == CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH ||
      err == CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING ||
      err == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED) {
    return Status::FailedPrecondition(msg);
  }
  if (category == CUDNN_STATUS_NOT_SUPPORTED) return Status::Unimplemented(msg);
  return Status::Internal(msg);
}

Status CublasErrorStatus(cublasStatus_t err, const char* call, const char* file, int line) {
  const std::string msg = std::string("cuBLAS error ") + cublasGetStatusName(err) + ": " +
                          cublasGetStatusString(err) + " in " + Where(call, file, line);
  switch (err) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return Status::ResourceExhausted(msg);
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return Status::FailedPrecondition(msg);
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return Status::Unimplemented(msg);
    default:
      return Status::Internal(msg);
  }
}

}  // namespace geomx
