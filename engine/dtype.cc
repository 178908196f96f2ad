#include "engine/dtype.h"

namespace geomx {

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
  }
  return "unknown";
}

bool ParseDType(std::string_view name, DType* out) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8}) {
    if (DTypeName(t) == name) {
      *out = t;
      return true;
    }
  }
  return false;
}

}  // namespace geomx
