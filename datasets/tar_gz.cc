#include "datasets/tar_gz.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "datasets/file_reader.h"

namespace geomx::data {
namespace {

constexpr int64_t kBlock = 512;
constexpr int64_t kMaxNameRecord = 1 << 20;  // GNU long-name and pax records larger than this are not names

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

// The tar stream of one archive, read sequentially; `offset` counts uncompressed bytes (for messages).
class TarStream {
 public:
  TarStream(std::string archive, gzFile_s* gz) : archive_(std::move(archive)), gz_(gz) {}

  // Reads exactly n bytes into `out`; *got is what was read (short only at the end of the stream).
  Status Read(void* out, int64_t n, int64_t* got) {
    *got = 0;
    auto* p = static_cast<char*>(out);
    while (*got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - *got, 1 << 20));
      const int r = gzread(gz_.get(), p + *got, chunk);
      if (r < 0) {
        int err = 0;
        const char* msg = gzerror(gz_.get(), &err);
        return Status::DataLoss(archive_ + ": corrupt gzip stream at byte " + std::to_string(offset_ + *got) +
                                " of the tar (" + (msg ? msg : "zlib error") + ")");
      }
      if (r == 0) break;
      *got += r;
    }
    offset_ += *got;
    return Status::Ok();
  }

  Status ReadExact(void* out, int64_t n, const std::string& what) {
    int64_t got = 0;
    GEOMX_RETURN_IF_ERROR(Read(out, n, &got));
    if (got != n) return Truncated(what);
    return Status::Ok();
  }

  Status Skip(int64_t n, const std::string& what) {
    char buf[1 << 16];
    while (n > 0) {
      const int64_t k = std::min<int64_t>(n, sizeof buf);
      GEOMX_RETURN_IF_ERROR(ReadExact(buf, k, what));
      n -= k;
    }
    return Status::Ok();
  }

  Status Truncated(const std::string& what) const {
    return Status::DataLoss(archive_ + ": truncated in " + what + " (tar stream ends at byte " +
                            std::to_string(offset_) + ")");
  }

  const std::string& archive() const { return archive_; }
  int64_t offset() const { return offset_; }

 private:
  std::string archive_;
  std::unique_ptr<gzFile_s, GzCloser> gz_;
  int64_t offset_ = 0;
};

int64_t Padding(int64_t size) { return (kBlock - size % kBlock) % kBlock; }

std::string CString(const char* p, size_t max) { return std::string(p, strnlen(p, max)); }

// A numeric header field: octal ASCII (NUL/space padded), or GNU base-256 when the top bit is set. -1 if invalid.
int64_t ParseNumber(const unsigned char* p, size_t n) {
  if (p[0] & 0x80) {
    int64_t v = p[0] & 0x3f;
    for (size_t i = 1; i < n; ++i) {
      if (v > (INT64_MAX >> 8)) return -1;
      v = (v << 8) | p[i];
    }
    return v;
  }
  int64_t v = 0;
  size_t i = 0;
  while (i < n && p[i] == ' ') ++i;
  bool any = false;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v > (INT64_MAX >> 3)) return -1;
    v = v * 8 + (p[i] - '0');
    any = true;
  }
  for (; i < n; ++i) {
    if (p[i] != ' ' && p[i] != '\0') return -1;
  }
  return any ? v : -1;
}

bool ChecksumMatches(const unsigned char* h) {
  const int64_t stored = ParseNumber(h + 148, 8);
  int64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (int64_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= 148 && i < 156;
    unsigned_sum += in_field ? ' ' : h[i];
    signed_sum += in_field ? ' ' : static_cast<signed char>(h[i]);
  }
  return stored >= 0 && (stored == unsigned_sum || stored == signed_sum);
}

// The "path" and "size" records of a pax extended header ("LEN key=value\n" ...).
void ParsePax(const std::string& text, std::string* path, int64_t* size) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t space = text.find(' ', at);
    if (space == std::string::npos) return;
    const int64_t len = std::strtoll(text.c_str() + at, nullptr, 10);
    if (len <= 0 || at + static_cast<size_t>(len) > text.size()) return;
    const std::string record = text.substr(space + 1, at + static_cast<size_t>(len) - space - 2);  // drops "\n"
    const size_t eq = record.find('=');
    if (eq != std::string::npos) {
      const std::string key = record.substr(0, eq);
      if (key == "path") *path = record.substr(eq + 1);
      if (key == "size") *size = std::strtoll(record.c_str() + eq + 1, nullptr, 10);
    }
    at += static_cast<size_t>(len);
  }
}

Status CheckMemberPath(const std::string& path) {
  if (path.empty() || path.front() == '/') return Status::InvalidArgument("tar member '" + path + "': not relative");
  for (const auto& part : std::filesystem::path(path)) {
    if (part == "." || part == "..") {
      return Status::InvalidArgument("tar member '" + path + "': '.' and '..' are not allowed");
    }
  }
  return Status::Ok();
}

Status WriteMember(TarStream& tar, const std::filesystem::path& target, int64_t size) {
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) return Status::Internal(target.parent_path().string() + ": cannot create: " + ec.message());
  const std::string part = target.string() + ".part";
  std::unique_ptr<FILE, FileCloser> out(std::fopen(part.c_str(), "wb"));
  if (!out) return Status::Internal(part + ": cannot open for writing: " + std::strerror(errno));
  char buf[1 << 16];
  for (int64_t left = size; left > 0;) {
    const int64_t k = std::min<int64_t>(left, sizeof buf);
    const Status s = tar.ReadExact(buf, k, target.filename().string());
    if (!s.ok() || std::fwrite(buf, 1, static_cast<size_t>(k), out.get()) != static_cast<size_t>(k)) {
      out.reset();
      std::filesystem::remove(part, ec);
      return s.ok() ? Status::Internal(part + ": write error: " + std::strerror(errno)) : s;
    }
    left -= k;
  }
  if (std::fclose(out.release()) != 0) {
    std::filesystem::remove(part, ec);
    return Status::Internal(part + ": write error: " + std::strerror(errno));
  }
  std::filesystem::rename(part, target, ec);
  if (ec) return Status::Internal(target.string() + ": cannot rename " + part + " into place: " + ec.message());
  return Status::Ok();
}

}  // namespace

Status ExtractTarGz(const std::string& archive, const std::string& dir, const std::vector<TarMember>& members) {
  std::map<std::string, int64_t> wanted;
  for (const auto& m : members) {
    GEOMX_RETURN_IF_ERROR(CheckMemberPath(m.path));
    wanted[m.path] = m.size;
  }
  if (!IsGzipFile(archive)) return Status::DataLoss(archive + ": not a gzip file (expected a .tar.gz)");
  gzFile_s* gz = gzopen(archive.c_str(), "rb");
  if (gz == nullptr) return Status::Internal(archive + ": cannot open: " + std::strerror(errno));
  TarStream tar(archive, gz);

  std::string long_name;  // from a GNU 'L' entry, for the next header
  std::string pax_path;   // from a pax 'x' entry, for the next header
  int64_t pax_size = -1;
  unsigned char h[kBlock];
  while (true) {
    int64_t got = 0;
    GEOMX_RETURN_IF_ERROR(tar.Read(h, kBlock, &got));
    if (got == 0) break;  // no end-of-archive blocks: tolerated, as GNU tar does
    if (got != kBlock) return tar.Truncated("a header");
    if (std::all_of(h, h + kBlock, [](unsigned char b) { return b == 0; })) break;
    const int64_t header_at = tar.offset() - kBlock;
    if (!ChecksumMatches(h)) {
      return Status::DataLoss(archive + ": bad tar header checksum at byte " + std::to_string(header_at) +
                              " of the tar stream");
    }
    int64_t size = ParseNumber(h + 124, 12);
    if (size < 0) {
      return Status::DataLoss(archive + ": bad size field in the tar header at byte " + std::to_string(header_at));
    }
    const char type = static_cast<char>(h[156]);
    if (type == 'g') {  // pax global header: nothing the members here need
      GEOMX_RETURN_IF_ERROR(tar.Skip(size + Padding(size), "a pax global header"));
      continue;
    }
    if (type == 'L' || type == 'x') {
      if (size > kMaxNameRecord) {
        return Status::DataLoss(archive + ": implausible " + std::to_string(size) + "-byte name record at byte " +
                                std::to_string(header_at));
      }
      std::string text(static_cast<size_t>(size), '\0');
      GEOMX_RETURN_IF_ERROR(tar.ReadExact(text.data(), size, "a name record"));
      GEOMX_RETURN_IF_ERROR(tar.Skip(Padding(size), "a name record"));
      if (type == 'L') long_name = CString(text.data(), text.size());
      if (type == 'x') ParsePax(text, &pax_path, &pax_size);
      continue;
    }
    std::string name;
    if (!long_name.empty()) {
      name = long_name;
    } else if (!pax_path.empty()) {
      name = pax_path;
    } else {
      name = CString(reinterpret_cast<const char*>(h), 100);
      const std::string prefix = CString(reinterpret_cast<const char*>(h) + 345, 155);
      if (std::memcmp(h + 257, "ustar", 5) == 0 && !prefix.empty()) name = prefix + "/" + name;
    }
    if (pax_size >= 0) size = pax_size;
    long_name.clear();
    pax_path.clear();
    pax_size = -1;
    while (name.rfind("./", 0) == 0) name.erase(0, 2);

    auto it = wanted.find(name);
    if (it == wanted.end()) {
      GEOMX_RETURN_IF_ERROR(tar.Skip(size + Padding(size), name));
      continue;
    }
    if (type != '0' && type != '\0' && type != '7') {
      return Status::DataLoss(archive + ": member " + name + " is not a regular file (tar type '" +
                              std::string(1, type) + "')");
    }
    if (size != it->second) {
      return Status::DataLoss(archive + ": member " + name + " holds " + std::to_string(size) + " bytes, expected " +
                              std::to_string(it->second));
    }
    GEOMX_RETURN_IF_ERROR(WriteMember(tar, std::filesystem::path(dir) / name, size));
    GEOMX_RETURN_IF_ERROR(tar.Skip(Padding(size), name));
    wanted.erase(it);
  }
  if (!wanted.empty()) return Status::DataLoss(archive + ": has no member " + wanted.begin()->first);
  return Status::Ok();
}

}  // namespace geomx::data
