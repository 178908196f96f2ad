// Storage: a ref-counted block of bytes owned through an Allocator (shared by tensors and their views).
// Not copyable; shared via std::shared_ptr<Storage>. The Allocator must outlive the Storage (backends are
// process-lifetime objects, so this holds).
#pragma once

#include <cstddef>
#include <memory>

#include "engine/allocator.h"

namespace geomx {

class Storage {
 public:
  // Allocates `nbytes` on `allocator`'s device. Aborts (GEOMX_CHECK) on allocation failure: tensors are created
  // deep inside math code where there is no Status to return. Use TryCreate at edges that can recover.
  static std::shared_ptr<Storage> Create(Allocator& allocator, size_t nbytes);
  static Result<std::shared_ptr<Storage>> TryCreate(Allocator& allocator, size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return allocator_->device(); }

 private:
  Storage(Allocator* allocator, void* data, size_t nbytes) : allocator_(allocator), data_(data), nbytes_(nbytes) {}
  Allocator* allocator_;  // not owned
  void* data_;
  size_t nbytes_;
};

}  // namespace geomx
