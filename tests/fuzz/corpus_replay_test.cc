// Every seed of tests/fuzz/corpus/<target>/ and every input fuzzing found a bug with (tests/fuzz/regressions/
// <target>/) goes through the target's entry function (fuzz/targets.h), as libFuzzer would run it: no crash, no
// exception, every refusal a Status with a message. Seeds named "ok-*" must be accepted and "bad-*" refused, so the
// corpus stays a set of inputs that reach both sides of each reader (docs/fuzzing.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "fuzz/targets.h"

namespace geomx::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs one input; returns how the target answered.
Status Replay(const Target& target, const fs::path& file) {
  const std::vector<uint8_t> bytes = ReadAll(file);
  Status s;
  try {
    s = target.run(bytes.data(), bytes.size());
  } catch (const std::exception& e) {
    ADD_FAILURE() << file << ": exception escaped the " << target.name << " target: " << e.what();
    return Status::Internal("exception");
  }
  if (!s.ok()) {
    EXPECT_FALSE(s.message().empty()) << file << ": an error without a message";
    EXPECT_NE(s.code(), StatusCode::kInternal) << file << ": " << s.ToString();
  }
  return s;
}

}  // namespace

// Names the target in test output instead of its bytes.
void PrintTo(const Target& target, std::ostream* os) { *os << target.name; }

namespace {

class CorpusReplay : public ::testing::TestWithParam<Target> {};

TEST_P(CorpusReplay, SeedsAreAcceptedOrRefusedAsNamed) {
  const Target& target = GetParam();
  const fs::path dir = fs::path(GEOMX_SOURCE_DIR) / "tests/fuzz/corpus" / target.name;
  const std::vector<fs::path> files = FilesIn(dir);
  int ok = 0, bad = 0;
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    const Status s = Replay(target, f);
    if (name.rfind("ok-", 0) == 0) {
      EXPECT_TRUE(s.ok()) << f << ": " << s.ToString();
      ++ok;
    } else if (name.rfind("bad-", 0) == 0) {
      EXPECT_FALSE(s.ok()) << f << " was accepted";
      ++bad;
    }
  }
  // Each corpus holds both kinds (a corpus path gone wrong would otherwise pass with nothing replayed).
  EXPECT_GE(ok, 1) << dir;
  EXPECT_GE(bad, 1) << dir;
}

TEST_P(CorpusReplay, RegressionInputsDoNotCrash) {
  const Target& target = GetParam();
  for (const fs::path& f : FilesIn(fs::path(GEOMX_SOURCE_DIR) / "tests/fuzz/regressions" / target.name)) {
    (void)Replay(target, f);
  }
}

TEST(CorpusReplayEdges, EmptyAndOneByteInputs) {
  for (const Target& t : Targets()) {
    for (int b = 0; b < 256; b += 17) {
      const uint8_t byte = static_cast<uint8_t>(b);
      const Status one = t.run(&byte, 1);
      if (!one.ok()) {
        EXPECT_FALSE(one.message().empty()) << t.name;
      }
    }
    const Status empty = t.run(nullptr, 0);
    if (!empty.ok()) {
      EXPECT_FALSE(empty.message().empty()) << t.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, CorpusReplay, ::testing::ValuesIn(Targets().begin(), Targets().end()),
                         [](const ::testing::TestParamInfo<Target>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace geomx::fuzz
