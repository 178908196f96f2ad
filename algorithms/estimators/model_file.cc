#include "algorithms/estimators/model_file.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/base/file_write.h"

namespace geomx::algorithms {
namespace {

constexpr char kMagic[8] = {'G', 'X', 'M', 'O', 'D', 'E', 'L', '\0'};
constexpr uint32_t kVersion = 1;
enum : uint8_t { kFloats = 1, kInts = 2, kString = 3, kNumber = 4 };
constexpr size_t kElementSize[5] = {0, 4, 8, 1, 8};

template <typename T>
void Append(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

const char* TypeName(uint8_t t) {
  switch (t) {
    case kFloats:
      return "float array";
    case kInts:
      return "integer array";
    case kString:
      return "string";
    case kNumber:
      return "number";
  }
  return "unknown";
}

}  // namespace

void ModelWriter::Put(uint8_t type, const std::string& name, std::string payload, uint64_t count) {
  for (Section& s : sections_) {
    if (s.name == name) {
      s = {type, name, std::move(payload), count};
      return;
    }
  }
  sections_.push_back({type, name, std::move(payload), count});
}

void ModelWriter::PutFloats(const std::string& name, std::span<const float> v) {
  Put(kFloats, name, std::string(reinterpret_cast<const char*>(v.data()), v.size_bytes()), v.size());
}
void ModelWriter::PutInts(const std::string& name, std::span<const int64_t> v) {
  Put(kInts, name, std::string(reinterpret_cast<const char*>(v.data()), v.size_bytes()), v.size());
}
void ModelWriter::PutString(const std::string& name, const std::string& value) {
  Put(kString, name, value, value.size());
}
void ModelWriter::PutNumber(const std::string& name, double value) {
  Put(kNumber, name, std::string(reinterpret_cast<const char*>(&value), sizeof(value)), 1);
}

std::string ModelWriter::Encode() const {
  std::string out(kMagic, sizeof(kMagic));
  Append<uint32_t>(&out, kVersion);
  Append<uint32_t>(&out, static_cast<uint32_t>(sections_.size()));
  for (const Section& s : sections_) {
    Append<uint8_t>(&out, s.type);
    Append<uint16_t>(&out, static_cast<uint16_t>(s.name.size()));
    out += s.name;
    Append<uint64_t>(&out, s.count);
    out += s.payload;
  }
  const uint32_t crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size())));
  Append<uint32_t>(&out, crc);
  return out;
}

Status ModelWriter::WriteTo(const std::string& path) const { return WriteFileAtomically(path, Encode()); }

Result<ModelReader> ModelReader::Parse(const std::string& bytes, const std::string& source) {
  auto bad = [&source](size_t offset, const std::string& what) {
    return Status::DataLoss(source + ": offset " + std::to_string(offset) + ": " + what);
  };
  if (bytes.size() < sizeof(kMagic) + 12 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return bad(0, "not a geomx model file (no GXMODEL header)");
  }
  uint32_t stored_crc = 0;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size() - 4)));
  size_t pos = sizeof(kMagic);
  auto take = [&](void* dst, size_t n) {
    if (bytes.size() - 4 - pos < n) return false;
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
    return true;
  };
  uint32_t version = 0, count = 0;
  take(&version, 4);
  if (version != kVersion) {
    return bad(8, "model file version " + std::to_string(version) + " is not supported (this build reads " +
                      std::to_string(kVersion) + ")");
  }
  if (crc != stored_crc) return bad(bytes.size() - 4, "checksum mismatch: the file is corrupt or truncated");
  take(&count, 4);
  ModelReader reader;
  reader.source_ = source;
  for (uint32_t s = 0; s < count; ++s) {
    const size_t at = pos;
    uint8_t type = 0;
    uint16_t name_len = 0;
    uint64_t n = 0;
    if (!take(&type, 1) || !take(&name_len, 2)) return bad(at, "truncated section header");
    if (type < kFloats || type > kNumber) return bad(at, "unknown section type " + std::to_string(type));
    std::string name(name_len, '\0');
    if (!take(name.data(), name_len) || !take(&n, 8)) return bad(at, "truncated section header");
    const size_t left = bytes.size() - 4 - pos;
    if (n > left / kElementSize[type]) {
      return bad(at, "section '" + name + "' claims " + std::to_string(n) + " values, more than the file holds");
    }
    Section sec{type, bytes.substr(pos, n * kElementSize[type]), n};
    pos += n * kElementSize[type];
    if (!reader.sections_.emplace(name, std::move(sec)).second) return bad(at, "duplicate section '" + name + "'");
  }
  if (pos != bytes.size() - 4) return bad(pos, "trailing bytes after the last section");
  return reader;
}

Result<ModelReader> ModelReader::ReadFrom(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound("model file " + path + " not found");
  std::stringstream s;
  s << f.rdbuf();
  return Parse(s.str(), path);
}

Status ModelReader::Find(const std::string& name, uint8_t type, int64_t expected, const Section** out) const {
  auto it = sections_.find(name);
  if (it == sections_.end()) return Status::DataLoss(source_ + ": section '" + name + "' missing");
  if (it->second.type != type) {
    return Status::DataLoss(source_ + ": section '" + name + "' is a " + TypeName(it->second.type) + ", expected a " +
                            TypeName(type));
  }
  if (expected >= 0 && it->second.count != static_cast<uint64_t>(expected)) {
    return Status::DataLoss(source_ + ": section '" + name + "' has " + std::to_string(it->second.count) +
                            " values, expected " + std::to_string(expected));
  }
  *out = &it->second;
  return Status::Ok();
}

Status ModelReader::GetFloats(const std::string& name, std::vector<float>* out, int64_t expected) const {
  const Section* s = nullptr;
  GEOMX_RETURN_IF_ERROR(Find(name, kFloats, expected, &s));
  out->resize(s->count);
  // Empty section: out->data() may be null, and memcpy's pointers must not be null even for 0 bytes (UBSan).
  if (!s->payload.empty()) std::memcpy(out->data(), s->payload.data(), s->payload.size());
  return Status::Ok();
}
Status ModelReader::GetInts(const std::string& name, std::vector<int64_t>* out, int64_t expected) const {
  const Section* s = nullptr;
  GEOMX_RETURN_IF_ERROR(Find(name, kInts, expected, &s));
  out->resize(s->count);
  // Empty section: out->data() may be null, and memcpy's pointers must not be null even for 0 bytes (UBSan).
  if (!s->payload.empty()) std::memcpy(out->data(), s->payload.data(), s->payload.size());
  return Status::Ok();
}
Status ModelReader::GetString(const std::string& name, std::string* out) const {
  const Section* s = nullptr;
  GEOMX_RETURN_IF_ERROR(Find(name, kString, -1, &s));
  *out = s->payload;
  return Status::Ok();
}
Status ModelReader::GetNumber(const std::string& name, double* out) const {
  const Section* s = nullptr;
  GEOMX_RETURN_IF_ERROR(Find(name, kNumber, 1, &s));
  std::memcpy(out, s->payload.data(), sizeof(double));
  return Status::Ok();
}

}  // namespace geomx::algorithms
