#include "engine/shape.h"

#include "engine/base/check.h"

namespace geomx {

int64_t Shape::dim(int i) const {
  const int r = rank();
  GEOMX_CHECK(i >= -r && i < r) << "Shape::dim(" << i << ") out of range for " << ToString();
  return dims_[static_cast<size_t>(i < 0 ? i + r : i)];
}

int64_t Shape::numel() const { return numel_from(0); }

int64_t Shape::numel_from(int from) const {
  GEOMX_CHECK(from >= 0 && from <= rank()) << "Shape::numel_from(" << from << ") for " << ToString();
  int64_t n = 1;
  for (size_t i = static_cast<size_t>(from); i < dims_.size(); ++i) n *= dims_[i];
  return n;
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

}  // namespace geomx
