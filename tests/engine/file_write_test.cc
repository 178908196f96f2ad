// WriteFileAtomically (engine/base/file_write.h): whole-file writes that either land completely or report a
// runtime failure naming the file (exit code 1 at the CLI), leaving no temporary file behind.
#include "engine/base/file_write.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::ScratchDir;
using testing::WriteFile;

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(FileWriteTest, WritesAndReplacesTheWholeFile) {
  ScratchDir dir;
  const fs::path path = dir / "summary.json";
  ASSERT_TRUE(WriteFileAtomically(path, "first version, longer than the second\n").ok());
  EXPECT_EQ(ReadFile(path), "first version, longer than the second\n");
  ASSERT_TRUE(WriteFileAtomically(path, "second\n").ok());
  EXPECT_EQ(ReadFile(path), "second\n");
  ASSERT_TRUE(WriteFileAtomically(dir / "empty", "").ok());
  EXPECT_EQ(ReadFile(dir / "empty"), "");
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"empty", "summary.json"}));  // no .tmp left
}

TEST(FileWriteTest, AFullDiskIsAResourceErrorNamingTheFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  // /dev/full accepts open() and fails every write with ENOSPC; being a device it is written in place.
  const Status st = WriteFileAtomically("/dev/full", std::string(10000, 'x'));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_FALSE(st.IsUserError()) << "a full disk is a runtime failure (exit 1), not bad input (exit 2)";
  EXPECT_NE(st.message().find("/dev/full"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.message();
  EXPECT_TRUE(fs::is_character_file("/dev/full")) << "the device must not be replaced by a regular file";
}

TEST(FileWriteTest, AParentThatIsAFileIsARuntimeErrorNamingTheFile) {
  ScratchDir dir;
  WriteFile(dir / "plain", "not a folder");
  const fs::path path = dir / "plain" / "metrics.csv";
  const Status st = WriteFileAtomically(path, "a,b\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInternal) << st.ToString();
  EXPECT_FALSE(st.IsUserError());
  EXPECT_NE(st.message().find(path.string()), std::string::npos) << st.message();
  EXPECT_EQ(ReadFile(dir / "plain"), "not a folder");
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"plain"});
}

TEST(FileWriteTest, AFailedReplaceKeepsTheTargetAndRemovesTheTemporaryFile) {
  ScratchDir dir;
  fs::create_directory(dir / "model.gxm");  // rename() cannot put a file over a folder
  WriteFile(dir / "model.gxm" / "inside", "kept");
  const Status st = WriteFileAtomically(dir / "model.gxm", "model bytes");
  ASSERT_FALSE(st.ok());
  EXPECT_FALSE(st.IsUserError());
  EXPECT_NE(st.message().find("model.gxm"), std::string::npos) << st.message();
  EXPECT_EQ(ReadFile(dir / "model.gxm" / "inside"), "kept");
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"model.gxm"});
}

}  // namespace
}  // namespace geomx
