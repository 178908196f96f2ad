// CudaAllocator: a caching allocator for the memory of one CUDA device. Thread-safe; counts bytes in use.
//
// cudaMalloc/cudaFree are slow (cudaFree synchronises the whole device), and a training step allocates the same
// activation and gradient sizes every iteration. So freed blocks are parked in free lists keyed by a rounded
// size and handed out again for the next request of that size:
//   - below large_threshold_bytes, sizes round up to a multiple of small_granule_bytes (512 B);
//   - from there on, to a multiple of 1/8 of the size's power of two (<= 12.5% waste: 1.0, 1.125, ... 2 MiB).
// Reuse is safe without events because every kernel and copy of the backend runs on its single stream: a block
// freed on the host while queued work still reads it is handed out again only to work queued after that work.
//
// When cudaMalloc fails, every cached block is returned to the driver and the allocation is retried once; if it
// still fails, Allocate returns kResourceExhausted (never aborts). The destructor returns every cached block.
// Blocks still owned by live tensors at destruction are leaked on purpose (backends are never destroyed while
// tensors exist, backend_registry.cc).
//
// The device is the calling thread's current CUDA device, which is device 0 for every thread: the CUDA backend
// drives cuda:0 only (docs/architecture.md, "CUDA backend").
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/allocator.h"

namespace geomx {

struct CudaAllocatorOptions {
  size_t small_granule_bytes = 512;          // rounding below large_threshold_bytes; also cudaMalloc's alignment
  size_t large_threshold_bytes = 1 << 20;    // from here on, round to 1/8 of the size's power of two
  size_t max_cached_bytes = ~size_t{0};      // free-but-cached bytes above this go back to the driver at Free
};

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(Device device, CudaAllocatorOptions options = {});
  ~CudaAllocator() override;  // returns every cached block
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;

  Device device() const override { return device_; }
  Result<void*> Allocate(size_t nbytes) override;
  void Free(void* ptr, size_t nbytes) override;
  size_t bytes_in_use() const override { return in_use_.load(std::memory_order_relaxed); }
  // Bytes parked in the free lists (allocated from the driver, not in use).
  size_t bytes_cached() const;
  // Returns every cached block to the driver (cudaFree: synchronises the device). Done automatically when an
  // allocation fails.
  void ReleaseCached();
  // The size class `nbytes` is rounded to (exposed for tests).
  size_t RoundedSize(size_t nbytes) const;

 private:
  const Device device_;
  const CudaAllocatorOptions options_;
  std::atomic<size_t> in_use_{0};
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // guarded by mu_; rounded size -> blocks
  size_t cached_bytes_ = 0;                               // guarded by mu_
};

}  // namespace geomx
