// Bytes: a shared, reference-counted byte buffer with zero-copy slicing (ps-lite's SArray<char> idea).
// Copying a Bytes shares the buffer. The bytes may be written through mutable_data() only while the creator is
// the sole owner (before the buffer is handed to a Van or another thread); after that treat them as immutable.
// The owner can be anything kept alive by a shared_ptr (a std::vector, a zmq_msg_t, a Tensor's storage), so
// received frames and tensor data can be wrapped without a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/check.h"

namespace geomx {

class Bytes {
 public:
  Bytes() = default;
  // n uninitialised bytes.
  explicit Bytes(size_t n) : size_(n) {
    std::shared_ptr<uint8_t[]> buf(new uint8_t[n > 0 ? n : 1]);
    data_ = buf.get();
    owner_ = std::move(buf);
  }
  static Bytes Copy(const void* p, size_t n) {
    Bytes b(n);
    if (n > 0) std::memcpy(b.data_, p, n);
    return b;
  }
  static Bytes Copy(std::string_view s) { return Copy(s.data(), s.size()); }
  template <typename T>
  static Bytes CopyVector(const std::vector<T>& v) {
    return Copy(v.data(), v.size() * sizeof(T));
  }
  // Wraps memory kept alive by `owner` (no copy).
  static Bytes Wrap(std::shared_ptr<const void> owner, const void* data, size_t n) {
    Bytes b;
    b.owner_ = std::move(owner);
    b.data_ = static_cast<uint8_t*>(const_cast<void*>(data));
    b.size_ = n;
    return b;
  }

  const uint8_t* data() const { return data_; }
  uint8_t* mutable_data() { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Bytes [offset, offset + n) sharing this buffer.
  Bytes Slice(size_t offset, size_t n) const {
    GEOMX_CHECK_LE(offset + n, size_);
    Bytes b = *this;
    b.data_ = data_ + offset;
    b.size_ = n;
    return b;
  }
  // The bytes viewed as an array of T; size() must be a multiple of sizeof(T).
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data_);
  }
  template <typename T>
  size_t count() const {
    return size_ / sizeof(T);
  }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  // For zero-copy hand-off (e.g. to zmq_msg_init_data): the owner keeping data() alive.
  const std::shared_ptr<const void>& owner() const { return owner_; }

 private:
  std::shared_ptr<const void> owner_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace geomx
