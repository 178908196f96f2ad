// CpuBackend: construction, threads, memory movement and dtype casts. The dense ops live in onednn_*.cc, the
// elementwise math in cpu_elementwise.cc.
#include "engine/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/cpu/onednn_context.h"
#include "engine/half.h"

namespace geomx {

namespace {

// Element <-> double, through float for the 16-bit float types. double holds every f32, i32 and u8 exactly and
// i64 up to 2^53 (labels and indices are far below that).
template <typename T>
double LoadAsDouble(T v) {
  return static_cast<double>(v);
}
template <>
double LoadAsDouble(Half v) {
  return HalfBitsToFloat(v.bits);
}
template <>
double LoadAsDouble(BFloat16 v) {
  return BFloat16BitsToFloat(v.bits);
}

template <typename T>
T StoreFromDouble(double v) {
  return static_cast<T>(v);
}
template <>
Half StoreFromDouble(double v) {
  return Half{FloatToHalfBits(static_cast<float>(v))};
}
template <>
BFloat16 StoreFromDouble(double v) {
  return BFloat16{FloatToBFloat16Bits(static_cast<float>(v))};
}

Status CheckBytes(const char* op, size_t nbytes, const Tensor& t) {
  if (nbytes != t.nbytes()) {
    return Status::InvalidArgument(std::string(op) + ": " + std::to_string(nbytes) + " bytes for " + t.ToString() +
                                   " (" + std::to_string(t.nbytes()) + " bytes)");
  }
  return Status::Ok();
}

}  // namespace

CpuBackend::CpuBackend() : dnn_(std::make_unique<OneDnnContext>()) {}

CpuBackend::~CpuBackend() = default;

void CpuBackend::SetNumThreads(int n) { dnn_->SetNumThreads(n); }

Status CpuBackend::CopyFromHost(const void* src, size_t nbytes, Tensor* dst) {
  GEOMX_RETURN_IF_ERROR(CheckBytes("CopyFromHost", nbytes, *dst));
  if (nbytes > 0) std::memcpy(dst->raw_data(), src, nbytes);
  return Status::Ok();
}

Status CpuBackend::CopyToHost(const Tensor& src, void* dst, size_t nbytes) {
  GEOMX_RETURN_IF_ERROR(CheckBytes("CopyToHost", nbytes, src));
  if (nbytes > 0) std::memcpy(dst, src.raw_data(), nbytes);
  return Status::Ok();
}

Status CpuBackend::Copy(const Tensor& src, Tensor* dst) {
  GEOMX_RETURN_IF_ERROR(CheckBytes("Copy", src.nbytes(), *dst));
  if (src.nbytes() > 0 && src.raw_data() != dst->raw_data()) {
    std::memmove(dst->raw_data(), src.raw_data(), src.nbytes());  // memmove: views of one storage may overlap
  }
  return Status::Ok();
}

Status CpuBackend::Fill(float value, Tensor* dst) {
  const size_t n = static_cast<size_t>(dst->numel());
  if (value == 0.0f && !std::signbit(value)) {
    if (n > 0) std::memset(dst->raw_data(), 0, dst->nbytes());  // +0 is all-zero bits in every dtype
    return Status::Ok();
  }
  VisitDType(dst->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = StoreFromDouble<T>(value);
    T* p = static_cast<T*>(dst->raw_data());
    std::fill(p, p + n, v);
  });
  return Status::Ok();
}

Status CpuBackend::CopyBlocks(const Tensor& src, Tensor* dst, int64_t rows, size_t row_bytes, size_t src_stride,
                              size_t dst_stride, size_t src_offset, size_t dst_offset) {
  if (rows <= 0 || row_bytes == 0) return Status::Ok();
  const char* s = static_cast<const char*>(src.raw_data()) + src_offset;
  char* d = static_cast<char*>(dst->raw_data()) + dst_offset;
  for (int64_t r = 0; r < rows; ++r, s += src_stride, d += dst_stride) std::memcpy(d, s, row_bytes);
  return Status::Ok();
}

Status CpuBackend::Cast(const Tensor& src, Tensor* dst) {
  if (src.numel() != dst->numel()) {
    return Status::InvalidArgument("Cast: " + src.ToString() + " into " + dst->ToString());
  }
  const size_t n = static_cast<size_t>(src.numel());
  if (src.dtype() == dst->dtype()) return Copy(src, dst);
  // The conversions on the hot path (fp16 compression, mixed-precision storage) get the vectorised routines.
  if (src.dtype() == DType::kF32 && dst->dtype() == DType::kF16) {
    FloatToHalf(static_cast<const float*>(src.raw_data()), static_cast<uint16_t*>(dst->raw_data()), n);
    return Status::Ok();
  }
  if (src.dtype() == DType::kF16 && dst->dtype() == DType::kF32) {
    HalfToFloat(static_cast<const uint16_t*>(src.raw_data()), static_cast<float*>(dst->raw_data()), n);
    return Status::Ok();
  }
  VisitDType(src.dtype(), [&](auto src_tag) {
    using S = decltype(src_tag);
    const S* in = static_cast<const S*>(src.raw_data());
    VisitDType(dst->dtype(), [&](auto dst_tag) {
      using D = decltype(dst_tag);
      D* out = static_cast<D*>(dst->raw_data());
      for (size_t i = 0; i < n; ++i) out[i] = StoreFromDouble<D>(LoadAsDouble(in[i]));
    });
  });
  return Status::Ok();
}

}  // namespace geomx
