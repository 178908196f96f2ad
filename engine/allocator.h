// Allocator: raw byte allocation on one device. Implementations: CpuAllocator (64-byte aligned, engine/cpu/),
// a caching CUDA allocator later (engine/cuda/). Thread-safe.
#pragma once

#include <cstddef>

#include "engine/base/status.h"
#include "engine/device.h"

namespace geomx {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns a non-null pointer (even for 0 bytes) or kResourceExhausted.
  virtual Result<void*> Allocate(size_t nbytes) = 0;
  virtual void Free(void* ptr, size_t nbytes) = 0;
  // Bytes currently allocated through this allocator (for memory reports).
  virtual size_t bytes_in_use() const = 0;
};

}  // namespace geomx
