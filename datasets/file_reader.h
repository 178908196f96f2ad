// Whole-file reading for the dataset readers, with transparent gunzip.
//
// Data files are small enough to hold in memory (Fashion-MNIST train images: 47 MB decompressed), and holding
// the decompressed bytes lets the IDX reader keep its pixels in the very buffer read here (no second copy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::data {

struct FileBytes {
  std::vector<uint8_t> bytes;  // the file's contents, decompressed when it was gzip
  bool gzipped = false;        // the file started with the gzip magic (1f 8b)
};

// Reads all of `path`. A file starting with the gzip magic is decompressed (whatever its name), other files are
// returned as they are. Errors name the file: kNotFound (missing), kInvalidArgument (a directory),
// kDataLoss (a truncated or corrupt gzip stream), kResourceExhausted (cannot allocate), kInternal (read error).
Result<FileBytes> ReadDataFile(const std::string& path);

// True when the first bytes of `path` are the gzip magic. False for missing or short files.
bool IsGzipFile(const std::string& path);

}  // namespace geomx::data
