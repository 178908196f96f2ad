#include "engine/storage.h"

#include "engine/base/check.h"

namespace geomx {

std::shared_ptr<Storage> Storage::Create(Allocator& allocator, size_t nbytes) {
  auto r = TryCreate(allocator, nbytes);
  GEOMX_CHECK(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

Result<std::shared_ptr<Storage>> Storage::TryCreate(Allocator& allocator, size_t nbytes) {
  GEOMX_ASSIGN_OR_RETURN(void* data, allocator.Allocate(nbytes));
  // The constructor is private, so make_shared cannot reach it; ownership is still a single shared_ptr.
  return std::shared_ptr<Storage>(new Storage(&allocator, data, nbytes));
}

Storage::~Storage() { allocator_->Free(data_, nbytes_); }

}  // namespace geomx
