#include "datasets/cifar10.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "datasets/dataset.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::CifarRecord;
using geomx::testing::ScratchDir;
using geomx::testing::WriteBytes;

// data_batch_k.bin holds `per_batch` records (label (k + r) % 10, seed 100k + r); test_batch.bin 3 records.
void WriteCifar(const std::filesystem::path& dir, int per_batch, bool gzip_test = false) {
  for (int k = 1; k <= 5; ++k) {
    std::string batch;
    for (int r = 0; r < per_batch; ++r) batch += CifarRecord(static_cast<uint8_t>((k + r) % 10), 100 * k + r);
    WriteBytes(dir / ("data_batch_" + std::to_string(k) + ".bin"), batch);
  }
  std::string test;
  for (int r = 0; r < 3; ++r) test += CifarRecord(static_cast<uint8_t>(9 - r), 7 + r);
  WriteBytes(dir / "test_batch.bin", test, gzip_test);
}

DataConfig CifarConfig(const std::filesystem::path& dir, bool normalize) {
  DataConfig c;
  c.name = "cifar10";
  c.path = dir.string();
  c.normalize = normalize;
  return c;
}

TEST(Cifar10Test, ReadsAllBatchesInOrder) {
  ScratchDir dir;
  WriteCifar(dir.path(), 4);
  auto s = OpenDataset(CifarConfig(dir.path(), false));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train->size(), 20);
  EXPECT_EQ(s->test->size(), 3);
  EXPECT_EQ(s->train->info().example_shape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(s->train->info().class_names[0], "airplane");
  // Example 6 is record 2 of data_batch_2.bin.
  EXPECT_EQ(s->train->Label(6), (2 + 2) % 10);
  const std::string rec = CifarRecord(4, 202);
  std::vector<float> x(3072);
  s->train->Get(6, x.data(), nullptr);
  for (size_t p : {size_t{0}, size_t{1023}, size_t{1024}, size_t{3071}}) {
    EXPECT_FLOAT_EQ(x[p], static_cast<uint8_t>(rec[1 + p]) / 255.0f) << p;
  }
  EXPECT_EQ(s->test->Label(0), 9);
}

TEST(Cifar10Test, PerChannelNormalisationAndNestedDirectory) {
  ScratchDir dir;
  WriteCifar(dir / "cifar-10-batches-bin", 1, /*gzip_test=*/true);
  auto s = OpenDataset(CifarConfig(dir.path(), true));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->test->info().format, "cifar10-bin.gz");
  const std::string rec = CifarRecord(9, 7);
  std::vector<float> x(3072);
  s->test->Get(0, x.data(), nullptr);
  const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, std[3] = {0.2470f, 0.2435f, 0.2616f};
  for (int c = 0; c < 3; ++c) {
    const size_t p = static_cast<size_t>(c) * 1024 + 17;
    EXPECT_NEAR(x[p], (static_cast<uint8_t>(rec[1 + p]) / 255.0f - mean[c]) / std[c], 1e-5f);
  }
}

TEST(Cifar10Test, TruncatedRecordIsDataLossWithOffset) {
  ScratchDir dir;
  WriteCifar(dir.path(), 2);
  const std::string batch = CifarRecord(1, 1) + CifarRecord(2, 2).substr(0, 1001);
  WriteBytes(dir / "data_batch_3.bin", batch);
  auto s = OpenDataset(CifarConfig(dir.path(), true));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("data_batch_3.bin: truncated at byte offset 4074: expected 3072 bytes of "
                                      "image data for record 1 (starting at byte offset 3073), found 1000"),
            std::string::npos)
      << s.status().message();
}

TEST(Cifar10Test, BadLabelAndMissingBatch) {
  ScratchDir dir;
  WriteCifar(dir.path(), 2);
  WriteBytes(dir / "test_batch.bin", CifarRecord(3, 1) + CifarRecord(10, 2));
  auto s = OpenDataset(CifarConfig(dir.path(), true));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("label 10 of record 1 (byte offset 3073)"), std::string::npos)
      << s.status().message();

  std::filesystem::remove(dir / "data_batch_4.bin");
  auto m = OpenDataset(CifarConfig(dir.path(), true));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("data_batch_4.bin"), std::string::npos);
}

}  // namespace
}  // namespace geomx::data
