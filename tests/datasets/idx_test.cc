#include "datasets/idx.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "datasets/dataset.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::IdxBytes;
using geomx::testing::PatternPixels;
using geomx::testing::ScratchDir;
using geomx::testing::WriteBytes;
using geomx::testing::WriteIdxDataset;

DataConfig IdxConfig(const std::string& name, const std::filesystem::path& dir, bool normalize) {
  DataConfig c;
  c.name = name;
  c.path = dir.string();
  c.normalize = normalize;
  return c;
}

std::vector<float> Example(const Dataset& d, int64_t i) {
  int64_t n = 1;
  for (int64_t s : d.info().example_shape) n *= s;
  std::vector<float> out(static_cast<size_t>(n));
  d.Get(i, out.data(), nullptr);
  return out;
}

class IdxGzipTest : public ::testing::TestWithParam<bool> {};

TEST_P(IdxGzipTest, ReadsShapesLabelsAndPixels) {
  const bool gz = GetParam();
  ScratchDir dir;
  WriteIdxDataset(dir.path(), 25, 7, gz, /*h=*/4, /*w=*/3);
  auto splits = OpenDataset(IdxConfig("mnist", dir.path(), /*normalize=*/false));
  ASSERT_TRUE(splits.ok()) << splits.status().ToString();
  const Dataset& train = *splits->train;
  EXPECT_EQ(train.size(), 25);
  EXPECT_EQ(splits->test->size(), 7);
  EXPECT_EQ(train.info().format, gz ? "idx.gz" : "idx");
  EXPECT_EQ(train.info().example_shape, (std::vector<int64_t>{1, 4, 3}));
  EXPECT_EQ(train.info().num_classes, 10);
  const auto pixels = PatternPixels(25, 12);
  for (int64_t i : {0, 3, 24}) {
    EXPECT_EQ(train.Label(i), i % 10);
    const auto x = Example(train, i);
    for (size_t p = 0; p < 12; ++p) EXPECT_FLOAT_EQ(x[p], pixels[static_cast<size_t>(i) * 12 + p] / 255.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(RawAndGzip, IdxGzipTest, ::testing::Bool());

TEST(IdxTest, NormalisesWithPerDatasetConstants) {
  ScratchDir dir;
  WriteIdxDataset(dir.path(), 3, 2, true);
  auto fashion = OpenDataset(IdxConfig("fashion-mnist", dir.path(), true));
  auto mnist = OpenDataset(IdxConfig("mnist", dir.path(), true));
  ASSERT_TRUE(fashion.ok() && mnist.ok());
  const auto pixels = PatternPixels(3, 12);
  const auto f = Example(*fashion->train, 1), m = Example(*mnist->train, 1);
  for (size_t p = 0; p < 12; ++p) {
    const float v = pixels[12 + p] / 255.0f;
    EXPECT_NEAR(f[p], (v - 0.2860f) / 0.3530f, 1e-5f);
    EXPECT_NEAR(m[p], (v - 0.1307f) / 0.3081f, 1e-5f);
  }
  EXPECT_EQ(fashion->train->info().class_names[9], "Ankle boot");
}

TEST(IdxTest, AugmentationCropsAndFlipsDeterministically) {
  ScratchDir dir;
  WriteIdxDataset(dir.path(), 2, 1, false, 6, 6);
  auto s = OpenDataset(IdxConfig("mnist", dir.path(), false));
  ASSERT_TRUE(s.ok());
  const auto plain = Example(*s->train, 1);
  std::vector<float> a(36), b(36);
  bool any_differs = false;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng r1(seed), r2(seed);
    s->train->Get(1, a.data(), &r1);
    s->train->Get(1, b.data(), &r2);
    EXPECT_EQ(a, b);
    any_differs = any_differs || a != plain;
    // Every value is either a source pixel or the (black) padding.
    for (float v : a) EXPECT_TRUE(v == 0.0f || std::find(plain.begin(), plain.end(), v) != plain.end());
  }
  EXPECT_TRUE(any_differs);
}

TEST(IdxTest, TruncatedImageFileIsDataLossWithFileAndOffset) {
  for (bool gz : {false, true}) {
    ScratchDir dir;
    WriteIdxDataset(dir.path(), 10, 2, gz);
    const std::string ext = gz ? ".gz" : "";
    // 10 images of 4x3 = 120 bytes of data announced, 50 present.
    const std::string full = IdxBytes({10, 4, 3}, PatternPixels(10, 12));
    WriteBytes(dir / ("train-images-idx3-ubyte" + ext), full.substr(0, 16 + 50), gz);
    auto r = OpenDataset(IdxConfig("mnist", dir.path(), true));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    const std::string& msg = r.status().message();
    EXPECT_NE(msg.find("train-images-idx3-ubyte" + ext +
                       ": truncated at byte offset 66: expected 120 bytes of "
                       "image data"),
              std::string::npos)
        << msg;
  }
}

TEST(IdxTest, CorruptFilesAreDataLoss) {
  ScratchDir dir;
  WriteIdxDataset(dir.path(), 10, 2, false);
  auto expect_loss = [&](const std::string& needle) {
    auto r = OpenDataset(IdxConfig("mnist", dir.path(), true));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  // Bad magic.
  std::string bad = IdxBytes({10, 4, 3}, PatternPixels(10, 12));
  bad[0] = 0x7f;
  WriteBytes(dir / "train-images-idx3-ubyte", bad);
  expect_loss("bad IDX magic");
  // Trailing garbage.
  WriteBytes(dir / "train-images-idx3-ubyte", IdxBytes({10, 4, 3}, PatternPixels(10, 12)) + "xx");
  expect_loss("2 unexpected bytes");
  // Count mismatch between images and labels.
  WriteBytes(dir / "train-images-idx3-ubyte", IdxBytes({9, 4, 3}, PatternPixels(9, 12)));
  expect_loss("holds 9 images but");
  // A label out of range, reported with its index and offset.
  WriteBytes(dir / "train-images-idx3-ubyte", IdxBytes({10, 4, 3}, PatternPixels(10, 12)));
  std::vector<uint8_t> labels(10, 1);
  labels[6] = 12;
  WriteBytes(dir / "train-labels-idx1-ubyte", IdxBytes({10}, labels));
  expect_loss("train-labels-idx1-ubyte: label 12 of example 6 (byte offset 14) is out of range [0, 10)");
  // Images stored as 2-d.
  WriteBytes(dir / "train-labels-idx1-ubyte", IdxBytes({10}, std::vector<uint8_t>(10, 1)));
  WriteBytes(dir / "train-images-idx3-ubyte", IdxBytes({10, 12}, PatternPixels(10, 12)));
  expect_loss("expected a 3-d u8 IDX image file");
}

TEST(IdxTest, MissingFilesAreNotFoundListingNames) {
  ScratchDir dir;
  WriteIdxDataset(dir.path(), 4, 2, true);
  std::filesystem::remove(dir / "t10k-labels-idx1-ubyte.gz");
  auto r = OpenDataset(IdxConfig("mnist", dir.path(), true));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("t10k-labels-idx1-ubyte.gz"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("t10k-labels.idx1-ubyte"), std::string::npos) << r.status().message();
}

TEST(IdxTest, AcceptsTheDottedFileNamesOfTheOriginalSite) {
  ScratchDir dir;
  WriteIdxDataset(dir.path(), 4, 2, false);
  for (const char* kind : {"images-idx3", "labels-idx1"}) {
    for (const char* prefix : {"train", "t10k"}) {
      std::string dotted = std::string(prefix) + "-" + kind + "-ubyte";
      dotted[dotted.find("-idx")] = '.';  // t10k-labels.idx1-ubyte
      std::filesystem::rename(dir / (std::string(prefix) + "-" + kind + "-ubyte"), dir / dotted);
    }
  }
  auto r = OpenDataset(IdxConfig("mnist", dir.path(), true));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->train->size(), 4);
}

TEST(IdxTest, InstalledFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << dir << " is not installed";
  DataConfig c;  // defaults: fashion-mnist, path auto
  auto r = OpenDataset(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->train->size(), 60000);
  EXPECT_EQ(r->test->size(), 10000);
  EXPECT_EQ(r->train->info().source, dir + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(r->train->info().example_shape, (std::vector<int64_t>{1, 28, 28}));
  std::vector<int64_t> counts(10);
  for (int64_t i = 0; i < r->train->size(); ++i) ++counts[static_cast<size_t>(r->train->Label(i))];
  for (int64_t c : counts) EXPECT_EQ(c, 6000);
  EXPECT_EQ(r->train->Label(0), 9);  // the first training image is an ankle boot
  // Normalised with the published constants: the training mean is about 0 and the std about 1.
  double sum = 0, sq = 0;
  std::vector<float> x(784);
  for (int64_t i = 0; i < 2000; ++i) {
    r->train->Get(i, x.data(), nullptr);
    for (float v : x) {
      sum += v;
      sq += v * v;
    }
  }
  const double n = 2000.0 * 784, mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / n - mean * mean), 1.0, 0.05);
  const size_t peak = geomx::testing::PeakRssBytes();
  RecordProperty("peak_rss_mb", std::to_string(peak >> 20));
  std::printf("peak RSS after opening Fashion-MNIST: %zu MB\n", peak >> 20);
  EXPECT_LT(peak, size_t{1} << 30);
}

}  // namespace
}  // namespace geomx::data
