// Pictures of generated images for the run folder (the gan estimator's samples-<step>.png, docs/algorithms.md#gan):
// square one-channel images tiled into a grid, and an 8-bit grayscale PNG encoder (zlib, no other dependency), so
// the estimators need no image library (OpenCV stays in datasets/ and cli/). Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace geomx::algorithms {

// An 8-bit grayscale image, row-major.
struct GrayImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // width x height
};

// Tiles `count` images of side x side values (row-major, one after the other in `images`, each value in [-1, 1]:
// -1 black, 1 white, clamped outside) into rows of `columns` images separated and framed by `gap` pixels of
// mid-gray (128). A value v becomes the pixel round((v + 1) / 2 * 255). Requires images.size() == count * side^2,
// count >= 1, side >= 1, columns >= 1 and gap >= 0 (programmer errors abort).
GrayImage TileImages(std::span<const float> images, int64_t count, int64_t side, int64_t columns, int64_t gap);

// The PNG file of `image` (colour type 0, bit depth 8, no interlace, filter 0 on every row, the scanlines
// deflated by zlib), as bytes. Requires 1 <= width, height <= 2^20 and pixels.size() == width * height.
std::string EncodeGrayPng(const GrayImage& image);

}  // namespace geomx::algorithms
