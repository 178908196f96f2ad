// Bilinear crop-and-resize sampling (TensorFlow's tf.image.crop_and_resize, method "bilinear"), written once for
// every device (docs/style.md R7): the CPU loops (engine/cpu/cpu_gather_scatter.cc) and the CUDA kernels
// (engine/cuda/gather_scatter.cu) call these per output element. Semantics: engine/ops.h ops::CropAndResize.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/kernels/host_device.h"

namespace geomx::kernels {

// Where one output coordinate samples along one input axis: between pixels lo and hi (= lo, or lo + 1) with
// weight frac on hi. inside == false: the sample lies outside the axis (it takes the extrapolation value).
struct CropAxisSample {
  int64_t lo = 0, hi = 0;
  float frac = 0.0f;
  bool inside = false;
};

// Output position i of n along an input axis of `size` pixels, for the box edges a, b (normalised: 0 is the
// centre of pixel 0, 1 the centre of pixel size - 1). TF's float arithmetic, step by step:
//   n > 1: in = a (size - 1) + i ((b - a)(size - 1) / (n - 1));  n == 1: in = (a + b)(size - 1) / 2.
// The range test is written so that NaN (and anything not in [0, size - 1]) is outside: lo and hi are then always
// valid pixel indices, whatever the box holds.
GEOMX_HOST_DEVICE inline CropAxisSample CropSampleAxis(float a, float b, int64_t i, int64_t n, int64_t size) {
  const float extent = static_cast<float>(size - 1);
  float in;
  if (n > 1) {
    const float scale = (b - a) * extent / static_cast<float>(n - 1);
    in = a * extent + static_cast<float>(i) * scale;
  } else {
    in = 0.5f * (a + b) * extent;
  }
  CropAxisSample s;
  if (!(in >= 0.0f && in <= extent)) return s;
  const float lo = std::floor(in);
  s.lo = static_cast<int64_t>(lo);
  s.hi = static_cast<int64_t>(std::ceil(in));
  s.frac = in - lo;
  s.inside = true;
  return s;
}

// The interpolated value of a row-major plane of width w at a sample inside both axes (TF's order of operations).
GEOMX_HOST_DEVICE inline float CropBilinear(const float* plane, int64_t w, const CropAxisSample& y,
                                            const CropAxisSample& x) {
  const float top_left = plane[y.lo * w + x.lo], top_right = plane[y.lo * w + x.hi];
  const float bottom_left = plane[y.hi * w + x.lo], bottom_right = plane[y.hi * w + x.hi];
  const float top = top_left + (top_right - top_left) * x.frac;
  const float bottom = bottom_left + (bottom_right - bottom_left) * x.frac;
  return top + (bottom - top) * y.frac;
}

// The gradient of CropBilinear for an output gradient g: what each of the four pixels receives, in the order
// (y.lo, x.lo), (y.lo, x.hi), (y.hi, x.lo), (y.hi, x.hi). Pixels named twice (lo == hi) receive both shares.
struct CropBilinearGrad {
  float top_left, top_right, bottom_left, bottom_right;
};
GEOMX_HOST_DEVICE inline CropBilinearGrad CropBilinearBackward(const CropAxisSample& y, const CropAxisSample& x,
                                                               float g) {
  const float top = (1.0f - y.frac) * g, bottom = y.frac * g;
  return {(1.0f - x.frac) * top, x.frac * top, (1.0f - x.frac) * bottom, x.frac * bottom};
}

}  // namespace geomx::kernels
