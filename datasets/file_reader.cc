#include "datasets/file_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>

namespace geomx::data {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

Status CheckReadable(const std::string& path, uintmax_t* size) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return Status::NotFound(path + ": no such file");
  if (std::filesystem::is_directory(st)) return Status::InvalidArgument(path + ": is a directory, not a file");
  *size = std::filesystem::file_size(path, ec);
  if (ec) return Status::Internal(path + ": cannot stat: " + ec.message());
  return Status::Ok();
}

Result<FileBytes> ReadRaw(const std::string& path, uintmax_t size) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) return Status::Internal(path + ": cannot open: " + std::strerror(errno));
  FileBytes out;
  try {
    out.bytes.resize(size);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(path + ": cannot allocate " + std::to_string(size) + " bytes");
  }
  const size_t got = size ? std::fread(out.bytes.data(), 1, size, f.get()) : 0;
  if (got != size) {
    return Status::Internal(path + ": read " + std::to_string(got) + " of " + std::to_string(size) + " bytes");
  }
  return out;
}

// Deflate's maximum compression ratio (about 1032:1): a gzip file of N bytes cannot decompress to more.
constexpr uint64_t kMaxDeflateRatio = 1032;

// The gzip trailer's ISIZE (uncompressed size mod 2^32) of the last member. Only a claim: the last 4 bytes of a
// truncated or corrupt file are anything.
uint64_t GzipSizeHint(const std::string& path, uintmax_t file_size) {
  if (file_size < 18) return 0;
  File f(std::fopen(path.c_str(), "rb"));
  if (!f || std::fseek(f.get(), -4, SEEK_END) != 0) return 0;
  unsigned char b[4];
  if (std::fread(b, 1, 4, f.get()) != 4) return 0;
  return uint64_t{b[0]} | uint64_t{b[1]} << 8 | uint64_t{b[2]} << 16 | uint64_t{b[3]} << 24;
}

// Decompresses into one buffer. The trailer's size claim, capped at kMaxDeflateRatio x the file size, only
// reserves address space, so an exact claim lets the buffer end full without ever doubling (a 47 MB file would
// otherwise peak near 94 MB); the buffer's size grows (and its memory is touched) only as decompressed bytes
// arrive, in steps of kStep, so a truncated file whose "claim" is garbage costs neither memory nor time.
Result<FileBytes> ReadGzip(const std::string& path, uintmax_t file_size) {
  constexpr size_t kStep = size_t{1} << 20;
  GzFile gz(gzopen(path.c_str(), "rb"));
  if (!gz) return Status::Internal(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(gz.get(), 1 << 17);
  FileBytes out;
  out.gzipped = true;
  size_t used = 0;
  std::vector<uint8_t>& b = out.bytes;
  try {
    const uint64_t hint = std::min<uint64_t>(GzipSizeHint(path, file_size), uint64_t{file_size} * kMaxDeflateRatio);
    try {
      b.reserve(static_cast<size_t>(hint));
    } catch (const std::bad_alloc&) {
      // No address space for the claim (ulimit -v, strict overcommit): grow as the data arrives instead.
    }
    std::vector<uint8_t> probe;
    for (;;) {
      if (used == b.size() && used < b.capacity()) b.resize(std::min(b.capacity(), used + kStep));
      // At capacity, a small probe read detects EOF without growing the big buffer.
      const bool full = used == b.size();
      if (full && probe.empty()) probe.resize(1 << 16);
      uint8_t* dst = full ? probe.data() : b.data() + used;
      const size_t room = full ? probe.size() : std::min<size_t>(b.size() - used, 1u << 30);
      const int n = gzread(gz.get(), dst, static_cast<unsigned>(room));
      if (n < 0) {
        int err = 0;
        const char* msg = gzerror(gz.get(), &err);
        return Status::DataLoss(path + ": corrupt gzip stream after " + std::to_string(used) +
                                " decompressed bytes: " + (msg ? msg : "unknown error"));
      }
      if (n == 0) break;
      if (full) {
        b.reserve(used + std::max<size_t>({static_cast<size_t>(n), used / 2, kStep}));
        b.resize(used + static_cast<size_t>(n));
        std::memcpy(b.data() + used, probe.data(), static_cast<size_t>(n));
      }
      used += static_cast<size_t>(n);
    }
    int err = Z_OK;
    const char* msg = gzerror(gz.get(), &err);
    if (err != Z_OK) {
      // zlib reports a stream cut short as Z_BUF_ERROR "unexpected end of file" after returning what it had.
      return Status::DataLoss(path + ": truncated or corrupt gzip stream after " + std::to_string(used) +
                              " decompressed bytes: " + (msg ? msg : "unknown error"));
    }
    b.resize(used);
    if (b.capacity() - used > used / 8) b.shrink_to_fit();
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(path + ": out of memory after " + std::to_string(used) + " decompressed bytes");
  }
  return out;
}

}  // namespace

bool IsGzipFile(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) return false;
  unsigned char magic[2];
  return std::fread(magic, 1, 2, f.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

Result<FileBytes> ReadDataFile(const std::string& path) {
  uintmax_t size = 0;
  GEOMX_RETURN_IF_ERROR(CheckReadable(path, &size));
  if (IsGzipFile(path)) return ReadGzip(path, size);
  return ReadRaw(path, size);
}

}  // namespace geomx::data
