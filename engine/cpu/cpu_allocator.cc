#include "engine/cpu/cpu_allocator.h"

#include <cstdlib>
#include <string>

namespace geomx {

namespace {
constexpr size_t kAlignment = 64;  // a cache line; what oneDNN and AVX-512 loads prefer
size_t RoundUp(size_t n) { return n == 0 ? kAlignment : (n + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

Result<void*> CpuAllocator::Allocate(size_t nbytes) {
  // aligned_alloc requires the size to be a multiple of the alignment; 0 bytes still yields a unique pointer.
  void* p = std::aligned_alloc(kAlignment, RoundUp(nbytes));
  if (p == nullptr) {
    return Status::ResourceExhausted("cpu: cannot allocate " + std::to_string(nbytes) + " bytes");
  }
  in_use_.fetch_add(nbytes, std::memory_order_relaxed);
  return p;
}

void CpuAllocator::Free(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  std::free(ptr);
  in_use_.fetch_sub(nbytes, std::memory_order_relaxed);
}

}  // namespace geomx
