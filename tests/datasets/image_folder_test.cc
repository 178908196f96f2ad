#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <vector>

#include "datasets/dataset.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::ScratchDir;

// A solid BGR image of `size` x `size`.
void WriteSolid(const std::filesystem::path& path, cv::Scalar bgr, int size = 8) {
  std::filesystem::create_directories(path.parent_path());
  ASSERT_TRUE(cv::imwrite(path.string(), cv::Mat(size, size, CV_8UC3, bgr))) << path;
}

// root/{train,test}/{cat,ant,bee}: ant red, bee green, cat blue; cat has an extra JPEG.
void WriteFolder(const std::filesystem::path& root) {
  for (const char* split : {"train", "test"}) {
    const auto base = root / split;
    WriteSolid(base / "cat" / "0.png", {255, 0, 0});
    WriteSolid(base / "ant" / "0.png", {0, 0, 255});
    WriteSolid(base / "bee" / "0.png", {0, 255, 0}, 16);
    if (std::string(split) == "train") {
      WriteSolid(base / "ant" / "1.png", {0, 0, 200});
      WriteSolid(base / "cat" / "1.jpg", {250, 0, 0});
      geomx::testing::WriteFile(base / "cat" / "notes.txt", "not an image");
    }
  }
}

DataConfig FolderConfig(const std::filesystem::path& root, bool normalize, int channels = 3) {
  DataConfig c;
  c.name = "image-folder";
  c.path = root.string();
  c.normalize = normalize;
  c.image_height = 4;
  c.image_width = 5;
  c.image_channels = channels;
  return c;
}

std::vector<float> Example(const Dataset& d, int64_t i) {
  std::vector<float> out(
      static_cast<size_t>(d.info().example_shape[0] * d.info().example_shape[1] * d.info().example_shape[2]));
  d.Get(i, out.data(), nullptr);
  return out;
}

TEST(ImageFolderTest, SortedClassesResizedRgbChw) {
  ScratchDir dir;
  WriteFolder(dir.path());
  auto s = OpenDataset(FolderConfig(dir.path(), false));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train->info().class_names, (std::vector<std::string>{"ant", "bee", "cat"}));
  EXPECT_EQ(s->train->info().example_shape, (std::vector<int64_t>{3, 4, 5}));
  ASSERT_EQ(s->train->size(), 5);
  EXPECT_EQ(s->test->size(), 3);
  // Order: classes by name, files by name inside a class.
  const std::vector<int64_t> labels = {0, 0, 1, 2, 2};
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(s->train->Label(i), labels[static_cast<size_t>(i)]);
  const auto ant = Example(*s->train, 0);  // red: channel 0 (R) is 1, the others 0
  EXPECT_FLOAT_EQ(ant[0], 1.0f);
  EXPECT_FLOAT_EQ(ant[20], 0.0f);
  EXPECT_FLOAT_EQ(ant[40], 0.0f);
  const auto bee = Example(*s->train, 2);  // green, resized from 16x16
  EXPECT_FLOAT_EQ(bee[20 + 7], 1.0f);
  const auto cat_jpg = Example(*s->train, 4);  // blue, lossy: close to 250/255 in channel 2
  EXPECT_NEAR(cat_jpg[40 + 3], 250.0f / 255.0f, 0.03f);
  EXPECT_LT(cat_jpg[3], 0.05f);
}

TEST(ImageFolderTest, NormalisesWithTrainingChannelStatistics) {
  ScratchDir dir;
  WriteFolder(dir.path());
  auto s = OpenDataset(FolderConfig(dir.path(), true));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (int c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < s->train->size(); ++i) {
      const auto x = Example(*s->train, i);
      for (int p = 0; p < 20; ++p) {
        sum += x[static_cast<size_t>(c * 20 + p)];
        sq += x[static_cast<size_t>(c * 20 + p)] * x[static_cast<size_t>(c * 20 + p)];
      }
    }
    const double n = 5 * 20, mean = sum / n;
    EXPECT_NEAR(mean, 0.0, 1e-4) << c;
    EXPECT_NEAR(std::sqrt(sq / n - mean * mean), 1.0, 1e-3) << c;
  }
}

TEST(ImageFolderTest, GreyscaleAndAugmentation) {
  ScratchDir dir;
  WriteFolder(dir.path());
  auto s = OpenDataset(FolderConfig(dir.path(), false, /*channels=*/1));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train->info().example_shape, (std::vector<int64_t>{1, 4, 5}));
  std::vector<float> a(20), b(20);
  Rng r1(3), r2(3);
  s->train->Get(0, a.data(), &r1);
  s->train->Get(0, b.data(), &r2);
  EXPECT_EQ(a, b);
}

TEST(ImageFolderTest, CorruptImageIsDataLossNamingTheFile) {
  ScratchDir dir;
  WriteFolder(dir.path());
  geomx::testing::WriteFile(dir / "train" / "bee" / "broken.png", "\x89PNG\r\n\x1a\n garbage");
  auto s = OpenDataset(FolderConfig(dir.path(), true));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("broken.png"), std::string::npos) << s.status().message();
}

TEST(ImageFolderTest, MissingSplitAndUnknownTestClass) {
  ScratchDir dir;
  WriteFolder(dir.path());
  WriteSolid(dir / "test" / "dog" / "0.png", {1, 2, 3});
  auto unknown = OpenDataset(FolderConfig(dir.path(), true));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("'dog'"), std::string::npos);
  std::filesystem::remove_all(dir / "test");
  auto missing = OpenDataset(FolderConfig(dir.path(), true));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("test"), std::string::npos);
}

}  // namespace
}  // namespace geomx::data
