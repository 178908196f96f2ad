// `geomx data fetch NAME`: downloads a data set's official files into a data directory, verifies every file's
// SHA-256 against the catalogue, and unpacks archives into the layout the readers expect (docs/data_formats.md).
//
// Each file goes to FILE.part first (resumed with an HTTP Range request when a previous transfer was cut), is
// verified, then renamed into place, so a final file name always holds verified bytes. Not safe to run twice at
// once on the same directory; safe otherwise (no shared state).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "datasets/http_download.h"
#include "datasets/tar_gz.h"
#include "engine/base/status.h"

namespace geomx::data {

// One file of a data set's source.
struct FetchFile {
  std::string name;    // its name in the data directory, and its URL below the source's base URL
  int64_t size = 0;    // exact size in bytes: a download is never allowed to grow past it
  std::string sha256;  // expected digest, 64 lowercase hex characters
};

// Where a data set comes from and what it unpacks to.
struct FetchSource {
  std::string name;      // the data set's name, as in recipes (data.name)
  std::string base_url;  // default source, ending in '/': a file's URL is base_url + file.name
  std::vector<FetchFile> files;
  std::string archive;              // when non-empty, the name of one of `files`: a .tar.gz unpacked after download
  std::vector<TarMember> members;   // what to extract from `archive` (paths relative to the data directory)
};

// The data sets `geomx data fetch` knows (fashion-mnist, mnist, cifar10), sorted by name, with the official URLs,
// sizes and published SHA-256 digests (the sources are cited in fetch.cc).
const std::vector<FetchSource>& FetchCatalogue();

// The catalogue entry for `name`. kNotFound (exit code 2) naming the known names, with a "did you mean" hint for a
// near miss.
Result<const FetchSource*> FindFetchSource(const std::string& name);

// The directory a fetch writes to by default: the first relative directory `path: auto` searches for `name`
// (data/<name> below the working directory), so that after a fetch `geomx data list` and recipes with
// `path: auto` find the data.
std::string DefaultFetchDir(const std::string& name);

struct FetchOptions {
  std::string dir;     // target directory, created if missing ("": DefaultFetchDir(source.name))
  std::string mirror;  // base URL replacing the source's ("": the official one); a trailing '/' is added if missing
  bool force = false;  // download again over existing files that fail verification (otherwise they are refused)
  int attempts = 3;    // transfers per file: one cut or stalled mid-way is resumed from where it stopped
  HttpOptions http;    // timeouts and the progress callback
  std::function<void(const std::string&)> log;  // one line per event (skip, download, resume, verify, unpack)
};

struct FetchReport {
  std::string dir;                      // where the files are
  std::vector<std::string> downloaded;  // files fetched and verified now
  std::vector<std::string> present;     // files already there, verified
  bool unpacked = false;                // the archive's members were extracted now
};

// Fetches every file of `source` into the target directory. A file already there that verifies is skipped; one
// that does not is refused with kFailedPrecondition (exit code 2) naming it and --force, unless options.force.
// Errors: kUnavailable / kDeadlineExceeded (exit code 1) for transfers (naming the URL and the HTTP status or the
// network error; a resumable FILE.part is kept) and for a checksum mismatch (naming the file and both digests;
// the .part is removed and no final file is written); kInvalidArgument for a directory that cannot be created;
// kInternal for local write errors; the errors of ExtractTarGz.
Result<FetchReport> FetchDataset(const FetchSource& source, const FetchOptions& options);

}  // namespace geomx::data
