// CudaContext: what every CudaBackend method shares: the stream, the cuDNN and cuBLAS handles bound to it, the
// convolution algorithm cache, and scratch memory from the backend's caching allocator. Owned by CudaBackend
// (which outlives every use); only engine/cuda/ sees this header.
//
// Thread-safety: stream() may be used from any thread (the CUDA runtime is thread-safe and the stream orders the
// work). cuDNN and cuBLAS handles are not safe for concurrent calls, so cudnn(), cublas() and conv_algos() may
// only be touched while holding the lock from LockLibraries().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "engine/allocator.h"
#include "engine/base/status.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cudnn_handles.h"
#include "engine/storage.h"
#include "engine/tensor.h"

namespace geomx {

// One convolution problem: pass (forward, backward data, backward filter), x and w dims, stride, pad, dilation.
using CudnnConvKey = std::array<int64_t, 15>;

// The algorithm chosen for a CudnnConvKey: cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t as an int (one cache
// for the three passes), the math type it was measured with, and the workspace it needs.
struct CudnnConvAlgo {
  int algo = 0;
  cudnnMathType_t math_type = CUDNN_FMA_MATH;
  size_t workspace_bytes = 0;
};

class CudaContext {
 public:
  // Creates the stream and handles on the calling thread's current device. `allocator` must outlive the context.
  static Result<std::unique_ptr<CudaContext>> Create(const CudaBackendOptions& options, Allocator* allocator);

  const CudaBackendOptions& options() const { return options_; }
  cudaStream_t stream() const { return stream_.get(); }

  // Serialises the library handles and the algorithm cache for one call sequence.
  [[nodiscard]] std::unique_lock<std::mutex> LockLibraries() { return std::unique_lock<std::mutex>(library_mu_); }
  cudnnHandle_t cudnn() const { return cudnn_.get(); }     // under LockLibraries()
  cublasHandle_t cublas() const { return cublas_.get(); }  // under LockLibraries()
  std::map<CudnnConvKey, CudnnConvAlgo>& conv_algos() { return conv_algos_; }  // under LockLibraries()

  // Device memory for library workspaces and small staging buffers (kResourceExhausted when the device is full).
  // It may be released as soon as the work using it is enqueued: the caching allocator hands the block out only
  // to work enqueued later on the same stream.
  Result<std::shared_ptr<Storage>> Scratch(size_t nbytes);

  // Blocks until everything enqueued so far has run; reports an asynchronous kernel failure.
  Status Sync();

 private:
  CudaContext(const CudaBackendOptions& options, Allocator* allocator) : options_(options), allocator_(allocator) {}

  const CudaBackendOptions options_;
  Allocator* const allocator_;  // not owned: the backend's CudaAllocator
  CudaStream stream_;
  std::mutex library_mu_;
  CudnnHandle cudnn_;   // guarded by library_mu_
  CublasHandle cublas_; // guarded by library_mu_
  std::map<CudnnConvKey, CudnnConvAlgo> conv_algos_;  // guarded by library_mu_
};

// Typed device pointers of f32 tensors (the Backend contract guarantees the dtype).
inline const float* DeviceF32(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
inline float* DeviceF32(Tensor* t) { return static_cast<float*>(t->raw_data()); }

}  // namespace geomx
