// Tensor: metadata (Shape, DType, Device, byte offset) over shared Storage. No math methods: math lives in
// engine/ops.h. Copying a Tensor is cheap and shares storage (like a shared_ptr); Clone() copies the data.
// Tensors are contiguous and row-major. Not thread-safe for concurrent writes to the same storage.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/check.h"
#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/shape.h"
#include "engine/storage.h"

namespace geomx {

class Tensor {
 public:
  Tensor() = default;  // undefined (defined() == false)

  // Uninitialised memory on `device`.
  static Tensor Empty(const Shape& shape, DType dtype = DType::kF32, Device device = Device::Cpu());
  static Tensor Zeros(const Shape& shape, DType dtype = DType::kF32, Device device = Device::Cpu());
  static Tensor Full(const Shape& shape, float value, DType dtype = DType::kF32, Device device = Device::Cpu());
  // Copies host data into a new tensor on `device`. values.size() must equal shape.numel().
  static Tensor FromVector(const std::vector<float>& values, const Shape& shape, Device device = Device::Cpu());
  static Tensor FromVectorI64(const std::vector<int64_t>& values, const Shape& shape,
                              Device device = Device::Cpu());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::Cpu(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * SizeOf(dtype_); }

  // Pointer to the first element (a device pointer for non-CPU tensors).
  void* raw_data() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T>
  T* data() const {
    GEOMX_CHECK(dtype_ == DTypeOf<T>::value) << "Tensor::data<T>: dtype is " << DTypeName(dtype_);
    return static_cast<T*>(raw_data());
  }

  // A view with the same storage and a new shape of equal numel. One dim may be -1 (inferred).
  Tensor Reshape(const Shape& shape) const;
  // A view of rows [begin, end) along dimension 0.
  Tensor Slice0(int64_t begin, int64_t end) const;
  // A copy on `device` (or *this when already there and !force_copy).
  Tensor To(Device device) const;
  // A deep copy on the same device.
  Tensor Clone() const;
  // Copies `src` (same shape and dtype, any device) into this tensor's memory.
  void CopyFrom(const Tensor& src);
  // Host copy converted to float (any dtype), for tests, checkpoints and printing.
  std::vector<float> ToFloatVector() const;
  // Host copy of an i64 tensor.
  std::vector<int64_t> ToI64Vector() const;
  // For scalar-like tensors (numel == 1): the value as float.
  float item() const;

  bool SharesStorageWith(const Tensor& o) const { return storage_ == o.storage_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // "Tensor(f32, [2, 3], cpu)"
  std::string ToString() const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::kF32;
  size_t offset_ = 0;  // bytes into storage_
};

}  // namespace geomx
