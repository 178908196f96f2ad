// The readers' limits (docs/data_formats.md#limits): allocations are bounded by what a file can hold, sizes claimed
// by a header or a gzip trailer are checked against the bytes that are really there, feature indices have a
// documented maximum, and NaN/inf values are refused unless data.allow_nan says otherwise.
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "datasets/csv_table.h"
#include "datasets/dataset.h"
#include "datasets/file_reader.h"
#include "datasets/idx.h"
#include "datasets/libsvm.h"
#include "datasets/table.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::IdxBytes;
using geomx::testing::PeakRssBytes;
using geomx::testing::ScratchDir;
using geomx::testing::WriteBytes;
using geomx::testing::WriteFile;

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

// gzip (RFC 1952) of `bytes`, made with zlib's deflate: header, deflate stream, CRC-32 and ISIZE trailer.
std::string Gzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Bytes that do not compress (a 64-bit LCG), so the compressed file is about as large as the data.
std::vector<uint8_t> NoisePixels(size_t n) {
  std::vector<uint8_t> out(n);
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (auto& b : out) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<uint8_t>(x >> 56);
  }
  return out;
}

// Resets this process's peak RSS to its current RSS (Linux >= 4.0); false when the kernel does not allow it.
bool ResetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

// ---- gzip and IDX ----

// A gzip file cut short ends in compressed bytes, not in its trailer: the "size" read from its last 4 bytes is
// garbage (here made to claim 2 GiB). The reader must fail on the truncation without having materialised that
// claim (the file's ~400 KB could at most decompress to ~400 MB, and is ~400 KB of data).
TEST(InputLimitsTest, TruncatedGzipIdxFailsWithoutMaterialisingTheTrailersClaim) {
  ScratchDir dir;
  const std::string idx = IdxBytes({500, 28, 28}, NoisePixels(500 * 28 * 28));
  std::string gz = Gzip(idx);
  ASSERT_GT(gz.size(), 300000u) << "the fixture must not compress";
  gz.resize(gz.size() * 2 / 3);
  gz += std::string("\x00\x00\x00\x80", 4);  // the last 4 bytes, read as ISIZE: 2^31
  WriteFile(dir / "train-images-idx3-ubyte.gz", gz);
  WriteBytes(dir / "train-labels-idx1-ubyte", IdxBytes({500}, std::vector<uint8_t>(500, 1)));

  const bool measured = ResetPeakRss();
  const size_t before = PeakRssBytes();
  auto read = ReadDataFile((dir / "train-images-idx3-ubyte.gz").string());
  const size_t after = PeakRssBytes();
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
  EXPECT_TRUE(Contains(read.status(), "train-images-idx3-ubyte.gz")) << read.status().message();
  EXPECT_TRUE(read.status().IsUserError());
  if (measured && before > 0) {
    // What was decompressed (< 400 KB) plus slack; the 2 GiB claim (capped: ~280 MB) must not have been touched.
    EXPECT_LT(after - before, size_t{64} << 20) << "peak RSS grew by " << ((after - before) >> 20) << " MB";
  }

  DataConfig config;
  config.name = "mnist";
  config.path = dir.path().string();
  auto opened = OpenDataset(config);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(opened.status(), "train-images-idx3-ubyte.gz")) << opened.status().message();
}

// An intact gzip file decompresses to exactly what was compressed, whether or not its trailer is exact.
TEST(InputLimitsTest, IntactGzipStillReadsExactly) {
  ScratchDir dir;
  const std::string data = IdxBytes({50, 28, 28}, NoisePixels(50 * 28 * 28));
  WriteFile(dir / "a.gz", Gzip(data));
  auto read = ReadDataFile((dir / "a.gz").string());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(std::string(read->bytes.begin(), read->bytes.end()), data);
  // Two members: the trailer of the last one gives only its own size (a too-small hint).
  WriteFile(dir / "two.gz", Gzip(data) + Gzip("tail"));
  auto two = ReadDataFile((dir / "two.gz").string());
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(std::string(two->bytes.begin(), two->bytes.end()), data + "tail");
}

// The dims of an IDX header are a claim: 4e9 x 28 x 28 images in a 30-byte file are refused before anything
// of that size is allocated, raw or gzip.
TEST(InputLimitsTest, IdxHeaderClaimingHugeDimsOnATinyFileIsRefused) {
  ScratchDir dir;
  const std::string huge = IdxBytes({4000000000u, 28, 28}, std::vector<uint8_t>(14, 7));
  auto header = ParseIdxHeader(std::vector<uint8_t>(huge.begin(), huge.end()), "huge.idx", "image");
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(header.status(), "huge.idx: truncated at byte offset 30: expected 3136000000000 bytes of "
                                        "image data, found 14"))
      << header.status().message();
  // Four dims of 2^32-1: the product overflows 64 bits.
  const std::string overflow = IdxBytes({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {});
  auto o = ParseIdxHeader(std::vector<uint8_t>(overflow.begin(), overflow.end()), "o.idx", "image");
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(Contains(o.status(), "more than 2^64")) << o.status().message();

  for (const bool gzip : {false, true}) {
    ScratchDir d;
    const std::string suffix = gzip ? ".gz" : "";
    WriteBytes(d / ("train-images-idx3-ubyte" + suffix), huge, gzip);
    // The label file claims 4e9 labels too: refused before a label vector of that size exists.
    WriteBytes(d / ("train-labels-idx1-ubyte" + suffix), IdxBytes({4000000000u}, {1, 2, 3}), gzip);
    DataConfig config;
    config.name = "fashion-mnist";
    config.path = d.path().string();
    auto opened = OpenDataset(config);
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss);
    EXPECT_TRUE(Contains(opened.status(), "train-labels-idx1-ubyte" + suffix + ": truncated at byte offset 11: "
                                          "expected 4000000000 bytes of label data, found 3"))
        << opened.status().message();
  }
}

// ---- LIBSVM ----

TEST(InputLimitsTest, LibsvmIndexOfTwoBillionIsAClearErrorNotAnAllocation) {
  auto t = ParseLibsvm("1 3:0.5\n0 2000000000:1\n", "big.svm");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(t.status(), "big.svm:2: feature index 2000000000 is above the maximum 67108864"))
      << t.status().message();
  // The largest allowed index parses (kept sparse: nothing of its width is allocated here).
  auto top = ParseLibsvm("1 67108864:1\n", "top.svm");
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(top->max_index, 67108864);

  ScratchDir dir;
  WriteFile(dir / "big.svm", "1 1:1\n0 2000000000:1\n");
  DataConfig config;
  config.name = "libsvm";
  config.path = (dir / "big.svm").string();
  auto opened = OpenDataset(config);  // the neural dataset (densified per batch)
  ASSERT_FALSE(opened.ok());
  EXPECT_TRUE(Contains(opened.status(), "big.svm:2: feature index 2000000000")) << opened.status().message();
  auto table = OpenTable(config, TableOptions{});  // the classical table (sparse)
  ASSERT_FALSE(table.ok());
  EXPECT_TRUE(Contains(table.status(), "big.svm:2: feature index 2000000000")) << table.status().message();

  config.num_features = 100000000;  // above the maximum as a configured width, too
  config.path = (dir / "small.svm").string();
  WriteFile(dir / "small.svm", "1 1:1\n0 2:1\n");
  auto wide = OpenDataset(config);
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(wide.status(), "data.num_features: 100000000 is above the maximum 67108864"))
      << wide.status().message();
}

// The neural libsvm dataset densifies whole batches: batch_size x features floats must stay under 2^28 (1 GiB).
TEST(InputLimitsTest, LibsvmDenseBatchIsBounded) {
  ScratchDir dir;
  std::string rows;
  for (int i = 0; i < 10; ++i) rows += std::to_string(i % 2) + " " + std::to_string(1 + i * 1000000) + ":1\n";
  WriteFile(dir / "wide.svm", rows);  // the largest index: 9000001
  DataConfig config;
  config.name = "libsvm";
  config.path = (dir / "wide.svm").string();
  config.batch_size = 32;  // 32 x 9000001 = 2.9e8 > 2^28 = 2.7e8
  auto opened = OpenDataset(config);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(opened.status(), "data.batch_size")) << opened.status().message();
  EXPECT_TRUE(Contains(opened.status(), "32 x 9000001 features")) << opened.status().message();
  config.batch_size = 16;  // 1.4e8 <= 2^28: accepted (kept sparse until a batch is built)
  auto ok = OpenDataset(config);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->train->info().example_shape, (std::vector<int64_t>{9000001}));
}

// ---- NaN / inf ----

TEST(InputLimitsTest, CsvNanAndInfAreRefusedWithFileLineUnlessAllowed) {
  const char* spellings[] = {"nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "INF"};
  for (const char* v : spellings) {
    const std::string text = std::string("a,b,y\n1,2,0\n3,") + v + ",1\n";
    auto refused = ParseCsvTable(text, "n.csv", {});
    ASSERT_FALSE(refused.ok()) << v;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(refused.status(), "n.csv:3:3: ")) << refused.status().message();
    EXPECT_TRUE(Contains(refused.status(), "data.allow_nan")) << refused.status().message();
    auto allowed = ParseCsvTable(text, "n.csv", {.allow_nan = true});
    ASSERT_TRUE(allowed.ok()) << v << ": " << allowed.status().ToString();
    ASSERT_EQ(allowed->features.size(), 4u);
    EXPECT_FALSE(std::isfinite(allowed->features[3])) << v;
    EXPECT_EQ(allowed->features[2], 3.0f);
  }
  // Through the dataset, with the recipe key's field.
  ScratchDir dir;
  WriteFile(dir / "t.csv", "a,b,y\n1,2,0\n3,4,1\n5,inf,0\n7,8,1\n");
  DataConfig config;
  config.name = "csv";
  config.path = (dir / "t.csv").string();
  auto refused = OpenDataset(config);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status(), "t.csv:4:3: ")) << refused.status().message();
  auto refused_table = OpenTable(config, TableOptions{});
  ASSERT_FALSE(refused_table.ok());
  EXPECT_TRUE(Contains(refused_table.status(), "t.csv:4:3: ")) << refused_table.status().message();
  config.allow_nan = true;
  auto allowed = OpenDataset(config);
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  EXPECT_EQ(allowed->train->size() + allowed->test->size(), 4);
  EXPECT_TRUE(OpenTable(config, TableOptions{}).ok());
}

TEST(InputLimitsTest, LibsvmNanAndInfAreRefusedWithFileLineUnlessAllowed) {
  for (const char* v : {"nan", "inf", "-Infinity"}) {
    const std::string text = std::string("1 1:0.5 2:1\n0 1:") + v + "\n";
    auto refused = ParseLibsvm(text, "n.svm");
    ASSERT_FALSE(refused.ok()) << v;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(refused.status(), "n.svm:2: ")) << refused.status().message();
    EXPECT_TRUE(Contains(refused.status(), "data.allow_nan")) << refused.status().message();
    auto allowed = ParseLibsvm(text, "n.svm", {.allow_nan = true});
    ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
    ASSERT_EQ(allowed->values.size(), 3u);
    EXPECT_FALSE(std::isfinite(allowed->values[2])) << v;
  }
  ScratchDir dir;
  WriteFile(dir / "t.svm", "1 1:1\n0 2:nan\n1 1:2\n0 2:3\n");
  DataConfig config;
  config.name = "libsvm";
  config.path = (dir / "t.svm").string();
  auto refused = OpenDataset(config);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status(), "t.svm:2: ")) << refused.status().message();
  config.allow_nan = true;
  EXPECT_TRUE(OpenDataset(config).ok());
  EXPECT_TRUE(OpenTable(config, TableOptions{}).ok());
}

}  // namespace
}  // namespace geomx::data
