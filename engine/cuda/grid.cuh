// Grid helpers shared by the .cu files of engine/cuda/: a grid-stride loop over [0, n) and the launch geometry for
// it. Device-side only; included by nvcc translation units.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace geomx::cuda {

inline constexpr int kThreadsPerBlock = 256;
// Enough blocks to fill an H100 (132 SMs x 2048 threads) several times over; larger n loops inside the kernel.
inline constexpr int64_t kMaxBlocks = 8192;

inline unsigned BlocksFor(int64_t n, int threads = kThreadsPerBlock) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks < 1 ? 1 : blocks) : kMaxBlocks);
}

// First index and stride of the calling thread in a grid-stride loop (64-bit: tensors may exceed 2^31 elements).
__device__ inline int64_t GridStart() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(blockDim.x) * gridDim.x; }

}  // namespace geomx::cuda
