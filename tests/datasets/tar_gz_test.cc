// ExtractTarGz against archives written byte by byte (tests/datasets/tar_fixture.h): the members asked for land in
// place with their bytes, the rest is skipped, and damaged archives or unsafe member paths are refused.
#include "datasets/tar_gz.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/datasets/tar_fixture.h"
#include "tests/testutil.h"

namespace geomx::testing {
namespace {

namespace fs = std::filesystem;

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + static_cast<size_t>(seed) * 17) % 251);
  return s;
}

TEST(TarGz, ExtractsTheListedMembersAndSkipsTheRest) {
  ScratchDir dir;
  const std::string a = Pattern(1000, 1);   // not a multiple of 512: padding follows
  const std::string b = Pattern(1536, 2);   // exactly three blocks
  const std::string c = Pattern(700, 3);
  const std::string long_dir = "top/" + std::string(120, 'd');  // > 100 bytes: GNU long name
  const std::string tar = TarEntry("top/", "", '5') + TarEntry("top/skip.txt", "not wanted") +
                          TarEntry("top/a.bin", a) + TarEntry("top/link", "", '2') + TarEntry("./top/b.bin", b) +
                          TarLongNameEntry(long_dir + "/c.bin", c) + TarEnd();
  WriteFile(dir / "x.tar.gz", Gzip(tar));
  const Status s = data::ExtractTarGz((dir / "x.tar.gz").string(), (dir / "out").string(),
                                      {{"top/a.bin", 1000}, {"top/b.bin", 1536}, {long_dir + "/c.bin", 700}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(dir / "out/top/a.bin"), a);
  EXPECT_EQ(ReadFile(dir / "out/top/b.bin"), b);
  EXPECT_EQ(ReadFile(dir / "out" / long_dir / "c.bin"), c);
  EXPECT_FALSE(fs::exists(dir / "out/top/skip.txt"));
  EXPECT_FALSE(fs::exists(dir / "out/top/link"));
  EXPECT_FALSE(fs::exists(dir / "out/top/a.bin.part"));
}

TEST(TarGz, RefusesDamagedArchivesAndUnsafePaths) {
  ScratchDir dir;
  const std::string a = Pattern(600, 4);
  auto extract = [&](const std::string& gz_bytes, const std::vector<data::TarMember>& members) {
    WriteFile(dir / "t.tar.gz", gz_bytes);
    return data::ExtractTarGz((dir / "t.tar.gz").string(), (dir / "out").string(), members);
  };
  // Bad header checksum.
  Status s = extract(Gzip(TarEntry("a.bin", a, '0', /*bad_checksum=*/true) + TarEnd()), {{"a.bin", 600}});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.message();
  // Truncated inside the member's data: no final file, no .part.
  const std::string whole = TarEntry("a.bin", a) + TarEnd();
  s = extract(Gzip(whole.substr(0, 512 + 300)), {{"a.bin", 600}});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(dir / "out/a.bin"));
  EXPECT_FALSE(fs::exists(dir / "out/a.bin.part"));
  // A member of another size, and a missing member.
  s = extract(Gzip(whole), {{"a.bin", 601}});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("expected 601"), std::string::npos) << s.message();
  s = extract(Gzip(whole), {{"b.bin", 600}});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("no member b.bin"), std::string::npos) << s.message();
  // A member that is not a regular file.
  s = extract(Gzip(TarEntry("a.bin", "", '2') + TarEnd()), {{"a.bin", 0}});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  // Not gzip at all.
  s = extract(whole, {{"a.bin", 600}});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("not a gzip"), std::string::npos) << s.message();
  // Paths that would leave the target directory are refused before anything is read.
  for (const char* bad : {"../a.bin", "/etc/a.bin", "x/../../a.bin", ""}) {
    s = extract(Gzip(whole), {{bad, 600}});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(fs::exists(dir / "a.bin"));
}

}  // namespace
}  // namespace geomx::testing
