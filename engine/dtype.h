// Element types. Compute is f32; f16/bf16 exist for storage and transmission; integer types hold labels/indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/half.h"

namespace geomx {

enum class DType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kI32 = 3, kI64 = 4, kU8 = 5 };

constexpr size_t SizeOf(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
  }
  return 0;
}

// "f32", "f16", "bf16", "i32", "i64", "u8".
std::string_view DTypeName(DType t);
// Inverse of DTypeName; false when unknown.
bool ParseDType(std::string_view name, DType* out);

// Maps a C++ type to its DType (float -> kF32, ...). Used by Tensor::data<T>() checks.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBF16; };

// The one dtype dispatch (docs/style.md R18): calls fn(T{}) with the C++ element type of `t` (Half / BFloat16
// for the 16-bit float types) and returns its result.
template <typename Fn>
decltype(auto) VisitDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32: return fn(float{});
    case DType::kF16: return fn(Half{});
    case DType::kBF16: return fn(BFloat16{});
    case DType::kI32: return fn(int32_t{});
    case DType::kI64: return fn(int64_t{});
    case DType::kU8: return fn(uint8_t{});
  }
  return fn(float{});  // unreachable for valid enum values
}

}  // namespace geomx
