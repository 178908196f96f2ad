// RAII owners for every CUDA, cuDNN and cuBLAS object the backend creates (docs/style.md R8): the stream, the
// cuDNN and cuBLAS handles, and the cuDNN tensor/filter/convolution/pooling/activation/dropout/RNN descriptors
// (the dropout and RNN ones are configured in cudnn_rnn.cc). Each is a std::unique_ptr over the library's opaque
// struct whose deleter calls the matching Destroy function, so they move but never copy, and nothing is destroyed
// twice or leaked on an early `return status`.
//
// The Make* factories create and configure one object or return the library's failure as a Status (cuda_check.h).
// Descriptors are cheap host objects; the backend builds them per call. Not thread-safe (plain values); the
// handles are shared under CudaContext's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "engine/base/status.h"
#include "engine/op_params.h"
#include "engine/shape.h"

namespace geomx {

// Calls Destroy(p); the status is ignored (nothing sensible to do with a failed destroy in a destructor).
template <auto Destroy>
struct CudaObjectDeleter {
  template <typename T>
  void operator()(T* p) const {
    (void)Destroy(p);
  }
};

template <typename Handle, auto Destroy>
using CudaObject = std::unique_ptr<std::remove_pointer_t<Handle>, CudaObjectDeleter<Destroy>>;

using CudaStream = CudaObject<cudaStream_t, cudaStreamDestroy>;
using CudnnHandle = CudaObject<cudnnHandle_t, cudnnDestroy>;
using CublasHandle = CudaObject<cublasHandle_t, cublasDestroy>;
using CudnnTensorDesc = CudaObject<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using CudnnFilterDesc = CudaObject<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using CudnnConvDesc = CudaObject<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using CudnnPoolingDesc = CudaObject<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
using CudnnActivationDesc = CudaObject<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;
using CudnnDropoutDesc = CudaObject<cudnnDropoutDescriptor_t, cudnnDestroyDropoutDescriptor>;
using CudnnRnnDesc = CudaObject<cudnnRNNDescriptor_t, cudnnDestroyRNNDescriptor>;
using CudnnRnnDataDesc = CudaObject<cudnnRNNDataDescriptor_t, cudnnDestroyRNNDataDescriptor>;

// A non-blocking stream (no implicit synchronisation with the legacy default stream).
Result<CudaStream> MakeCudaStream();
// Handles bound to `stream`. cuBLAS: f32 math in full precision unless `allow_tf32` (TF32 tensor cores).
Result<CudnnHandle> MakeCudnnHandle(cudaStream_t stream);
Result<CublasHandle> MakeCublasHandle(cudaStream_t stream, bool allow_tf32);

// A packed f32 NCHW tensor descriptor of n x c x h x w. kUnimplemented when a dimension exceeds cuDNN's int range.
Result<CudnnTensorDesc> MakeTensorDesc(int64_t n, int64_t c, int64_t h, int64_t w);
// Views a rank-4 shape as itself, [N, C] as [N, C, 1, 1] and [C] as [1, C, 1, 1].
Result<CudnnTensorDesc> MakeTensorDesc(const Shape& shape);
// An f32 OIHW filter descriptor of a rank-4 weight shape.
Result<CudnnFilterDesc> MakeFilterDesc(const Shape& oihw);
// Cross-correlation (what deep-learning "convolution" means) with f32 compute. Math: FMA only (full f32) unless
// `allow_tf32`; the chosen algorithm's math type is set again before execution (cudnn_conv.cc).
Result<CudnnConvDesc> MakeConvDesc(const Conv2dParams& p, bool allow_tf32);
// Max (deterministic tie handling) or average excluding padding from the divisor, as Pool2dParams defines them.
Result<CudnnPoolingDesc> MakePoolingDesc(const Pool2dParams& p);
Result<CudnnActivationDesc> MakeActivationDesc(cudnnActivationMode_t mode);

}  // namespace geomx
