#include "datasets/image_dataset.h"

#include <utility>

#include "engine/base/check.h"

namespace geomx::data {

U8ImageDataset::U8ImageDataset(DatasetInfo info, std::vector<uint8_t> pixels, size_t offset,
                               std::vector<int32_t> labels, const ImageNormalization& norm, int crop_pad)
    : info_(std::move(info)),
      pixels_(std::move(pixels)),
      offset_(offset),
      labels_(std::move(labels)),
      crop_pad_(crop_pad) {
  GEOMX_CHECK_EQ(info_.example_shape.size(), 3u) << "U8ImageDataset expects {C, H, W}";
  channels_ = static_cast<int>(info_.example_shape[0]);
  height_ = static_cast<int>(info_.example_shape[1]);
  width_ = static_cast<int>(info_.example_shape[2]);
  numel_ = static_cast<size_t>(channels_) * height_ * width_;
  GEOMX_CHECK_GE(pixels_.size(), offset_ + labels_.size() * numel_);
  GEOMX_CHECK(norm.mean.size() == 1 || norm.mean.size() == static_cast<size_t>(channels_));
  GEOMX_CHECK(norm.std.size() == 1 || norm.std.size() == static_cast<size_t>(channels_));
  GEOMX_CHECK_GE(crop_pad_, 0);
  // A lookup table per channel: the conversion is then one load per pixel, whatever the normalisation.
  lut_.resize(static_cast<size_t>(channels_));
  for (int c = 0; c < channels_; ++c) {
    const float mean = norm.mean.size() == 1 ? norm.mean[0] : norm.mean[static_cast<size_t>(c)];
    const float std = norm.std.size() == 1 ? norm.std[0] : norm.std[static_cast<size_t>(c)];
    GEOMX_CHECK_GT(std, 0.0f);
    for (int v = 0; v < 256; ++v) lut_[static_cast<size_t>(c)][static_cast<size_t>(v)] = (v / 255.0f - mean) / std;
  }
}

void U8ImageDataset::Get(int64_t i, float* out, Rng* rng) const {
  GEOMX_DCHECK(i >= 0 && i < size());
  const uint8_t* src = PixelsOf(i);
  const size_t plane = static_cast<size_t>(height_) * width_;
  if (rng == nullptr) {
    for (int c = 0; c < channels_; ++c) {
      const auto& lut = lut_[static_cast<size_t>(c)];
      const uint8_t* s = src + c * plane;
      float* o = out + c * plane;
      for (size_t p = 0; p < plane; ++p) o[p] = lut[s[p]];
    }
    return;
  }
  // Crop the zero-padded image at (dy, dx), then flip: out(y, x) = src(y + dy - pad, x' + dx - pad) with
  // x' = W-1-x when flipped.
  const int span = 2 * crop_pad_ + 1;
  const int dy = static_cast<int>(rng->Below(static_cast<uint64_t>(span))) - crop_pad_;
  const int dx = static_cast<int>(rng->Below(static_cast<uint64_t>(span))) - crop_pad_;
  const bool flip = rng->Below(2) == 1;
  for (int c = 0; c < channels_; ++c) {
    const auto& lut = lut_[static_cast<size_t>(c)];
    const uint8_t* s = src + c * plane;
    float* o = out + c * plane;
    for (int y = 0; y < height_; ++y) {
      const int sy = y + dy;
      for (int x = 0; x < width_; ++x) {
        const int sx = (flip ? width_ - 1 - x : x) + dx;
        const bool inside = sy >= 0 && sy < height_ && sx >= 0 && sx < width_;
        o[static_cast<size_t>(y) * width_ + x] = inside ? lut[s[static_cast<size_t>(sy) * width_ + sx]] : lut[0];
      }
    }
  }
}

}  // namespace geomx::data
