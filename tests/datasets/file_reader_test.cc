#include "datasets/file_reader.h"

#include <gtest/gtest.h>

#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::ScratchDir;
using geomx::testing::WriteBytes;

std::string AsString(const FileBytes& f) { return std::string(f.bytes.begin(), f.bytes.end()); }

TEST(FileReaderTest, ReadsRawAndGzipToTheSameBytes) {
  ScratchDir dir;
  std::string data;
  for (int i = 0; i < 300000; ++i) data += static_cast<char>((i * 7) % 251);
  WriteBytes(dir / "raw.bin", data);
  WriteBytes(dir / "packed.gz", data, /*gzip=*/true);
  WriteBytes(dir / "packed_without_suffix", data, /*gzip=*/true);
  auto raw = ReadDataFile((dir / "raw.bin").string());
  auto gz = ReadDataFile((dir / "packed.gz").string());
  auto gz2 = ReadDataFile((dir / "packed_without_suffix").string());
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  ASSERT_TRUE(gz2.ok()) << gz2.status().ToString();
  EXPECT_FALSE(raw->gzipped);
  EXPECT_TRUE(gz->gzipped);
  EXPECT_EQ(AsString(*raw), data);
  EXPECT_EQ(AsString(*gz), data);
  EXPECT_EQ(AsString(*gz2), data);
  EXPECT_TRUE(IsGzipFile((dir / "packed.gz").string()));
  EXPECT_FALSE(IsGzipFile((dir / "raw.bin").string()));
}

TEST(FileReaderTest, ReadsConcatenatedGzipMembersAndEmptyFiles) {
  ScratchDir dir;
  WriteBytes(dir / "a.gz", "hello ", true);
  WriteBytes(dir / "b.gz", "world", true);
  geomx::testing::WriteFile(dir / "ab.gz",
                            geomx::testing::ReadFile(dir / "a.gz") + geomx::testing::ReadFile(dir / "b.gz"));
  auto ab = ReadDataFile((dir / "ab.gz").string());
  ASSERT_TRUE(ab.ok()) << ab.status().ToString();
  EXPECT_EQ(AsString(*ab), "hello world");
  WriteBytes(dir / "empty", "");
  WriteBytes(dir / "empty.gz", "", true);
  auto e1 = ReadDataFile((dir / "empty").string());
  auto e2 = ReadDataFile((dir / "empty.gz").string());
  ASSERT_TRUE(e1.ok());
  ASSERT_TRUE(e2.ok()) << e2.status().ToString();
  EXPECT_TRUE(e1->bytes.empty());
  EXPECT_TRUE(e2->bytes.empty());
}

TEST(FileReaderTest, TruncatedGzipIsDataLossNamingTheFile) {
  ScratchDir dir;
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * i) % 253);
  WriteBytes(dir / "full.gz", data, true);
  const std::string packed = geomx::testing::ReadFile(dir / "full.gz");
  geomx::testing::WriteFile(dir / "cut.gz", packed.substr(0, packed.size() / 2));
  auto r = ReadDataFile((dir / "cut.gz").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("cut.gz"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("decompressed bytes"), std::string::npos) << r.status().message();

  std::string corrupt = packed;
  for (size_t i = 20; i < 60; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  geomx::testing::WriteFile(dir / "corrupt.gz", corrupt);
  auto c = ReadDataFile((dir / "corrupt.gz").string());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kDataLoss) << c.status().ToString();
}

TEST(FileReaderTest, MissingFileAndDirectoryAreReported) {
  ScratchDir dir;
  auto missing = ReadDataFile((dir / "nope.bin").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.bin"), std::string::npos);
  auto is_dir = ReadDataFile(dir.path().string());
  ASSERT_FALSE(is_dir.ok());
  EXPECT_EQ(is_dir.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::data
