#include "engine/cpu/cpu_allocator.h"

#include <cstdlib>
#include <string>

namespace geomx {

namespace {

constexpr size_t kAlignment = 64;  // a cache line; what oneDNN and AVX-512 loads prefer
constexpr size_t kPage = 4096;     // cached blocks are page-rounded so near-equal sizes share a bucket

size_t RoundUp(size_t n, size_t to) { return n == 0 ? to : (n + to - 1) / to * to; }

}  // namespace

CpuAllocator::~CpuAllocator() { ReleaseCached(); }

Result<void*> CpuAllocator::Allocate(size_t nbytes) {
  const bool cacheable = nbytes >= options_.min_cached_bytes;
  const size_t rounded = cacheable ? RoundUp(nbytes, kPage) : RoundUp(nbytes, kAlignment);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(rounded);
    if (it != cache_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= rounded;
      in_use_.fetch_add(nbytes, std::memory_order_relaxed);
      return p;
    }
  }
  // aligned_alloc requires the size to be a multiple of the alignment; 0 bytes still yields a unique pointer.
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr && cacheable) {
    ReleaseCached();  // memory parked in the cache may be what the system is missing
    p = std::aligned_alloc(kAlignment, rounded);
  }
  if (p == nullptr) {
    return Status::ResourceExhausted("cpu: cannot allocate " + std::to_string(nbytes) + " bytes");
  }
  in_use_.fetch_add(nbytes, std::memory_order_relaxed);
  return p;
}

void CpuAllocator::Free(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  in_use_.fetch_sub(nbytes, std::memory_order_relaxed);
  if (nbytes >= options_.min_cached_bytes) {
    const size_t rounded = RoundUp(nbytes, kPage);
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + rounded <= options_.max_cached_bytes) {
      cache_[rounded].push_back(ptr);
      cached_bytes_ += rounded;
      return;
    }
  }
  std::free(ptr);
}

size_t CpuAllocator::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_bytes_;
}

void CpuAllocator::ReleaseCached() {
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(cache_);
    cached_bytes_ = 0;
  }
  for (auto& [size, ptrs] : blocks) {
    for (void* p : ptrs) std::free(p);
  }
}

}  // namespace geomx
