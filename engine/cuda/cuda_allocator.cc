#include "engine/cuda/cuda_allocator.h"

#include <bit>
#include <string>

#include <cuda_runtime_api.h>

#include "engine/base/logging.h"
#include "engine/cuda/cuda_check.h"

namespace geomx {

namespace {

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string MiB(size_t bytes) { return std::to_string(bytes / (1024 * 1024)) + " MiB"; }

}  // namespace

CudaAllocator::CudaAllocator(Device device, CudaAllocatorOptions options) : device_(device), options_(options) {}

CudaAllocator::~CudaAllocator() { ReleaseCached(); }

size_t CudaAllocator::RoundedSize(size_t nbytes) const {
  if (nbytes < options_.large_threshold_bytes) {
    return RoundUp(nbytes == 0 ? 1 : nbytes, options_.small_granule_bytes);  // 0 bytes still get a unique block
  }
  const size_t step = std::bit_floor(nbytes) / 8;
  return RoundUp(nbytes, step < options_.small_granule_bytes ? options_.small_granule_bytes : step);
}

Result<void*> CudaAllocator::Allocate(size_t nbytes) {
  const size_t rounded = RoundedSize(nbytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= rounded;
      in_use_.fetch_add(nbytes, std::memory_order_relaxed);
      return p;
    }
  }
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, rounded);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it before retrying
    ReleaseCached();           // memory parked in the free lists may be exactly what is missing
    err = cudaMalloc(&p, rounded);
  }
  if (err != cudaSuccess) {
    // kResourceExhausted for out-of-memory, kFailedPrecondition without a usable driver/device (cuda_check.h).
    const Status s = CudaErrorStatus(err, "cudaMalloc", __FILE__, __LINE__);
    return Status(s.code(), device_.ToString() + ": cannot allocate " + std::to_string(nbytes) + " bytes (" +
                                MiB(rounded) + " rounded; " + MiB(bytes_in_use()) + " in use by tensors): " +
                                s.message());
  }
  in_use_.fetch_add(nbytes, std::memory_order_relaxed);
  return p;
}

void CudaAllocator::Free(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  in_use_.fetch_sub(nbytes, std::memory_order_relaxed);
  const size_t rounded = RoundedSize(nbytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + rounded <= options_.max_cached_bytes) {
      free_[rounded].push_back(ptr);
      cached_bytes_ += rounded;
      return;
    }
  }
  const cudaError_t err = cudaFree(ptr);  // synchronises the device: queued work on the block finishes first
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    GEOMX_LOG(kWarning) << device_.ToString() << ": cudaFree failed: " << cudaGetErrorString(err);
  }
}

size_t CudaAllocator::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_bytes_;
}

void CudaAllocator::ReleaseCached() {
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    cached_bytes_ = 0;
  }
  for (auto& [size, ptrs] : blocks) {
    for (void* p : ptrs) {
      // cudaFree waits for queued work, so a block freed by a tensor while a kernel still reads it is safe.
      if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();  // e.g. the driver is shutting down at exit
    }
  }
}

}  // namespace geomx
