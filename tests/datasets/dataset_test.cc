#include "datasets/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace geomx::data {
namespace {

TEST(DatasetRegistryTest, ListsEveryFormat) {
  const auto names = DatasetNames();
  for (const char* n : {"cifar10", "csv", "fashion-mnist", "image-folder", "libsvm", "mnist", "synthetic"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_FALSE(DatasetHelp(n).empty()) << n;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(DatasetRegistryTest, UnknownNameIsNotFoundListingKnownNames) {
  DataConfig c;
  c.name = "imagenet-22k";
  auto r = OpenDataset(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("imagenet-22k"), std::string::npos);
  EXPECT_NE(r.status().message().find("fashion-mnist"), std::string::npos);
}

TEST(DatasetRegistryTest, AutoPathSaysWhereItLookedAndHowToGetTheData) {
  EXPECT_EQ(DatasetSearchPaths("fashion-mnist").front(), "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(DatasetSearchPaths("mnist").front(), "/usr/share/datasets/mnist");
  EXPECT_TRUE(DatasetSearchPaths("csv").empty());
  for (const auto& dir : DatasetSearchPaths("mnist")) {
    if (std::filesystem::exists(dir)) GTEST_SKIP() << dir << " exists on this machine";
  }
  DataConfig c;
  c.name = "mnist";
  c.path = "auto";
  auto r = OpenDataset(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/usr/share/datasets/mnist"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("train-images-idx3-ubyte.gz"), std::string::npos) << r.status().message();
}

TEST(DatasetRegistryTest, FashionMnistHintNamesTheDebianPackage) {
  for (const auto& dir : DatasetSearchPaths("fashion-mnist")) {
    if (std::filesystem::exists(dir)) GTEST_SKIP() << dir << " exists on this machine";
  }
  DataConfig c;
  auto r = OpenDataset(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("apt-get install dataset-fashion-mnist"), std::string::npos);
}

TEST(DatasetRegistryTest, FileFormatsRejectAutoPath) {
  for (const char* name : {"csv", "libsvm", "image-folder"}) {
    DataConfig c;
    c.name = name;
    auto r = OpenDataset(c);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(r.status().message().find("data.path"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace geomx::data
