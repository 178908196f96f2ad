// Fixture writers for the dataset tests: tiny IDX, CIFAR-10, gzip files made by the tests themselves.
// Test-only code.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace geomx::testing {

// Writes `bytes` to `path`, gzip-compressed (zlib's gzwrite) when `gzip`.
void WriteBytes(const std::filesystem::path& path, const std::string& bytes, bool gzip = false);

// The bytes of an IDX file: u8 elements with `dims` (big-endian header).
std::string IdxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data);

// Deterministic "images": pixel p of example i is (i * 31 + p * 7) % 256.
std::vector<uint8_t> PatternPixels(size_t examples, size_t pixels_per_example);

// Writes an MNIST-style directory: train-{images-idx3,labels-idx1}-ubyte[.gz] and t10k-..., `n_train` and
// `n_test` examples of h x w pattern pixels, labels i % 10.
void WriteIdxDataset(const std::filesystem::path& dir, size_t n_train, size_t n_test, bool gzip, uint32_t h = 4,
                     uint32_t w = 3);

// One CIFAR-10 record: label then 3072 pattern pixels derived from `seed`.
std::string CifarRecord(uint8_t label, uint32_t seed);

// Peak resident memory of this process so far (VmHWM), in bytes; 0 when unknown.
size_t PeakRssBytes();

}  // namespace geomx::testing
