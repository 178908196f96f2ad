// The ops of engine/ops.h that pick data by index: embedding lookup and its row-sparse gradient, the row-sparse
// tensor helpers, RoI crop-and-resize. Like ops.cc: shapes and dtypes abort, outputs are allocated here, the math
// is the backend's. Unlike the rest, index and box *values* are data and come back as kInvalidArgument; they are
// read on the host, which is also where the index lists of Backend::SegmentSumRows are built.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/check.h"
#include "engine/ops.h"
#include "engine/ops_checks.h"

namespace geomx::ops {

// ---- embedding lookup and row-sparse tensors ----

namespace {

Tensor DeviceI64(const std::vector<int64_t>& v, Device device) {
  return Tensor::FromVectorI64(v, Shape{static_cast<int64_t>(v.size())}, device);
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// Backend::SegmentSumRows with index lists built here on the host.
void SegmentSum(const Tensor& src, const std::vector<int64_t>& order, const std::vector<int64_t>& offsets,
                const std::vector<int64_t>& dst_rows, Tensor* out) {
  if (dst_rows.empty()) return;
  const Device d = out->device();
  GEOMX_CHECK_OK(BackendOf(*out).SegmentSumRows(src, DeviceI64(order, d), DeviceI64(offsets, d),
                                                DeviceI64(dst_rows, d), out));
}

// The first index outside [0, num_rows), as kInvalidArgument.
Status CheckIndexValues(const char* op, const std::vector<int64_t>& idx, int64_t num_rows) {
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= num_rows) {
      std::string msg = op;
      msg += ": index ";
      msg += std::to_string(idx[i]);
      msg += " at position ";
      msg += std::to_string(i);
      msg += " is outside the table's rows [0, ";
      msg += std::to_string(num_rows);
      msg += ")";
      return Status::InvalidArgument(msg);
    }
  }
  return Status::Ok();
}

void CheckIndexTensor(const char* op, const Tensor& indices, const Tensor& like) {
  CheckDefined(op, indices, "indices");
  GEOMX_CHECK(indices.dtype() == DType::kI64) << op << ": indices must be i64, got " << indices.ToString();
  CheckSameDevice(op, like, indices);
}

void CheckRowSparse(const char* op, const RowSparseTensor& s) {
  CheckF32(op, s.values, "values");
  GEOMX_CHECK(s.values.rank() == 2 && s.values.dim(0) == static_cast<int64_t>(s.rows.size()))
      << op << ": values " << s.values.shape().ToString() << " for " << s.rows.size() << " rows";
  for (size_t i = 0; i < s.rows.size(); ++i) {
    GEOMX_CHECK(s.rows[i] >= 0 && s.rows[i] < s.num_rows && (i == 0 || s.rows[i - 1] < s.rows[i]))
        << op << ": row ids must increase strictly within [0, " << s.num_rows << "), got " << s.rows[i]
        << " at " << i;
  }
}

}  // namespace

Result<Tensor> EmbeddingLookup(const Tensor& table, const Tensor& indices) {
  const char* op = "EmbeddingLookup";
  CheckF32(op, table, "table");
  GEOMX_CHECK_EQ(table.rank(), 2) << op << ": table must be [V, D], got " << table.shape().ToString();
  CheckIndexTensor(op, indices, table);
  GEOMX_RETURN_IF_ERROR(CheckIndexValues(op, indices.ToI64Vector(), table.dim(0)));
  std::vector<int64_t> dims = indices.shape().dims();
  dims.push_back(table.dim(1));
  Tensor out = Tensor::Empty(Shape(std::move(dims)), DType::kF32, table.device());
  Tensor rows = out.Reshape(Shape{indices.numel(), table.dim(1)});  // a view: the backend writes `out`
  GEOMX_CHECK_OK(BackendOf(table).GatherRows(table, indices.Reshape(Shape{indices.numel()}), &rows));
  return out;
}

Result<RowSparseTensor> EmbeddingBackward(const Tensor& dy, const Tensor& indices, int64_t num_rows) {
  const char* op = "EmbeddingBackward";
  CheckF32(op, dy, "dy");
  CheckIndexTensor(op, indices, dy);
  std::vector<int64_t> want = indices.shape().dims();
  GEOMX_CHECK(dy.rank() == indices.rank() + 1) << op << ": dy " << dy.shape().ToString() << " for indices "
                                               << indices.shape().ToString();
  want.push_back(dy.dim(-1));
  CheckShape(op, dy, Shape(std::move(want)), "dy");
  GEOMX_CHECK_GE(num_rows, 0) << op;
  const std::vector<int64_t> idx = indices.ToI64Vector();
  GEOMX_RETURN_IF_ERROR(CheckIndexValues(op, idx, num_rows));
  // Positions grouped by index (stable: increasing position within a group), one group per distinct index.
  std::vector<int64_t> order = Iota(static_cast<int64_t>(idx.size()));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return idx[static_cast<size_t>(a)] < idx[static_cast<size_t>(b)];
  });
  RowSparseTensor g;
  g.num_rows = num_rows;
  std::vector<int64_t> offsets{0};
  for (size_t j = 0; j < order.size(); ++j) {
    const int64_t row = idx[static_cast<size_t>(order[j])];
    if (g.rows.empty() || g.rows.back() != row) {
      if (!g.rows.empty()) offsets.push_back(static_cast<int64_t>(j));
      g.rows.push_back(row);
    }
  }
  if (!g.rows.empty()) offsets.push_back(static_cast<int64_t>(order.size()));
  const int64_t d = dy.dim(-1);
  g.values = Tensor::Zeros(Shape{static_cast<int64_t>(g.rows.size()), d}, DType::kF32, dy.device());
  SegmentSum(dy.Reshape(Shape{indices.numel(), d}), order, offsets, Iota(static_cast<int64_t>(g.rows.size())),
             &g.values);
  return g;
}

Tensor RowSparseToDense(const RowSparseTensor& s) {
  CheckRowSparse("RowSparseToDense", s);
  return AddRowSparse(Tensor::Zeros(s.dense_shape(), DType::kF32, s.values.device()), s);
}

Tensor AddRowSparse(const Tensor& dense, const RowSparseTensor& s) {
  const char* op = "AddRowSparse";
  CheckRowSparse(op, s);
  CheckF32(op, dense, "dense");
  CheckSameDevice(op, dense, s.values);
  CheckShape(op, dense, s.dense_shape(), "dense");
  Tensor out = dense.Clone();
  const int64_t r = static_cast<int64_t>(s.rows.size());
  SegmentSum(s.values, Iota(r), Iota(r + 1), s.rows, &out);
  return out;
}

RowSparseTensor AddRowSparse(const RowSparseTensor& a, const RowSparseTensor& b) {
  const char* op = "AddRowSparse";
  CheckRowSparse(op, a);
  CheckRowSparse(op, b);
  CheckSameDevice(op, a.values, b.values);
  GEOMX_CHECK(a.dense_shape() == b.dense_shape()) << op << ": " << a.dense_shape().ToString() << " + "
                                                  << b.dense_shape().ToString();
  // Merge the two sorted row lists; a's values are rows [0, |a|) of the concatenation, b's follow.
  RowSparseTensor sum;
  sum.num_rows = a.num_rows;
  std::vector<int64_t> order, offsets{0};
  const int64_t na = static_cast<int64_t>(a.rows.size()), nb = static_cast<int64_t>(b.rows.size());
  for (int64_t i = 0, j = 0; i < na || j < nb;) {
    const int64_t row = j >= nb || (i < na && a.rows[static_cast<size_t>(i)] <= b.rows[static_cast<size_t>(j)])
                            ? a.rows[static_cast<size_t>(i)]
                            : b.rows[static_cast<size_t>(j)];
    if (i < na && a.rows[static_cast<size_t>(i)] == row) order.push_back(i++);
    if (j < nb && b.rows[static_cast<size_t>(j)] == row) order.push_back(na + j++);
    sum.rows.push_back(row);
    offsets.push_back(static_cast<int64_t>(order.size()));
  }
  const int64_t u = static_cast<int64_t>(sum.rows.size());
  sum.values = Tensor::Zeros(Shape{u, a.width()}, DType::kF32, a.values.device());
  SegmentSum(Concat({a.values, b.values}, 0), order, offsets, Iota(u), &sum.values);
  return sum;
}

// ---- RoI crop-and-resize ----

namespace {

// Shapes (abort) and then the boxes' values (kInvalidArgument), read on the host.
Status CheckCropBoxes(const char* op, const Tensor& like, int64_t num_images, const Tensor& boxes,
                      const Tensor& box_index, const CropAndResizeParams& p) {
  GEOMX_CHECK(p.crop_h > 0 && p.crop_w > 0) << op << ": crop size must be positive, got " << p.crop_h << "x"
                                            << p.crop_w;
  CheckF32(op, boxes, "boxes");
  CheckSameDevice(op, like, boxes);
  GEOMX_CHECK(boxes.rank() == 2 && boxes.dim(1) == 4) << op << ": boxes must be [K, 4], got "
                                                      << boxes.shape().ToString();
  CheckIndexTensor(op, box_index, like);
  CheckShape(op, box_index, Shape{boxes.dim(0)}, "box_index");
  const std::vector<float> b = boxes.ToFloatVector();
  const std::vector<int64_t> image = box_index.ToI64Vector();
  for (size_t k = 0; k < image.size(); ++k) {
    const float* c = &b[4 * k];
    const bool finite = std::isfinite(c[0]) && std::isfinite(c[1]) && std::isfinite(c[2]) && std::isfinite(c[3]);
    if (finite && image[k] >= 0 && image[k] < num_images) continue;
    std::string msg = op;
    msg += ": box ";
    msg += std::to_string(k);
    if (!finite) {
      msg += " has a coordinate that is not finite: (y1, x1, y2, x2) = (";
      for (int i = 0; i < 4; ++i) {
        msg += std::to_string(c[i]);
        msg += i < 3 ? ", " : ")";
      }
    } else {
      msg += " has image index ";
      msg += std::to_string(image[k]);
      msg += ", outside [0, ";
      msg += std::to_string(num_images);
      msg += ")";
    }
    return Status::InvalidArgument(msg);
  }
  return Status::Ok();
}

}  // namespace

Result<Tensor> CropAndResize(const Tensor& x, const Tensor& boxes, const Tensor& box_index,
                             const CropAndResizeParams& p) {
  const char* op = "CropAndResize";
  CheckF32(op, x, "x");
  GEOMX_CHECK_EQ(x.rank(), 4) << op << ": x must be [N, C, H, W], got " << x.shape().ToString();
  GEOMX_RETURN_IF_ERROR(CheckCropBoxes(op, x, x.dim(0), boxes, box_index, p));
  Tensor y = Tensor::Empty(Shape{boxes.dim(0), x.dim(1), p.crop_h, p.crop_w}, DType::kF32, x.device());
  GEOMX_CHECK_OK(BackendOf(x).CropAndResizeForward(p, x, boxes, box_index, &y));
  return y;
}

Result<Tensor> CropAndResizeBackward(const Tensor& dy, const Tensor& boxes, const Tensor& box_index,
                                     const Shape& x_shape, const CropAndResizeParams& p) {
  const char* op = "CropAndResizeBackward";
  CheckF32(op, dy, "dy");
  GEOMX_CHECK_EQ(x_shape.rank(), 4) << op << ": x must be [N, C, H, W], got " << x_shape.ToString();
  GEOMX_RETURN_IF_ERROR(CheckCropBoxes(op, dy, x_shape[0], boxes, box_index, p));
  CheckShape(op, dy, Shape{boxes.dim(0), x_shape[1], p.crop_h, p.crop_w}, "dy");
  Tensor dx = Tensor::Empty(x_shape, DType::kF32, dy.device());
  GEOMX_CHECK_OK(BackendOf(dy).CropAndResizeBackward(p, dy, boxes, box_index, &dx));
  return dx;
}

}  // namespace geomx::ops
