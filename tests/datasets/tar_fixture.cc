#include "tests/datasets/tar_fixture.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

namespace geomx::testing {

std::string TarEntry(const std::string& name, const std::string& contents, char type, bool bad_checksum) {
  char h[512] = {};
  std::string base = name;
  std::string prefix;
  if (name.size() > 100) {  // ustar: split at a '/' into prefix (155) and name (100)
    const size_t cut = name.rfind('/', 155);
    EXPECT_NE(cut, std::string::npos);
    prefix = name.substr(0, cut);
    base = name.substr(cut + 1);
  }
  std::memcpy(h, base.data(), std::min<size_t>(base.size(), 100));
  std::snprintf(h + 100, 8, "%07o", type == '5' ? 0755 : 0644);
  std::snprintf(h + 108, 8, "%07o", 0);
  std::snprintf(h + 116, 8, "%07o", 0);
  std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(contents.size()));
  std::snprintf(h + 136, 12, "%011o", 1500000000);
  h[156] = type;
  std::memcpy(h + 257, "ustar", 6);  // "ustar\0" then version "00"
  std::memcpy(h + 263, "00", 2);
  std::memcpy(h + 345, prefix.data(), std::min<size_t>(prefix.size(), 155));
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  if (bad_checksum) sum += 1;
  std::snprintf(h + 148, 8, "%06o", sum);  // six digits, NUL, then the space already there
  h[155] = ' ';
  std::string out(h, 512);
  out += contents;
  out.append((512 - contents.size() % 512) % 512, '\0');
  return out;
}

std::string TarLongNameEntry(const std::string& name, const std::string& contents) {
  return TarEntry("././@LongLink", name + '\0', 'L') + TarEntry(name.substr(0, 100), contents);
}

std::string TarEnd() { return std::string(1024, '\0'); }

std::string Gzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace geomx::testing
