// `geomx data fetch` as a user runs it, against a loopback server (--mirror): the default directory, re-runs,
// --force, and the exit codes of unknown names, HTTP errors and checksum mismatches.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/datasets/http_test_server.h"
#include "tests/testutil.h"

namespace geomx::testing {
namespace {

namespace fs = std::filesystem;

const char kDebianFashionMnist[] = "/usr/share/datasets/fashion-mnist";
const char* kFashionFiles[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                               "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Upstream's bytes from Debian's copy (the header rebuild tests/datasets/fetch_test.cc explains).
std::string UpstreamFile(const std::string& name) {
  const std::string debian = ReadFile(fs::path(kDebianFashionMnist) / name);
  const uint32_t mtime = name.rfind("train", 0) == 0 ? 1504176606u : 1504176627u;
  std::string out = debian.substr(0, 10);
  out[3] = 0x08;
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<char>((mtime >> (8 * i)) & 0xff);
  return out + name.substr(0, name.size() - 3) + '\0' + debian.substr(10);
}

TEST(DataFetchCli, FetchesIntoDataNameVerifiesOnRerunAndReplacesBadFilesOnlyWithForce) {
  if (!fs::is_directory(kDebianFashionMnist)) GTEST_SKIP() << kDebianFashionMnist << " missing";
  HttpTestServer server;
  for (const char* f : kFashionFiles) server.Serve(f, UpstreamFile(f));
  ScratchDir dir;
  const std::string mirror = " --mirror " + server.base_url();
  auto r = RunGeomx("data fetch fashion-mnist" + mirror, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : kFashionFiles) {
    EXPECT_TRUE(fs::is_regular_file(dir / "data/fashion-mnist" / f)) << f;
    EXPECT_TRUE(Contains(r.output, std::string(f) + ": verified sha256")) << r.output;
  }
  EXPECT_TRUE(Contains(r.output, "4 file(s) in data/fashion-mnist (4 downloaded, 0 already present)")) << r.output;

  r = RunGeomx("data fetch fashion-mnist" + mirror, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "t10k-labels-idx1-ubyte.gz: already present, verified")) << r.output;
  EXPECT_EQ(server.requests().size(), 4u);

  WriteFile(dir / "data/fashion-mnist/t10k-labels-idx1-ubyte.gz", "not the labels");
  r = RunGeomx("data fetch fashion-mnist" + mirror, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Contains(r.output, "data/fashion-mnist/t10k-labels-idx1-ubyte.gz exists but does not verify"))
      << r.output;
  EXPECT_TRUE(Contains(r.output, "--force")) << r.output;
  r = RunGeomx("data fetch fashion-mnist --force" + mirror, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFile(dir / "data/fashion-mnist/t10k-labels-idx1-ubyte.gz"), UpstreamFile("t10k-labels-idx1-ubyte.gz"));

  // --dir elsewhere, and a corrupted download: exit 1, nothing written.
  server.Corrupt("train-labels-idx1-ubyte.gz", 100);
  r = RunGeomx("data fetch fashion-mnist --dir other" + mirror, dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "train-labels-idx1-ubyte.gz: checksum mismatch")) << r.output;
  EXPECT_TRUE(Contains(r.output, "expected sha256 a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"))
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "other/train-labels-idx1-ubyte.gz"));
  EXPECT_FALSE(fs::exists(dir / "other/train-labels-idx1-ubyte.gz.part"));
  EXPECT_TRUE(fs::is_regular_file(dir / "other/train-images-idx3-ubyte.gz"));  // fetched before the bad one
}

TEST(DataFetchCli, UnknownNamesAndNetworkErrorsHaveTheirExitCodes) {
  ScratchDir dir;
  auto r = RunGeomx("data fetch fashion-mnst", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Contains(r.output, "did you mean 'fashion-mnist'")) << r.output;
  EXPECT_TRUE(Contains(r.output, "cifar10, fashion-mnist, mnist")) << r.output;

  HttpTestServer server;  // serves nothing
  r = RunGeomx("data fetch mnist --mirror " + server.base_url(), dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, server.base_url() + "train-images-idx3-ubyte.gz: HTTP status 404")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "data/mnist/train-images-idx3-ubyte.gz.part"));

  r = RunGeomx("data fetch mnist --mirror http://127.0.0.1:1/", dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "http://127.0.0.1:1/train-images-idx3-ubyte.gz")) << r.output;
}

}  // namespace
}  // namespace geomx::testing
