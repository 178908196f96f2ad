// Shape: the dimensions of a dense, contiguous, row-major tensor. Value type.
// Tensors in geomx are always contiguous; views are offsets (Slice0) or reshapes of contiguous storage.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace geomx {

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar with numel 1
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  // dim(i) with i in [-rank, rank); negative counts from the end. Checks bounds.
  int64_t dim(int i) const;
  int64_t operator[](int i) const { return dim(i); }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;
  // Product of dims from `from` (inclusive) to the end: the row size below dimension from-1.
  int64_t numel_from(int from) const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  // "[32, 1, 28, 28]"
  std::string ToString() const;

 private:
  std::vector<int64_t> dims_;
};

}  // namespace geomx
