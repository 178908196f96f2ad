// Fill, dtype casts and the batch-norm statistic conversion. Declarations and contracts: cuda_kernels.h.
//
// Casts follow CpuBackend::Cast exactly: every element goes through double, and f16/bf16 are produced from the
// float value rounded to nearest even (the CUDA intrinsics implement the same IEEE rounding as engine/half.cc).
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "engine/cuda/cuda_kernels.h"
#include "engine/cuda/grid.cuh"

namespace geomx::cuda {

namespace {

template <typename T>
__global__ void FillKernel(T* dst, T value, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) dst[i] = value;
}

template <typename T>
__device__ inline double LoadAsDouble(T v) {
  return static_cast<double>(v);
}
template <>
__device__ inline double LoadAsDouble(Half v) {
  return static_cast<double>(__half2float(__ushort_as_half(v.bits)));
}
template <>
__device__ inline double LoadAsDouble(BFloat16 v) {
  return static_cast<double>(__bfloat162float(__ushort_as_bfloat16(v.bits)));
}

template <typename T>
__device__ inline T StoreFromDouble(double v) {
  return static_cast<T>(v);
}
template <>
__device__ inline Half StoreFromDouble(double v) {
  return Half{__half_as_ushort(__float2half_rn(static_cast<float>(v)))};
}
template <>
__device__ inline BFloat16 StoreFromDouble(double v) {
  return BFloat16{__bfloat16_as_ushort(__float2bfloat16_rn(static_cast<float>(v)))};
}

template <typename S, typename D>
__global__ void CastKernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) dst[i] = StoreFromDouble<D>(LoadAsDouble(src[i]));
}

// var = 1 / inv_std^2 - eps, the inverse of inv_std = 1 / sqrt(var + eps).
__global__ void InvStdToVarKernel(const float* inv_std, float eps, float* var, int64_t c) {
  for (int64_t i = GridStart(); i < c; i += GridStride()) var[i] = 1.0f / (inv_std[i] * inv_std[i]) - eps;
}

__global__ void VarToInvStdKernel(const float* var, float eps, float* inv_std, int64_t c) {
  for (int64_t i = GridStart(); i < c; i += GridStride()) inv_std[i] = 1.0f / sqrtf(var[i] + eps);
}

template <typename T>
cudaError_t Fill(void* dst, uint64_t pattern, int64_t n, cudaStream_t stream) {
  const T value = static_cast<T>(pattern);
  FillKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(dst), value, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchFill(void* dst, size_t elem_size, uint64_t pattern, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1: return cudaMemsetAsync(dst, static_cast<int>(pattern & 0xff), static_cast<size_t>(n), stream);
    case 2: return Fill<uint16_t>(dst, pattern, n, stream);
    case 4: return Fill<uint32_t>(dst, pattern, n, stream);
    case 8: return Fill<uint64_t>(dst, pattern, n, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchCast(DType src_type, const void* src, DType dst_type, void* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return VisitDType(src_type, [&](auto src_tag) {
    using S = decltype(src_tag);
    return VisitDType(dst_type, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      CastKernel<S, D><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst),
                                                                      n);
      return cudaGetLastError();
    });
  });
}

cudaError_t LaunchInvStdToVar(const float* inv_std, float eps, float* var, int64_t c, cudaStream_t stream) {
  if (c == 0) return cudaSuccess;
  InvStdToVarKernel<<<BlocksFor(c), kThreadsPerBlock, 0, stream>>>(inv_std, eps, var, c);
  return cudaGetLastError();
}

cudaError_t LaunchVarToInvStd(const float* var, float eps, float* inv_std, int64_t c, cudaStream_t stream) {
  if (c == 0) return cudaSuccess;
  VarToInvStdKernel<<<BlocksFor(c), kThreadsPerBlock, 0, stream>>>(var, eps, inv_std, c);
  return cudaGetLastError();
}

}  // namespace geomx::cuda
