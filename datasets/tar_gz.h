// Extraction of chosen members from a gzip-compressed tar archive (POSIX ustar, GNU long names, pax headers): how
// `geomx data fetch cifar10` unpacks the official cifar-10-binary.tar.gz. Reads through zlib; pure function of its
// arguments, thread-safe for distinct target files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::data {

struct TarMember {
  std::string path;  // inside the archive ("cifar-10-batches-bin/test_batch.bin"), and where it lands under the dir
  int64_t size = 0;  // its exact size in bytes
};

// Extracts `members` of the .tar.gz `archive` into `dir` (as dir/path), each written to PATH.part and renamed into
// place once complete. Entries not listed are skipped; links, devices and directories are never created from the
// archive (a member's parent directories are). Errors: kInvalidArgument (a member path that is empty, absolute or
// has a "." or ".." part); kDataLoss naming the archive (not gzip, a header checksum mismatch, truncated, a listed
// member missing, not a regular file or of another size); kInternal (a write error, naming the file).
Status ExtractTarGz(const std::string& archive, const std::string& dir, const std::vector<TarMember>& members);

}  // namespace geomx::data
