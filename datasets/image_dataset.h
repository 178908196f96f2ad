// U8ImageDataset: images kept as u8 in memory (CHW per example), converted to normalised floats on Get().
// Shared by the IDX, CIFAR-10 and image-folder readers. Immutable after construction: thread-safe to read.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "datasets/dataset.h"

namespace geomx::data {

// Per-channel normalisation x -> (x/255 - mean[c]) / std[c]. One value applies to every channel.
struct ImageNormalization {
  std::vector<float> mean = {0.0f};
  std::vector<float> std = {1.0f};
};

class U8ImageDataset final : public Dataset {
 public:
  // `pixels` holds info.example_shape = {C, H, W} bytes per example, example-major, starting at byte `offset`
  // (so a whole IDX file can be adopted without copying its header away). `labels[i]` is in
  // [0, info.num_classes). `crop_pad`: the zero padding of the random crop when Get() receives an Rng.
  // Checks (programmer errors): the buffer holds labels.size() examples; mean/std sizes are 1 or C; std > 0.
  U8ImageDataset(DatasetInfo info, std::vector<uint8_t> pixels, size_t offset, std::vector<int32_t> labels,
                 const ImageNormalization& norm, int crop_pad);

  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  int64_t Label(int64_t i) const override { return labels_[static_cast<size_t>(i)]; }
  // With `rng`: a random crop (pad crop_pad, padding is black) and a horizontal flip with probability 1/2.
  void Get(int64_t i, float* out, Rng* rng) const override;

  // The raw pixels of example i (C*H*W bytes, CHW).
  const uint8_t* PixelsOf(int64_t i) const { return pixels_.data() + offset_ + static_cast<size_t>(i) * numel_; }
  // Bytes held by this dataset (pixels, header bytes kept in front included, plus labels).
  size_t memory_bytes() const { return pixels_.capacity() + labels_.capacity() * sizeof(int32_t); }

 private:
  DatasetInfo info_;
  std::vector<uint8_t> pixels_;
  size_t offset_;
  std::vector<int32_t> labels_;
  int channels_, height_, width_, crop_pad_;
  size_t numel_;
  std::vector<std::array<float, 256>> lut_;  // per channel: u8 -> normalised float
};

}  // namespace geomx::data
