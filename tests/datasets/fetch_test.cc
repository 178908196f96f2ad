// FetchDataset over a loopback HTTP server (tests/datasets/http_test_server.h): the real Fashion-MNIST files with
// the real catalogue, resuming a cut transfer with a Range request, checksum mismatches, HTTP and connection
// errors, existing files with and without --force, and CIFAR-10's archive unpacked into the reader's layout.
#include "datasets/fetch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/sha256.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/datasets/http_test_server.h"
#include "tests/datasets/tar_fixture.h"
#include "tests/testutil.h"

namespace geomx::testing {
namespace {

namespace fs = std::filesystem;

const char kDebianFashionMnist[] = "/usr/share/datasets/fashion-mnist";

std::string Blob(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (char& c : s) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>(seed >> 24);
  }
  return s;
}

// A one-file source served by `server` (the catalogue entry a test passes in place of the real ones).
data::FetchSource BlobSource(const std::string& bytes) {
  return {"blobs", "http://127.0.0.1:1/", {{"blob.bin", static_cast<int64_t>(bytes.size()), data::Sha256Hex(bytes)}},
          "", {}};
}

data::FetchOptions Options(const fs::path& dir, const HttpTestServer& server, std::vector<std::string>* log) {
  data::FetchOptions o;
  o.dir = dir.string();
  o.mirror = server.base_url();
  o.attempts = 1;
  o.http.connect_timeout_s = 10;
  o.http.low_speed_time_s = 10;
  if (log) o.log = [log](const std::string& line) { log->push_back(line); };
  return o;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool AnyLineContains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines) {
    if (Contains(l, part)) return true;
  }
  return false;
}

// The file as Zalando's S3 site serves it, rebuilt from Debian's copy: Debian's package holds the same deflate
// stream under a 10-byte gzip header without a file name; upstream's header names the file (FNAME) and carries the
// mtime the files were made with (fetch.cc cites this cross-check).
std::string UpstreamFashionMnistFile(const std::string& debian, const std::string& name) {
  EXPECT_GE(debian.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(debian[3]), 0u) << name << ": Debian's header has flags";
  const uint32_t mtime = name.rfind("train", 0) == 0 ? 1504176606u : 1504176627u;
  std::string out = debian.substr(0, 10);
  out[3] = 0x08;  // FNAME
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<char>((mtime >> (8 * i)) & 0xff);
  out += name.substr(0, name.size() - 3);  // without ".gz"
  out += '\0';
  out += debian.substr(10);
  return out;
}

TEST(FetchCatalogue, ListsTheThreeDataSetsWithWellFormedDigests) {
  const auto& catalogue = data::FetchCatalogue();
  ASSERT_EQ(catalogue.size(), 3u);
  EXPECT_EQ(catalogue[0].name, "cifar10");
  EXPECT_EQ(catalogue[1].name, "fashion-mnist");
  EXPECT_EQ(catalogue[2].name, "mnist");
  for (const auto& source : catalogue) {
    EXPECT_EQ(source.base_url.back(), '/') << source.name;
    for (const auto& f : source.files) {
      EXPECT_GT(f.size, 0) << f.name;
      ASSERT_EQ(f.sha256.size(), 64u) << f.name;
      EXPECT_EQ(f.sha256.find_first_not_of("0123456789abcdef"), std::string::npos) << f.name;
    }
    // Fetching into the default directory is what `path: auto` finds.
    const auto search = data::DatasetSearchPaths(source.name);
    EXPECT_NE(std::find(search.begin(), search.end(), data::DefaultFetchDir(source.name)), search.end())
        << source.name;
  }
  EXPECT_EQ(data::DefaultFetchDir("mnist"), "data/mnist");
  EXPECT_EQ(catalogue[0].archive, "cifar-10-binary.tar.gz");
  ASSERT_EQ(catalogue[0].members.size(), 6u);
  EXPECT_EQ(catalogue[0].members[5].path, "cifar-10-batches-bin/test_batch.bin");
  EXPECT_EQ(catalogue[0].members[5].size, 30730000);

  auto typo = data::FindFetchSource("fashion-mnst");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), StatusCode::kNotFound);  // exit code 2
  EXPECT_TRUE(Contains(typo.status().message(), "did you mean 'fashion-mnist'")) << typo.status().message();
  EXPECT_TRUE(Contains(typo.status().message(), "cifar10, fashion-mnist, mnist")) << typo.status().message();
  ASSERT_TRUE(data::FindFetchSource("mnist").ok());
}

TEST(FetchDataset, TheRealFashionMnistFilesVerifyAgainstTheCatalogueAndOpen) {
  if (!fs::is_directory(kDebianFashionMnist)) GTEST_SKIP() << kDebianFashionMnist << " missing";
  auto source = data::FindFetchSource("fashion-mnist");
  ASSERT_TRUE(source.ok());
  HttpTestServer server;
  for (const auto& f : (*source)->files) {
    const std::string upstream = UpstreamFashionMnistFile(ReadFile(fs::path(kDebianFashionMnist) / f.name), f.name);
    EXPECT_EQ(static_cast<int64_t>(upstream.size()), f.size) << f.name;
    server.Serve(f.name, upstream);
  }
  ScratchDir dir;
  std::vector<std::string> log;
  auto report = data::FetchDataset(**source, Options(dir / "fm", server, &log));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->downloaded.size(), 4u);
  for (const auto& f : (*source)->files) {
    EXPECT_EQ(*data::Sha256OfFile((dir / "fm" / f.name).string()), f.sha256) << f.name;
    EXPECT_FALSE(fs::exists(dir / "fm" / (f.name + ".part"))) << f.name;
  }
  data::DataConfig config;
  config.name = "fashion-mnist";
  config.path = (dir / "fm").string();
  auto splits = data::OpenDataset(config);
  ASSERT_TRUE(splits.ok()) << splits.status().message();
  EXPECT_EQ(splits->train->size(), 60000);
  EXPECT_EQ(splits->test->size(), 10000);

  // Again: nothing is downloaded, every file is verified in place.
  const size_t requests = server.requests().size();
  log.clear();
  report = data::FetchDataset(**source, Options(dir / "fm", server, &log));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->present.size(), 4u);
  EXPECT_EQ(server.requests().size(), requests);
  EXPECT_TRUE(AnyLineContains(log, "train-images-idx3-ubyte.gz: already present, verified"));
}

TEST(FetchDataset, ResumesACutTransferWithARangeRequest) {
  const std::string bytes = Blob(100000, 1);
  const data::FetchSource source = BlobSource(bytes);
  HttpTestServer server;
  server.Serve("blob.bin", bytes);
  server.CutAfter("blob.bin", 30000);
  ScratchDir dir;
  std::vector<std::string> log;
  auto first = data::FetchDataset(source, Options(dir.path(), server, &log));
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable);  // exit code 1
  EXPECT_TRUE(Contains(first.status().message(), "broke off after 30000 of 100000 bytes")) << first.status().message();
  EXPECT_TRUE(Contains(first.status().message(), "run the fetch again to resume")) << first.status().message();
  EXPECT_EQ(fs::file_size(dir / "blob.bin.part"), 30000u);
  EXPECT_FALSE(fs::exists(dir / "blob.bin"));

  auto second = data::FetchDataset(source, Options(dir.path(), server, &log));
  ASSERT_TRUE(second.ok()) << second.status().message();
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].range, "");
  EXPECT_EQ(requests[1].range, "bytes=30000-");
  EXPECT_EQ(requests[1].status, 206);
  EXPECT_EQ(ReadFile(dir / "blob.bin"), bytes);
  EXPECT_FALSE(fs::exists(dir / "blob.bin.part"));
  EXPECT_TRUE(AnyLineContains(log, "resuming " + server.base_url() + "blob.bin at byte 30000 of 100000"));
}

TEST(FetchDataset, RetriesACutTransferWithinOneFetch) {
  const std::string bytes = Blob(200000, 2);
  HttpTestServer server;
  server.Serve("blob.bin", bytes);
  server.CutAfter("blob.bin", 12345, /*times=*/2);  // the first two answers break off
  ScratchDir dir;
  data::FetchOptions options = Options(dir.path(), server, nullptr);
  options.attempts = 3;
  auto report = data::FetchDataset(BlobSource(bytes), options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].range, "bytes=12345-");
  EXPECT_EQ(requests[2].range, "bytes=24690-");
  EXPECT_EQ(ReadFile(dir / "blob.bin"), bytes);
}

TEST(FetchDataset, RestartsFromZeroWhenTheServerIgnoresTheRangeOrThePartIsTooLong) {
  const std::string bytes = Blob(50000, 3);
  HttpTestServer server;
  server.Serve("blob.bin", bytes);
  server.IgnoreRanges(true);
  ScratchDir dir;
  WriteFile(dir / "blob.bin.part", bytes.substr(0, 20000));
  std::vector<std::string> log;
  auto report = data::FetchDataset(BlobSource(bytes), Options(dir.path(), server, &log));
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].range, "bytes=20000-");
  EXPECT_EQ(server.requests()[0].status, 200);
  EXPECT_TRUE(AnyLineContains(log, "restarted from byte 0"));
  EXPECT_EQ(ReadFile(dir / "blob.bin"), bytes);  // not the old prefix followed by the whole file

  fs::remove(dir / "blob.bin");
  WriteFile(dir / "blob.bin.part", Blob(60000, 9));  // longer than the file: cannot be a prefix of it
  report = data::FetchDataset(BlobSource(bytes), Options(dir.path(), server, nullptr));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(server.requests().back().range, "");
  EXPECT_EQ(ReadFile(dir / "blob.bin"), bytes);
}

TEST(FetchDataset, AChecksumMismatchLeavesNoFileAndNamesBothDigests) {
  const std::string bytes = Blob(70000, 4);
  HttpTestServer server;
  server.Serve("blob.bin", bytes);
  server.Corrupt("blob.bin", 4321);
  std::string corrupted = bytes;
  corrupted[4321] = static_cast<char>(corrupted[4321] ^ 0xff);
  ScratchDir dir;
  auto report = data::FetchDataset(BlobSource(bytes), Options(dir.path(), server, nullptr));
  ASSERT_FALSE(report.ok());
  const std::string& msg = report.status().message();
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);  // exit code 1
  EXPECT_TRUE(Contains(msg, "blob.bin: checksum mismatch")) << msg;
  EXPECT_TRUE(Contains(msg, "expected sha256 " + data::Sha256Hex(bytes))) << msg;
  EXPECT_TRUE(Contains(msg, "got " + data::Sha256Hex(corrupted))) << msg;
  EXPECT_FALSE(fs::exists(dir / "blob.bin"));
  EXPECT_FALSE(fs::exists(dir / "blob.bin.part"));
}

TEST(FetchDataset, HttpAndConnectionErrorsNameTheUrl) {
  const std::string bytes = Blob(1000, 5);
  HttpTestServer server;  // serves nothing: 404
  ScratchDir dir;
  auto report = data::FetchDataset(BlobSource(bytes), Options(dir.path(), server, nullptr));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(report.status().message(), server.base_url() + "blob.bin: HTTP status 404"))
      << report.status().message();
  EXPECT_FALSE(fs::exists(dir / "blob.bin.part"));

  // A port nobody listens on: bind one, note it, close it.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  data::FetchOptions options = Options(dir.path(), server, nullptr);
  options.mirror = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));  // no trailing '/': one is added
  report = data::FetchDataset(BlobSource(bytes), options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(report.status().message(), options.mirror + "/blob.bin")) << report.status().message();
  EXPECT_FALSE(fs::exists(dir / "blob.bin.part"));
}

TEST(FetchDataset, NeverWritesMoreThanTheCatalogueSize) {
  const std::string bytes = Blob(5000, 6);
  HttpTestServer server;
  server.Serve("blob.bin", bytes + Blob(100000, 7));  // the server's file is longer than the catalogue says
  ScratchDir dir;
  // With a Content-Length, curl refuses the answer before any byte is written ...
  auto report = data::FetchDataset(BlobSource(bytes), Options(dir.path(), server, nullptr));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(report.status().message(), "announces more than the 5000 bytes expected"))
      << report.status().message();
  EXPECT_FALSE(fs::exists(dir / "blob.bin"));
  EXPECT_FALSE(fs::exists(dir / "blob.bin.part"));
  // ... without one, the write that would pass the size stops the transfer and the .part goes.
  server.OmitContentLength(true);
  report = data::FetchDataset(BlobSource(bytes), Options(dir.path(), server, nullptr));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(report.status().message(), "the server sent more than the 5000 bytes expected"))
      << report.status().message();
  EXPECT_FALSE(fs::exists(dir / "blob.bin"));
  EXPECT_FALSE(fs::exists(dir / "blob.bin.part"));
}

TEST(FetchDataset, RefusesAnExistingBadFileUnlessForced) {
  const std::string bytes = Blob(3000, 8);
  HttpTestServer server;
  server.Serve("blob.bin", bytes);
  ScratchDir dir;
  WriteFile(dir / "blob.bin", "stale bytes");
  auto report = data::FetchDataset(BlobSource(bytes), Options(dir.path(), server, nullptr));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);  // exit code 2
  EXPECT_TRUE(Contains(report.status().message(), (dir / "blob.bin").string() + " exists but does not verify"))
      << report.status().message();
  EXPECT_TRUE(Contains(report.status().message(), "--force")) << report.status().message();
  EXPECT_EQ(ReadFile(dir / "blob.bin"), "stale bytes");
  EXPECT_TRUE(server.requests().empty());

  data::FetchOptions options = Options(dir.path(), server, nullptr);
  options.force = true;
  report = data::FetchDataset(BlobSource(bytes), options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(ReadFile(dir / "blob.bin"), bytes);
  EXPECT_EQ(report->downloaded, std::vector<std::string>{"blob.bin"});
}

TEST(FetchDataset, UnpacksTheCifar10ArchiveIntoTheLayoutTheReaderOpens) {
  // A miniature of cifar-10-binary.tar.gz: the same member names, 3 records per batch.
  std::string tar = TarEntry("cifar-10-batches-bin/", "", '5');
  std::vector<data::TarMember> members;
  for (int b = 0; b < 6; ++b) {
    const std::string name = b < 5 ? "data_batch_" + std::to_string(b + 1) + ".bin" : "test_batch.bin";
    std::string batch;
    for (int r = 0; r < 3; ++r) batch += CifarRecord(static_cast<uint8_t>((b * 3 + r) % 10), 100 * b + r);
    tar += TarEntry("cifar-10-batches-bin/" + name, batch);
    members.push_back({"cifar-10-batches-bin/" + name, static_cast<int64_t>(batch.size())});
  }
  tar += TarEntry("cifar-10-batches-bin/readme.html", "<html></html>") + TarEnd();
  const std::string archive = Gzip(tar);
  const data::FetchSource source{"cifar10", "http://127.0.0.1:1/",
                                 {{"cifar-10-binary.tar.gz", static_cast<int64_t>(archive.size()),
                                   data::Sha256Hex(archive)}},
                                 "cifar-10-binary.tar.gz", members};
  HttpTestServer server;
  server.Serve("cifar-10-binary.tar.gz", archive);
  ScratchDir dir;
  std::vector<std::string> log;
  auto report = data::FetchDataset(source, Options(dir / "cifar10", server, &log));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->unpacked);
  EXPECT_FALSE(fs::exists(dir / "cifar10/cifar-10-batches-bin/readme.html"));

  data::DataConfig config;
  config.name = "cifar10";
  config.path = (dir / "cifar10").string();
  auto splits = data::OpenDataset(config);
  ASSERT_TRUE(splits.ok()) << splits.status().message();
  EXPECT_EQ(splits->train->size(), 15);
  EXPECT_EQ(splits->test->size(), 3);
  EXPECT_EQ(splits->train->Label(4), 4);
  EXPECT_EQ(splits->test->Label(2), 7);  // record 2 of batch 5: (5 * 3 + 2) % 10

  // Again: the archive verifies and the members are in place, so nothing is fetched or unpacked.
  log.clear();
  report = data::FetchDataset(source, Options(dir / "cifar10", server, &log));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_FALSE(report->unpacked);
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_TRUE(AnyLineContains(log, "cifar-10-binary.tar.gz: already unpacked"));
}

}  // namespace
}  // namespace geomx::testing
