#include "datasets/fetch.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "datasets/dataset.h"
#include "datasets/sha256.h"
#include "engine/base/check.h"
#include "engine/base/closest_name.h"

namespace geomx::data {
namespace {

namespace fs = std::filesystem;

std::vector<TarMember> Cifar10Members() {
  // The binary version: 10000 records of 1 label byte + 3072 pixel bytes per batch (cifar10.cc reads them).
  std::vector<TarMember> m;
  for (const char* b : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                        "data_batch_5.bin", "test_batch.bin"}) {
    m.push_back({std::string("cifar-10-batches-bin/") + b, 10000 * 3073});
  }
  return m;
}

std::vector<FetchSource> BuildCatalogue() {
  std::vector<FetchSource> c;
  // Sizes and SHA-256 of the files as served, from TensorFlow Datasets' url_checksums (github.com/tensorflow/
  // datasets, tensorflow_datasets/url_checksums/{cifar10,fashion_mnist,mnist}.txt).
  //
  // CIFAR-10: also published by many projects pinning the same archive (its MD5 on the official page is
  // c32a1d4ab5d03f1284b67883e8d87530).
  c.push_back({"cifar10",
               "https://www.cs.toronto.edu/~kriz/",
               {{"cifar-10-binary.tar.gz", 170052171,
                 "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"}},
               "cifar-10-binary.tar.gz",
               Cifar10Members()});
  // Fashion-MNIST: the official S3 site (the README of github.com/zalandoresearch/fashion-mnist links it; HTTP
  // only, the digests protect the bytes). Cross-checked here against Debian's dataset-fashion-mnist package: its
  // files hold the same deflate streams with a shorter gzip header (no file name, another mtime); restoring the
  // header (FNAME = the file's name less ".gz", MTIME 1504176606 for train-*, 1504176627 for t10k-*) gives files
  // with exactly these SHA-256 and the MD5s of the Fashion-MNIST README.
  c.push_back({"fashion-mnist",
               "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
               {{"train-images-idx3-ubyte.gz", 26421880,
                 "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"},
                {"train-labels-idx1-ubyte.gz", 29515,
                 "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"},
                {"t10k-images-idx3-ubyte.gz", 4422102,
                 "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"},
                {"t10k-labels-idx1-ubyte.gz", 5148,
                 "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"}},
               "",
               {}});
  // MNIST: yann.lecun.com no longer serves the files; the PyTorch mirror holds the same originals (torchvision
  // checks it against the originals' MD5s). TFDS lists them at storage.googleapis.com/cvdf-datasets/mnist/.
  c.push_back({"mnist",
               "https://ossci-datasets.s3.amazonaws.com/mnist/",
               {{"train-images-idx3-ubyte.gz", 9912422,
                 "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},
                {"train-labels-idx1-ubyte.gz", 28881,
                 "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},
                {"t10k-images-idx3-ubyte.gz", 1648877,
                 "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},
                {"t10k-labels-idx1-ubyte.gz", 4542,
                 "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"}},
               "",
               {}});
  return c;
}

std::string SizeText(int64_t bytes) {
  char buf[32];
  if (bytes >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f kB", static_cast<double>(bytes) / 1e3);
  }
  return buf;
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

int64_t SizeOf(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? -1 : static_cast<int64_t>(n);
}

class Fetcher {
 public:
  Fetcher(const FetchSource& source, const FetchOptions& options, std::string dir, std::string base)
      : source_(source), options_(options), dir_(std::move(dir)), base_(std::move(base)) {}

  // Fetches and verifies one file (or finds it present and verified).
  Status FetchOne(const FetchFile& file, FetchReport* report) {
    const fs::path target = fs::path(dir_) / file.name;
    const std::string part = target.string() + ".part";
    if (IsFile(target)) {
      GEOMX_ASSIGN_OR_RETURN(const std::string have, Sha256OfFile(target.string()));
      if (have == file.sha256) {
        Log(file.name + ": already present, verified");
        report->present.push_back(file.name);
        return Status::Ok();
      }
      if (!options_.force) {
        return Status::FailedPrecondition(target.string() + " exists but does not verify (sha256 " + have +
                                          ", expected " + file.sha256 + "); rerun with --force to download it again");
      }
      Log(file.name + ": present but does not verify (sha256 " + have + "); downloading it again (--force)");
    }
    const std::string url = base_ + file.name;
    for (int attempt = 1;; ++attempt) {
      const int64_t had = std::max<int64_t>(SizeOf(part), 0);
      if (had > 0 && had < file.size) {
        Log(file.name + ": resuming " + url + " at byte " + std::to_string(had) + " of " + std::to_string(file.size));
      } else if (had == 0) {
        Log(file.name + ": downloading " + url + " (" + SizeText(file.size) + ")");
      }
      const DownloadResult r = DownloadToPart(url, part, file.size, options_.http);
      if (r.restarted) Log(file.name + ": the server did not resume; restarted from byte 0");
      if (r.status.ok()) break;
      if (!r.retryable || attempt >= options_.attempts) {
        const bool kept = SizeOf(part) > 0;
        return Status(r.status.code(), file.name + ": " + r.status.message() +
                                           (kept ? "; " + part + " is kept, run the fetch again to resume it" : ""));
      }
      Log(file.name + ": transfer broke off after " + std::to_string(r.bytes) + " bytes (" + r.status.message() +
          "); retrying");
    }
    GEOMX_ASSIGN_OR_RETURN(const std::string got, Sha256OfFile(part));
    if (got != file.sha256) {
      std::error_code ec;
      fs::remove(part, ec);
      return Status::Unavailable(file.name + ": checksum mismatch (downloaded from " + url + "): expected sha256 " +
                                 file.sha256 + ", got " + got + "; the download was deleted and " + target.string() +
                                 " was not written");
    }
    std::error_code ec;
    fs::rename(part, target, ec);
    if (ec) return Status::Internal(target.string() + ": cannot rename " + part + " into place: " + ec.message());
    Log(file.name + ": verified sha256 " + got);
    report->downloaded.push_back(file.name);
    return Status::Ok();
  }

  // Extracts the archive's members unless they are all there already (and the archive was not just replaced).
  Status Unpack(FetchReport* report) {
    if (source_.archive.empty()) return Status::Ok();
    const bool fresh = std::find(report->downloaded.begin(), report->downloaded.end(), source_.archive) !=
                       report->downloaded.end();
    const bool all_there = std::all_of(source_.members.begin(), source_.members.end(), [&](const TarMember& m) {
      return SizeOf(fs::path(dir_) / m.path) == m.size;
    });
    if (all_there && !fresh && !options_.force) {
      Log(source_.archive + ": already unpacked");
      return Status::Ok();
    }
    Log(source_.archive + ": unpacking " + std::to_string(source_.members.size()) + " files into " + dir_);
    GEOMX_RETURN_IF_ERROR(ExtractTarGz((fs::path(dir_) / source_.archive).string(), dir_, source_.members));
    report->unpacked = true;
    return Status::Ok();
  }

 private:
  void Log(const std::string& line) const {
    if (options_.log) options_.log(source_.name + ": " + line);
  }

  const FetchSource& source_;
  const FetchOptions& options_;
  const std::string dir_;
  const std::string base_;
};

}  // namespace

const std::vector<FetchSource>& FetchCatalogue() {
  static const std::vector<FetchSource> catalogue = BuildCatalogue();
  return catalogue;
}

Result<const FetchSource*> FindFetchSource(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& s : FetchCatalogue()) {
    if (s.name == name) return &s;
    names.push_back(s.name);
  }
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  const std::string hint = ClosestName(name, names);
  return Status::NotFound("data fetch: no download source for '" + name + "'" +
                          (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; known: " + known);
}

std::string DefaultFetchDir(const std::string& name) {
  for (const auto& dir : DatasetSearchPaths(name)) {
    if (fs::path(dir).is_relative()) return dir;
  }
  return "data/" + name;
}

Result<FetchReport> FetchDataset(const FetchSource& source, const FetchOptions& options) {
  GEOMX_CHECK(source.archive.empty() ||
              std::any_of(source.files.begin(), source.files.end(),
                          [&](const FetchFile& f) { return f.name == source.archive; }))
      << source.name << ": the archive " << source.archive << " is not one of the source's files";
  FetchReport report;
  report.dir = options.dir.empty() ? DefaultFetchDir(source.name) : options.dir;
  std::string base = options.mirror.empty() ? source.base_url : options.mirror;
  if (base.empty() || base.back() != '/') base += '/';
  std::error_code ec;
  fs::create_directories(report.dir, ec);
  if (ec || !fs::is_directory(report.dir, ec)) {
    return Status::InvalidArgument(report.dir + ": cannot create the data directory" +
                                   (ec ? ": " + ec.message() : std::string(" (a file is in the way)")));
  }
  Fetcher fetcher(source, options, report.dir, base);
  for (const auto& file : source.files) GEOMX_RETURN_IF_ERROR(fetcher.FetchOne(file, &report));
  GEOMX_RETURN_IF_ERROR(fetcher.Unpack(&report));
  return report;
}

}  // namespace geomx::data
