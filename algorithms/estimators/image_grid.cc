#include "algorithms/estimators/image_grid.h"

#include <algorithm>
#include <cmath>

#include <zlib.h>

#include "engine/base/check.h"

namespace geomx::algorithms {
namespace {

void PutU32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

// One chunk: length, type, data, CRC-32 of type and data (PNG specification, section 5.3).
void PutChunk(const char type[4], const std::string& data, std::string* out) {
  PutU32(static_cast<uint32_t>(data.size()), out);
  std::string typed(type, 4);
  typed += data;
  out->append(typed);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size()));
  PutU32(static_cast<uint32_t>(crc), out);
}

}  // namespace

GrayImage TileImages(std::span<const float> images, int64_t count, int64_t side, int64_t columns, int64_t gap) {
  GEOMX_CHECK(count >= 1 && side >= 1 && columns >= 1 && gap >= 0) << "TileImages(" << count << ", " << side << ")";
  GEOMX_CHECK_EQ(static_cast<int64_t>(images.size()), count * side * side) << "TileImages: values per image";
  const int64_t cols = std::min(columns, count);
  const int64_t rows = (count + cols - 1) / cols;
  GrayImage out;
  out.width = cols * side + (cols + 1) * gap;
  out.height = rows * side + (rows + 1) * gap;
  out.pixels.assign(static_cast<size_t>(out.width * out.height), 128);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t x0 = gap + (k % cols) * (side + gap), y0 = gap + (k / cols) * (side + gap);
    const float* img = images.data() + k * side * side;
    for (int64_t y = 0; y < side; ++y) {
      for (int64_t x = 0; x < side; ++x) {
        const float v = std::clamp(img[y * side + x], -1.0f, 1.0f);
        out.pixels[static_cast<size_t>((y0 + y) * out.width + x0 + x)] =
            static_cast<uint8_t>(std::lround((v + 1.0f) * 0.5f * 255.0f));
      }
    }
  }
  return out;
}

std::string EncodeGrayPng(const GrayImage& image) {
  GEOMX_CHECK(image.width >= 1 && image.height >= 1 && image.width <= (1 << 20) && image.height <= (1 << 20))
      << "EncodeGrayPng: " << image.width << " x " << image.height;
  GEOMX_CHECK_EQ(static_cast<int64_t>(image.pixels.size()), image.width * image.height) << "EncodeGrayPng: pixels";
  std::string out("\x89PNG\r\n\x1a\n", 8);
  std::string header;
  PutU32(static_cast<uint32_t>(image.width), &header);
  PutU32(static_cast<uint32_t>(image.height), &header);
  header += std::string("\x08\x00\x00\x00\x00", 5);  // bit depth 8, grayscale, deflate, filter method 0, no interlace
  PutChunk("IHDR", header, &out);
  // Scanlines, each led by its filter type (0: none).
  std::string raw;
  raw.reserve(static_cast<size_t>((image.width + 1) * image.height));
  for (int64_t y = 0; y < image.height; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char*>(image.pixels.data() + y * image.width), static_cast<size_t>(image.width));
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  const int rc = compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                           reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 6);
  GEOMX_CHECK_EQ(rc, Z_OK) << "zlib compress2";  // only fails for lack of memory or a too small buffer
  packed.resize(packed_size);
  PutChunk("IDAT", packed, &out);
  PutChunk("IEND", std::string(), &out);
  return out;
}

}  // namespace geomx::algorithms
