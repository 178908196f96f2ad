// Elementwise kernels: grid-stride loops over the functors of engine/kernels/elementwise.h and activation.h (the
// same functors cpu_elementwise.cc loops over). Declarations and contracts: cuda_kernels.h.
#include <cstdint>

#include "engine/cuda/cuda_kernels.h"
#include "engine/cuda/grid.cuh"
#include "engine/kernels/activation.h"
#include "engine/kernels/elementwise.h"

namespace geomx::cuda {

namespace {

// No __restrict__ anywhere: ops may pass aliasing buffers (in-place bias add, Axpy of a tensor onto itself).
template <typename Fn>
__global__ void UnaryKernel(Fn fn, const float* x, float* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = fn(x[i]);
}

// b_numel == n: same shape; 1: scalar; otherwise a [C] bias over the last dimension (i % C).
template <typename Fn>
__global__ void BinaryKernel(Fn fn, const float* a, const float* b, int64_t b_numel, float* out, int64_t n) {
  if (b_numel == n) {
    for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = fn(a[i], b[i]);
  } else if (b_numel == 1) {
    const float bv = b[0];
    for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = fn(a[i], bv);
  } else {
    for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = fn(a[i], b[i % b_numel]);
  }
}

// y[i] = fn(x[i], y[i]) (in place on y): Axpy.
template <typename Fn>
__global__ void AccumulateKernel(Fn fn, const float* x, float* y, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) y[i] = fn(x[i], y[i]);
}

__global__ void MaskScaleKernel(kernels::MaskScaleFn fn, const float* x, const uint8_t* mask, float* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = fn(x[i], mask[i]);
}

__global__ void GeluBackwardKernel(kernels::GeluBackwardFn fn, const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) dx[i] = fn(x[i], dy[i]);
}

template <typename Fn>
cudaError_t Unary(Fn fn, const float* x, float* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  UnaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(fn, x, out, n);
  return cudaGetLastError();
}

template <typename Fn>
cudaError_t Binary(Fn fn, const float* a, const float* b, int64_t b_numel, float* out, int64_t n,
                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  BinaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(fn, a, b, b_numel, out, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchBinary(BinaryOp op, const float* a, const float* b, int64_t b_numel, float* out, int64_t n,
                         cudaStream_t stream) {
  switch (op) {
    case BinaryOp::kAdd: return Binary(kernels::AddFn{}, a, b, b_numel, out, n, stream);
    case BinaryOp::kSub: return Binary(kernels::SubFn{}, a, b, b_numel, out, n, stream);
    case BinaryOp::kMul: return Binary(kernels::MulFn{}, a, b, b_numel, out, n, stream);
    case BinaryOp::kDiv: return Binary(kernels::DivFn{}, a, b, b_numel, out, n, stream);
    case BinaryOp::kMax: return Binary(kernels::MaxFn{}, a, b, b_numel, out, n, stream);
    case BinaryOp::kMin: return Binary(kernels::MinFn{}, a, b, b_numel, out, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchUnary(UnaryOp op, float alpha, const float* x, float* out, int64_t n, cudaStream_t stream) {
  switch (op) {
    case UnaryOp::kNeg: return Unary(kernels::NegFn{}, x, out, n, stream);
    case UnaryOp::kExp: return Unary(kernels::ExpFn{}, x, out, n, stream);
    case UnaryOp::kLog: return Unary(kernels::LogFn{}, x, out, n, stream);
    case UnaryOp::kSqrt: return Unary(kernels::SqrtFn{}, x, out, n, stream);
    case UnaryOp::kAbs: return Unary(kernels::AbsFn{}, x, out, n, stream);
    case UnaryOp::kSquare: return Unary(kernels::SquareFn{}, x, out, n, stream);
    case UnaryOp::kAddScalar: return Unary(kernels::AddScalarFn{alpha}, x, out, n, stream);
    case UnaryOp::kMulScalar: return Unary(kernels::MulScalarFn{alpha}, x, out, n, stream);
    case UnaryOp::kClampMin: return Unary(kernels::ClampMinFn{alpha}, x, out, n, stream);
    case UnaryOp::kPowScalar:
      // The same exact special cases as the CPU loop, so both devices round identically.
      if (alpha == 2.0f) return Unary(kernels::SquareFn{}, x, out, n, stream);
      if (alpha == 1.0f) return Unary(kernels::MulScalarFn{1.0f}, x, out, n, stream);
      if (alpha == 0.5f) return Unary(kernels::SqrtFn{}, x, out, n, stream);
      if (alpha == -1.0f) return Unary(kernels::ReciprocalFn{}, x, out, n, stream);
      return Unary(kernels::PowScalarFn{alpha}, x, out, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchAxpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AccumulateKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(kernels::AxpyFn{alpha}, x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchMaskScale(const float* x, const uint8_t* mask, float scale, float* out, int64_t n,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MaskScaleKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(kernels::MaskScaleFn{scale}, x, mask, out, n);
  return cudaGetLastError();
}

cudaError_t LaunchGeluForward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  return Unary(kernels::GeluFn{}, x, y, n, stream);
}

cudaError_t LaunchGeluBackward(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  GeluBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(kernels::GeluBackwardFn{}, x, dy, dx, n);
  return cudaGetLastError();
}

}  // namespace geomx::cuda
