// CpuAllocator: 64-byte aligned host memory (what oneDNN prefers). Thread-safe; counts bytes in use.
#pragma once

#include <atomic>

#include "engine/allocator.h"

namespace geomx {

class CpuAllocator final : public Allocator {
 public:
  Device device() const override { return Device::Cpu(); }
  Result<void*> Allocate(size_t nbytes) override;
  void Free(void* ptr, size_t nbytes) override;
  size_t bytes_in_use() const override { return in_use_.load(); }

 private:
  std::atomic<size_t> in_use_{0};
};

}  // namespace geomx
