// The CIFAR-10 binary format: files of 3073-byte records, {label u8 in [0, 10), 3072 pixels: 1024 R, 1024 G,
// 1024 B, each 32x32 row-major}. Train: data_batch_1.bin .. data_batch_5.bin; test: test_batch.bin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::data {

inline constexpr size_t kCifar10ImageBytes = 3 * 32 * 32;
inline constexpr size_t kCifar10RecordBytes = 1 + kCifar10ImageBytes;
inline constexpr int kCifar10Classes = 10;

// Validates a CIFAR-10 batch held in `bytes` (named `file` in errors): a whole number of records (kDataLoss
// "<file>: truncated at byte offset N: expected M bytes of image data") and labels below 10 (kDataLoss naming
// the record and its byte offset). Returns the number of records.
Result<int64_t> ValidateCifar10Batch(const std::vector<uint8_t>& bytes, const std::string& file);

}  // namespace geomx::data
