// CpuAllocator: 64-byte aligned host memory (what oneDNN prefers). Thread-safe; counts bytes in use.
//
// Large blocks are cached after Free and handed out again for the same (page-rounded) size. A training step
// allocates the same activation and gradient shapes every iteration; without the cache each multi-megabyte
// block comes back from the kernel as fresh pages, and faulting in and zeroing them costs as much as the math
// that fills them. Small blocks go straight to malloc, whose bins already recycle them.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/allocator.h"

namespace geomx {

struct CpuAllocatorOptions {
  size_t min_cached_bytes = 64 * 1024;           // blocks smaller than this are never cached
  size_t max_cached_bytes = size_t{1} << 30;     // cached-but-free bytes above this are returned to the system
};

class CpuAllocator final : public Allocator {
 public:
  explicit CpuAllocator(CpuAllocatorOptions options = {}) : options_(options) {}
  ~CpuAllocator() override;  // returns every cached block
  CpuAllocator(const CpuAllocator&) = delete;
  CpuAllocator& operator=(const CpuAllocator&) = delete;

  Device device() const override { return Device::Cpu(); }
  Result<void*> Allocate(size_t nbytes) override;
  void Free(void* ptr, size_t nbytes) override;
  size_t bytes_in_use() const override { return in_use_.load(); }
  // Bytes held in the cache (free for reuse, not in use).
  size_t bytes_cached() const;
  // Returns every cached block to the system (also done automatically when an allocation fails).
  void ReleaseCached();

 private:
  const CpuAllocatorOptions options_;
  std::atomic<size_t> in_use_{0};
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> cache_;  // guarded by mu_; page-rounded size -> free blocks
  size_t cached_bytes_ = 0;                                // guarded by mu_
};

}  // namespace geomx
