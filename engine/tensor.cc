#include "engine/tensor.h"

#include <cstring>

#include "engine/backend_registry.h"
#include "engine/ops.h"

namespace geomx {

Tensor Tensor::Empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape.dims()) GEOMX_CHECK_GE(d, 0) << "Tensor::Empty: negative dimension in " << shape.ToString();
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = Storage::Create(BackendFor(device).allocator(), static_cast<size_t>(shape.numel()) * SizeOf(dtype));
  return t;
}

Tensor Tensor::Zeros(const Shape& shape, DType dtype, Device device) { return Full(shape, 0.0f, dtype, device); }

Tensor Tensor::Full(const Shape& shape, float value, DType dtype, Device device) {
  Tensor t = Empty(shape, dtype, device);
  GEOMX_CHECK_OK(BackendFor(device).Fill(value, &t));
  return t;
}

Tensor Tensor::FromVector(const std::vector<float>& values, const Shape& shape, Device device) {
  GEOMX_CHECK_EQ(static_cast<int64_t>(values.size()), shape.numel())
      << "Tensor::FromVector: value count does not match " << shape.ToString();
  Tensor t = Empty(shape, DType::kF32, device);
  GEOMX_CHECK_OK(BackendFor(device).CopyFromHost(values.data(), t.nbytes(), &t));
  return t;
}

Tensor Tensor::FromVectorI64(const std::vector<int64_t>& values, const Shape& shape, Device device) {
  GEOMX_CHECK_EQ(static_cast<int64_t>(values.size()), shape.numel())
      << "Tensor::FromVectorI64: value count does not match " << shape.ToString();
  Tensor t = Empty(shape, DType::kI64, device);
  GEOMX_CHECK_OK(BackendFor(device).CopyFromHost(values.data(), t.nbytes(), &t));
  return t;
}

Tensor Tensor::Reshape(const Shape& shape) const {
  GEOMX_CHECK(defined()) << "Tensor::Reshape on an undefined tensor";
  std::vector<int64_t> dims = shape.dims();
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      GEOMX_CHECK_EQ(infer, -1) << "Tensor::Reshape: more than one -1 in " << shape.ToString();
      infer = static_cast<int>(i);
    } else {
      GEOMX_CHECK_GE(dims[i], 0) << "Tensor::Reshape: bad dimension in " << shape.ToString();
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    GEOMX_CHECK(known > 0 && numel() % known == 0)
        << "Tensor::Reshape: cannot infer -1 in " << shape.ToString() << " from " << shape_.ToString();
    dims[static_cast<size_t>(infer)] = numel() / known;
  }
  Tensor t = *this;
  t.shape_ = Shape(std::move(dims));
  GEOMX_CHECK_EQ(t.numel(), numel()) << "Tensor::Reshape: " << shape_.ToString() << " -> " << shape.ToString();
  return t;
}

Tensor Tensor::Slice0(int64_t begin, int64_t end) const {
  GEOMX_CHECK(defined() && rank() >= 1) << "Tensor::Slice0 needs a defined tensor of rank >= 1";
  GEOMX_CHECK(begin >= 0 && begin <= end && end <= dim(0))
      << "Tensor::Slice0(" << begin << ", " << end << ") of " << shape_.ToString();
  std::vector<int64_t> dims = shape_.dims();
  dims[0] = end - begin;
  Tensor t = *this;
  t.offset_ += static_cast<size_t>(begin * shape_.numel_from(1)) * SizeOf(dtype_);
  t.shape_ = Shape(std::move(dims));
  return t;
}

Tensor Tensor::To(Device device) const {
  GEOMX_CHECK(defined()) << "Tensor::To on an undefined tensor";
  if (this->device() == device) return *this;
  Tensor t = Empty(shape_, dtype_, device);
  t.CopyFrom(*this);
  return t;
}

Tensor Tensor::Clone() const {
  GEOMX_CHECK(defined()) << "Tensor::Clone on an undefined tensor";
  Tensor t = Empty(shape_, dtype_, device());
  t.CopyFrom(*this);
  return t;
}

void Tensor::CopyFrom(const Tensor& src) {
  GEOMX_CHECK(defined() && src.defined()) << "Tensor::CopyFrom with an undefined tensor";
  GEOMX_CHECK(shape_ == src.shape_ && dtype_ == src.dtype_)
      << "Tensor::CopyFrom: " << src.ToString() << " into " << ToString();
  const Device dst_dev = device();
  const Device src_dev = src.device();
  if (dst_dev.kind == src_dev.kind) {
    GEOMX_CHECK_OK(BackendFor(dst_dev).Copy(src, this));
  } else if (src_dev.is_cpu()) {
    GEOMX_CHECK_OK(BackendFor(dst_dev).CopyFromHost(src.raw_data(), nbytes(), this));
  } else if (dst_dev.is_cpu()) {
    GEOMX_CHECK_OK(BackendFor(src_dev).CopyToHost(src, raw_data(), nbytes()));
  } else {
    CopyFrom(src.To(Device::Cpu()));  // between two different accelerator kinds: stage through the host
  }
}

std::vector<float> Tensor::ToFloatVector() const {
  GEOMX_CHECK(defined()) << "Tensor::ToFloatVector on an undefined tensor";
  const Tensor f = dtype_ == DType::kF32 ? *this : ops::Cast(*this, DType::kF32);
  std::vector<float> out(static_cast<size_t>(numel()));
  if (!out.empty()) GEOMX_CHECK_OK(BackendFor(f.device()).CopyToHost(f, out.data(), f.nbytes()));
  return out;
}

std::vector<int64_t> Tensor::ToI64Vector() const {
  GEOMX_CHECK(defined()) << "Tensor::ToI64Vector on an undefined tensor";
  const Tensor t = dtype_ == DType::kI64 ? *this : ops::Cast(*this, DType::kI64);
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  if (!out.empty()) GEOMX_CHECK_OK(BackendFor(t.device()).CopyToHost(t, out.data(), t.nbytes()));
  return out;
}

float Tensor::item() const {
  GEOMX_CHECK_EQ(numel(), 1) << "Tensor::item on " << ToString();
  return ToFloatVector()[0];
}

std::string Tensor::ToString() const {
  if (!defined()) return "Tensor(undefined)";
  return "Tensor(" + std::string(DTypeName(dtype_)) + ", " + shape_.ToString() + ", " + device().ToString() + ")";
}

}  // namespace geomx
