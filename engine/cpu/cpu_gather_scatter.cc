// CpuBackend's index-driven ops: row gathers (embedding lookup), segmented row sums (its row-sparse gradient and
// the row-sparse helpers of ops.h) and RoI crop-and-resize (math in engine/kernels/crop_and_resize.h). Loops are
// split with ParallelFor over independent outputs only (rows, channels), so results do not depend on the thread
// count.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/parallel_for.h"
#include "engine/kernels/crop_and_resize.h"

namespace geomx {

namespace {

using cpu::ParallelFor;

const float* F32(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
float* F32(Tensor* t) { return static_cast<float*>(t->raw_data()); }
const int64_t* I64(const Tensor& t) { return static_cast<const int64_t*>(t.raw_data()); }

// The first of `n` values outside [0, limit), as kInvalidArgument (ops.cc checked already; this keeps a direct
// backend call from reading out of bounds).
Status CheckRange(const char* op, const int64_t* v, int64_t n, int64_t limit) {
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] < 0 || v[i] >= limit) {
      std::string msg = op;
      msg += ": index ";
      msg += std::to_string(v[i]);
      msg += " at ";
      msg += std::to_string(i);
      msg += " outside [0, ";
      msg += std::to_string(limit);
      msg += ")";
      return Status::InvalidArgument(msg);
    }
  }
  return Status::Ok();
}

// Segment bounds: offsets[0] = 0, non-decreasing, offsets[segments] = m.
Status CheckOffsets(const int64_t* off, int64_t segments, int64_t m) {
  bool ok = off[0] == 0 && off[segments] == m;
  for (int64_t r = 0; ok && r < segments; ++r) ok = off[r] <= off[r + 1];
  return ok ? Status::Ok() : Status::InvalidArgument("SegmentSumRows: offsets are not the bounds of " +
                                                     std::to_string(m) + " ordered positions");
}

}  // namespace

Status CpuBackend::GatherRows(const Tensor& table, const Tensor& indices, Tensor* out) {
  const int64_t n = indices.numel(), d = table.dim(1);
  const int64_t* idx = I64(indices);
  GEOMX_RETURN_IF_ERROR(CheckRange("GatherRows", idx, n, table.dim(0)));
  if (d == 0) return Status::Ok();
  const float* src = F32(table);
  float* dst = F32(out);
  ParallelFor(n, d, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      std::memcpy(dst + i * d, src + idx[i] * d, static_cast<size_t>(d) * sizeof(float));
    }
  });
  return Status::Ok();
}

Status CpuBackend::SegmentSumRows(const Tensor& src, const Tensor& order, const Tensor& offsets,
                                  const Tensor& dst_rows, Tensor* out) {
  const int64_t segments = dst_rows.numel(), d = src.dim(1);
  const int64_t* ord = I64(order);
  const int64_t* off = I64(offsets);
  const int64_t* dst = I64(dst_rows);
  GEOMX_RETURN_IF_ERROR(CheckRange("SegmentSumRows", ord, order.numel(), src.dim(0)));
  GEOMX_RETURN_IF_ERROR(CheckRange("SegmentSumRows", dst, segments, out->dim(0)));
  GEOMX_RETURN_IF_ERROR(CheckOffsets(off, segments, order.numel()));
  if (d == 0 || segments == 0) return Status::Ok();
  const float* s = F32(src);
  float* o = F32(out);
  const int64_t avg = std::max<int64_t>(1, order.numel() / segments);
  ParallelFor(segments, avg * d, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float* row = o + dst[r] * d;
      for (int64_t j = off[r]; j < off[r + 1]; ++j) {
        const float* add = s + ord[j] * d;
        for (int64_t c = 0; c < d; ++c) row[c] += add[c];
      }
    }
  });
  return Status::Ok();
}

Status CpuBackend::CropAndResizeForward(const CropAndResizeParams& p, const Tensor& x, const Tensor& boxes,
                                        const Tensor& box_index, Tensor* y) {
  const int64_t n = x.dim(0), channels = x.dim(1), h = x.dim(2), w = x.dim(3), k = boxes.dim(0);
  const int64_t ch = p.crop_h, cw = p.crop_w;
  const int64_t* image = I64(box_index);
  GEOMX_RETURN_IF_ERROR(CheckRange("CropAndResizeForward", image, k, n));
  const float* bx = F32(boxes);
  const float* px = F32(x);
  float* py = F32(y);
  // One (box, channel) plane per item: the outputs are disjoint.
  ParallelFor(k * channels, ch * cw * 8, [&](int64_t lo, int64_t hi) {
    for (int64_t kc = lo; kc < hi; ++kc) {
      const int64_t b = kc / channels, c = kc % channels;
      const float* box = bx + 4 * b;
      const float* plane = px + (image[b] * channels + c) * h * w;
      float* out = py + kc * ch * cw;
      for (int64_t i = 0; i < ch; ++i) {
        const kernels::CropAxisSample sy = kernels::CropSampleAxis(box[0], box[2], i, ch, h);
        for (int64_t j = 0; j < cw; ++j) {
          const kernels::CropAxisSample sx = kernels::CropSampleAxis(box[1], box[3], j, cw, w);
          out[i * cw + j] = sy.inside && sx.inside ? kernels::CropBilinear(plane, w, sy, sx) : p.extrapolation_value;
        }
      }
    }
  });
  return Status::Ok();
}

Status CpuBackend::CropAndResizeBackward(const CropAndResizeParams& p, const Tensor& dy, const Tensor& boxes,
                                         const Tensor& box_index, Tensor* dx) {
  const int64_t n = dx->dim(0), channels = dx->dim(1), h = dx->dim(2), w = dx->dim(3), k = boxes.dim(0);
  const int64_t ch = p.crop_h, cw = p.crop_w;
  const int64_t* image = I64(box_index);
  GEOMX_RETURN_IF_ERROR(CheckRange("CropAndResizeBackward", image, k, n));
  GEOMX_RETURN_IF_ERROR(Fill(0.0f, dx));
  const float* bx = F32(boxes);
  const float* pdy = F32(dy);
  float* pdx = F32(dx);
  // Boxes of one image overlap, so the split is over channels: each thread owns whole channel planes of dx and
  // adds the boxes in order.
  ParallelFor(channels, k * ch * cw * 8, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      for (int64_t b = 0; b < k; ++b) {
        const float* box = bx + 4 * b;
        float* plane = pdx + (image[b] * channels + c) * h * w;
        const float* g = pdy + (b * channels + c) * ch * cw;
        for (int64_t i = 0; i < ch; ++i) {
          const kernels::CropAxisSample sy = kernels::CropSampleAxis(box[0], box[2], i, ch, h);
          if (!sy.inside) continue;
          for (int64_t j = 0; j < cw; ++j) {
            const kernels::CropAxisSample sx = kernels::CropSampleAxis(box[1], box[3], j, cw, w);
            if (!sx.inside) continue;
            const kernels::CropBilinearGrad s = kernels::CropBilinearBackward(sy, sx, g[i * cw + j]);
            plane[sy.lo * w + sx.lo] += s.top_left;
            plane[sy.lo * w + sx.hi] += s.top_right;
            plane[sy.hi * w + sx.lo] += s.bottom_left;
            plane[sy.hi * w + sx.hi] += s.bottom_right;
          }
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace geomx
