#include "tests/datasets/data_fixtures.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <sstream>

#include "tests/testutil.h"

namespace geomx::testing {

void WriteBytes(const std::filesystem::path& path, const std::string& bytes, bool gzip) {
  std::filesystem::create_directories(path.parent_path());
  if (!gzip) {
    WriteFile(path, bytes);
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::string IdxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string s = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((d >> shift) & 0xff);
  }
  s.append(data.begin(), data.end());
  return s;
}

std::vector<uint8_t> PatternPixels(size_t examples, size_t pixels_per_example) {
  std::vector<uint8_t> v(examples * pixels_per_example);
  for (size_t i = 0; i < examples; ++i) {
    for (size_t p = 0; p < pixels_per_example; ++p)
      v[i * pixels_per_example + p] = static_cast<uint8_t>((i * 31 + p * 7) % 256);
  }
  return v;
}

void WriteIdxDataset(const std::filesystem::path& dir, size_t n_train, size_t n_test, bool gzip, uint32_t h,
                     uint32_t w) {
  const std::string ext = gzip ? ".gz" : "";
  for (auto [prefix, n] : {std::pair<std::string, size_t>{"train", n_train}, {"t10k", n_test}}) {
    std::vector<uint8_t> labels(n);
    for (size_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % 10);
    WriteBytes(dir / (prefix + "-images-idx3-ubyte" + ext),
               IdxBytes({static_cast<uint32_t>(n), h, w}, PatternPixels(n, size_t{h} * w)), gzip);
    WriteBytes(dir / (prefix + "-labels-idx1-ubyte" + ext), IdxBytes({static_cast<uint32_t>(n)}, labels), gzip);
  }
}

std::string CifarRecord(uint8_t label, uint32_t seed) {
  std::string r(1, static_cast<char>(label));
  for (uint32_t p = 0; p < 3072; ++p) r += static_cast<char>((seed * 13 + p * 5) % 256);
  return r;
}

size_t PeakRssBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream is(line.substr(6));
      size_t kb = 0;
      is >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace geomx::testing
