// The model file of a classical estimator (docs/formats.md, "Estimator model file"): named, typed sections in one
// binary file, versioned and checksummed, written atomically (temp file + rename: never half-written).
//
// Layout (little-endian): magic "GXMODEL\0", u32 version (1), u32 section count, then per section u8 type
// (1 f32 array, 2 i64 array, 3 string, 4 f64), u16 name length, name bytes, u64 element count (bytes for strings),
// payload; last a u32 CRC-32 of everything before it. The reader checks every count against the bytes left before
// allocating, and reports kDataLoss "<file>: offset N: ..." for anything malformed.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::algorithms {

class ModelWriter {
 public:
  void PutFloats(const std::string& name, std::span<const float> values);
  void PutInts(const std::string& name, std::span<const int64_t> values);
  void PutString(const std::string& name, const std::string& value);
  void PutNumber(const std::string& name, double value);
  // The encoded file (header, sections, CRC).
  std::string Encode() const;
  // Encode() written to `path` atomically (WriteFileAtomically: a failed write is kResourceExhausted or kInternal,
  // exit code 1, naming the file).
  Status WriteTo(const std::string& path) const;

 private:
  struct Section {
    uint8_t type;
    std::string name;
    std::string payload;
    uint64_t count;
  };
  void Put(uint8_t type, const std::string& name, std::string payload, uint64_t count);
  std::vector<Section> sections_;
};

class ModelReader {
 public:
  // Parses `bytes` (the contents of `source`). kDataLoss with the offset for a bad magic, version, count or CRC.
  static Result<ModelReader> Parse(const std::string& bytes, const std::string& source);
  static Result<ModelReader> ReadFrom(const std::string& path);

  bool Has(const std::string& name) const { return sections_.count(name) > 0; }
  // kDataLoss "<source>: section 'name' missing / has the wrong type / has N values, expected M" (expected < 0:
  // any count).
  Status GetFloats(const std::string& name, std::vector<float>* out, int64_t expected = -1) const;
  Status GetInts(const std::string& name, std::vector<int64_t>* out, int64_t expected = -1) const;
  Status GetString(const std::string& name, std::string* out) const;
  Status GetNumber(const std::string& name, double* out) const;
  const std::string& source() const { return source_; }

 private:
  struct Section {
    uint8_t type;
    std::string payload;
    uint64_t count;
  };
  Status Find(const std::string& name, uint8_t type, int64_t expected, const Section** out) const;
  std::string source_;
  std::map<std::string, Section> sections_;
};

}  // namespace geomx::algorithms
