// Reductions, arg-max and the fused softmax cross-entropy: kernels over the functors of engine/kernels/
// elementwise.h and cross_entropy.h (the CPU loops use the same ones). Declarations and contracts: cuda_kernels.h.
#include <cstdint>

#include "engine/cuda/cuda_kernels.h"
#include "engine/cuda/grid.cuh"
#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/elementwise.h"

namespace geomx::cuda {

namespace {

using kernels::MaxReduce;
using kernels::SumReduce;

constexpr int kRowThreads = 256;  // one block per reduced row

// Sums accumulate in double, like the CPU's contiguous reduction (accuracy over millions of similar values); max
// runs the functor in float.
__device__ inline double Combine(SumReduce, double acc, double x) { return acc + x; }
__device__ inline float Combine(MaxReduce r, float acc, float x) { return r(acc, x); }

// inner == 1: each block reduces whole contiguous rows of `red` values (grid-stride over rows), threads striding
// through the row, then a tree in shared memory.
template <typename R, typename Acc>
__global__ void ReduceRowsKernel(R r, const float* x, int64_t outer, int64_t red, float scale, float* out) {
  __shared__ Acc partial[kRowThreads];
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    const float* row = x + o * red;
    Acc acc = R::Init();
    for (int64_t k = threadIdx.x; k < red; k += blockDim.x) acc = Combine(r, acc, row[k]);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] = Combine(r, partial[threadIdx.x], partial[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = static_cast<float>(partial[0]) * scale;
    __syncthreads();  // partial[] is reused by the next row
  }
}

// inner > 1: one thread per output element, combining rows in memory order with the functor (like the CPU's
// row-wise loop); neighbouring threads read neighbouring columns, so loads coalesce.
template <typename R>
__global__ void ReduceColumnsKernel(R r, const float* x, int64_t outer, int64_t red, int64_t inner, float scale,
                                    float* out) {
  for (int64_t i = GridStart(); i < outer * inner; i += GridStride()) {
    const int64_t o = i / inner, c = i % inner;
    const float* p = x + o * red * inner + c;
    float acc = R::Init();
    for (int64_t k = 0; k < red; ++k) acc = r(acc, p[k * inner]);
    out[i] = scale == 1.0f ? acc : acc * scale;
  }
}

__global__ void ArgMaxKernel(const float* x, int64_t n, int64_t c, int64_t* out) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    const float* row = x + i * c;
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j) {
      if (row[j] > row[best]) best = j;  // first maximum wins
    }
    out[i] = best;
  }
}

__device__ inline bool LabelOk(int64_t label, int64_t c, int64_t row, int64_t* bad_row) {
  if (label >= 0 && label < c) return true;
  atomicMin(reinterpret_cast<long long*>(bad_row), static_cast<long long>(row));
  return false;
}

__global__ void SoftmaxCrossEntropyForwardKernel(const float* logits, const int64_t* labels, int64_t n, int64_t c,
                                                 float* loss, float* probs, int64_t* bad_row) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    if (!LabelOk(labels[i], c, i, bad_row)) continue;
    loss[i] = kernels::SoftmaxCrossEntropyRow(logits + i * c, c, labels[i], probs + i * c);
  }
}

__global__ void SoftmaxCrossEntropyBackwardKernel(const float* probs, const int64_t* labels, int64_t n, int64_t c,
                                                  float scale, float* dlogits, int64_t* bad_row) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    if (!LabelOk(labels[i], c, i, bad_row)) continue;
    kernels::SoftmaxCrossEntropyBackwardRow(probs + i * c, c, labels[i], scale, dlogits + i * c);
  }
}

template <typename R, typename Acc>
cudaError_t Reduce(R r, const float* x, int64_t outer, int64_t red, int64_t inner, float scale, float* out,
                   cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  if (inner == 1) {
    const unsigned blocks = static_cast<unsigned>(outer < kMaxBlocks ? outer : kMaxBlocks);
    ReduceRowsKernel<R, Acc><<<blocks, kRowThreads, 0, stream>>>(r, x, outer, red, scale, out);
  } else {
    ReduceColumnsKernel<R><<<BlocksFor(outer * inner), kThreadsPerBlock, 0, stream>>>(r, x, outer, red, inner, scale,
                                                                                       out);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchReduce(ReduceOp op, const float* x, int64_t outer, int64_t red, int64_t inner, float* out,
                         cudaStream_t stream) {
  switch (op) {
    case ReduceOp::kSum: return Reduce<SumReduce, double>(SumReduce{}, x, outer, red, inner, 1.0f, out, stream);
    case ReduceOp::kMean: {
      const float scale = static_cast<float>(1.0 / static_cast<double>(red));  // the CPU's scale, bit for bit
      return Reduce<SumReduce, double>(SumReduce{}, x, outer, red, inner, scale, out, stream);
    }
    case ReduceOp::kMax: return Reduce<MaxReduce, float>(MaxReduce{}, x, outer, red, inner, 1.0f, out, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchArgMax(const float* x, int64_t n, int64_t c, int64_t* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ArgMaxKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(x, n, c, out);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxCrossEntropyForward(const float* logits, const int64_t* labels, int64_t n, int64_t c,
                                             float* loss, float* probs, int64_t* bad_row, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(bad_row, 0x7f, sizeof(int64_t), stream);  // = kNoBadRow
  if (err != cudaSuccess || n == 0) return err;
  SoftmaxCrossEntropyForwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(logits, labels, n, c, loss, probs,
                                                                                   bad_row);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxCrossEntropyBackward(const float* probs, const int64_t* labels, int64_t n, int64_t c,
                                              float scale, float* dlogits, int64_t* bad_row, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(bad_row, 0x7f, sizeof(int64_t), stream);
  if (err != cudaSuccess || n == 0) return err;
  SoftmaxCrossEntropyBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(probs, labels, n, c, scale,
                                                                                    dlogits, bad_row);
  return cudaGetLastError();
}

}  // namespace geomx::cuda
