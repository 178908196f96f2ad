// Index-driven kernels: row gathers (embedding lookup), segmented row sums (its row-sparse gradient) and RoI
// crop-and-resize over the sampling math of engine/kernels/crop_and_resize.h (the CPU loops call the same
// functions). Every kernel is a grid-stride loop with one thread per output element. Declarations and contracts:
// cuda_kernels.h.
#include <cstdint>

#include "engine/cuda/cuda_kernels.h"
#include "engine/cuda/grid.cuh"
#include "engine/kernels/crop_and_resize.h"

namespace geomx::cuda {

namespace {

__global__ void GatherRowsKernel(const float* table, int64_t v, int64_t d, const int64_t* indices, int64_t n,
                                 float* out) {
  for (int64_t e = GridStart(); e < n * d; e += GridStride()) {
    const int64_t i = e / d, c = e % d;
    const int64_t row = indices[i];
    out[e] = row >= 0 && row < v ? table[row * d + c] : 0.0f;
  }
}

__global__ void SegmentSumRowsKernel(const float* src, int64_t d, const int64_t* order, const int64_t* offsets,
                                     const int64_t* dst_rows, int64_t segments, float* out) {
  for (int64_t e = GridStart(); e < segments * d; e += GridStride()) {
    const int64_t r = e / d, c = e % d;
    float* cell = out + dst_rows[r] * d + c;
    float acc = *cell;
    for (int64_t j = offsets[r]; j < offsets[r + 1]; ++j) acc += src[order[j] * d + c];
    *cell = acc;
  }
}

// Output element e of [k, c, crop_h, crop_w] -> (box, channel, i, j).
struct CropIndex {
  int64_t b, ch, i, j;
};
__device__ inline CropIndex CropIndexOf(int64_t e, const CropAndResizeParams& p, int64_t channels) {
  const int64_t j = e % p.crop_w;
  const int64_t i = (e / p.crop_w) % p.crop_h;
  const int64_t bc = e / (int64_t{p.crop_w} * p.crop_h);
  return {bc / channels, bc % channels, i, j};
}

__global__ void CropAndResizeForwardKernel(CropAndResizeParams p, CropShape s, const float* x, const float* boxes,
                                           const int64_t* box_index, float* y) {
  const int64_t total = s.k * s.c * p.crop_h * p.crop_w;
  for (int64_t e = GridStart(); e < total; e += GridStride()) {
    const CropIndex at = CropIndexOf(e, p, s.c);
    const float* box = boxes + 4 * at.b;
    const int64_t image = box_index[at.b];
    const kernels::CropAxisSample sy = kernels::CropSampleAxis(box[0], box[2], at.i, p.crop_h, s.h);
    const kernels::CropAxisSample sx = kernels::CropSampleAxis(box[1], box[3], at.j, p.crop_w, s.w);
    if (image < 0 || image >= s.n || !sy.inside || !sx.inside) {
      y[e] = p.extrapolation_value;
      continue;
    }
    y[e] = kernels::CropBilinear(x + (image * s.c + at.ch) * s.h * s.w, s.w, sy, sx);
  }
}

__global__ void CropAndResizeBackwardKernel(CropAndResizeParams p, CropShape s, const float* dy, const float* boxes,
                                            const int64_t* box_index, float* dx) {
  const int64_t total = s.k * s.c * p.crop_h * p.crop_w;
  for (int64_t e = GridStart(); e < total; e += GridStride()) {
    const CropIndex at = CropIndexOf(e, p, s.c);
    const float* box = boxes + 4 * at.b;
    const int64_t image = box_index[at.b];
    const kernels::CropAxisSample sy = kernels::CropSampleAxis(box[0], box[2], at.i, p.crop_h, s.h);
    const kernels::CropAxisSample sx = kernels::CropSampleAxis(box[1], box[3], at.j, p.crop_w, s.w);
    if (image < 0 || image >= s.n || !sy.inside || !sx.inside) continue;
    float* plane = dx + (image * s.c + at.ch) * s.h * s.w;
    const kernels::CropBilinearGrad g = kernels::CropBilinearBackward(sy, sx, dy[e]);
    atomicAdd(plane + sy.lo * s.w + sx.lo, g.top_left);
    atomicAdd(plane + sy.lo * s.w + sx.hi, g.top_right);
    atomicAdd(plane + sy.hi * s.w + sx.lo, g.bottom_left);
    atomicAdd(plane + sy.hi * s.w + sx.hi, g.bottom_right);
  }
}

}  // namespace

cudaError_t LaunchGatherRows(const float* table, int64_t v, int64_t d, const int64_t* indices, int64_t n, float* out,
                             cudaStream_t stream) {
  if (n * d == 0) return cudaSuccess;
  GatherRowsKernel<<<BlocksFor(n * d), kThreadsPerBlock, 0, stream>>>(table, v, d, indices, n, out);
  return cudaGetLastError();
}

cudaError_t LaunchSegmentSumRows(const float* src, int64_t d, const int64_t* order, const int64_t* offsets,
                                 const int64_t* dst_rows, int64_t segments, float* out, cudaStream_t stream) {
  if (segments * d == 0) return cudaSuccess;
  SegmentSumRowsKernel<<<BlocksFor(segments * d), kThreadsPerBlock, 0, stream>>>(src, d, order, offsets, dst_rows,
                                                                                 segments, out);
  return cudaGetLastError();
}

cudaError_t LaunchCropAndResizeForward(const CropAndResizeParams& p, const CropShape& s, const float* x,
                                       const float* boxes, const int64_t* box_index, float* y, cudaStream_t stream) {
  const int64_t total = s.k * s.c * p.crop_h * p.crop_w;
  if (total == 0) return cudaSuccess;
  CropAndResizeForwardKernel<<<BlocksFor(total), kThreadsPerBlock, 0, stream>>>(p, s, x, boxes, box_index, y);
  return cudaGetLastError();
}

cudaError_t LaunchCropAndResizeBackward(const CropAndResizeParams& p, const CropShape& s, const float* dy,
                                        const float* boxes, const int64_t* box_index, float* dx,
                                        cudaStream_t stream) {
  const int64_t total = s.k * s.c * p.crop_h * p.crop_w;
  if (total == 0) return cudaSuccess;
  CropAndResizeBackwardKernel<<<BlocksFor(total), kThreadsPerBlock, 0, stream>>>(p, s, dy, boxes, box_index, dx);
  return cudaGetLastError();
}

}  // namespace geomx::cuda
