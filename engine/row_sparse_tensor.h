// RowSparseTensor: a dense f32 [num_rows, width] tensor of which only some rows are stored; every other row is
// zero. It is the gradient of an embedding table (ops::EmbeddingBackward, autograd::Embedding): the rows a batch
// touched and their summed gradient rows, never the dense [V, D] table. The layout is what a row-sparse
// parameter-server push takes (algorithms/ps/ps_context.h PushRows: row ids plus rows.size() x width values).
//
// A value type (copies share the values' storage, like Tensor). Invariants, checked by the ops that take one
// (engine/ops.h RowSparseToDense, AddRowSparse): values is f32 [rows.size(), width]; rows are strictly
// increasing and each in [0, num_rows). Not thread-safe for concurrent writes (Tensor).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/shape.h"
#include "engine/tensor.h"

namespace geomx {

struct RowSparseTensor {
  std::vector<int64_t> rows;  // host memory: the stored row ids, strictly increasing
  Tensor values;              // f32 [rows.size(), width] on the device of the dense tensor it stands for
  int64_t num_rows = 0;       // the dense tensor's first dimension

  // Undefined: a default-constructed value (no gradient). A defined one may hold zero rows.
  bool defined() const { return values.defined(); }
  int64_t width() const { return values.dim(1); }
  Shape dense_shape() const { return Shape{num_rows, values.dim(1)}; }
};

}  // namespace geomx
