// Writing whole output files (run folder files, checkpoints, model files, predictions, charts) so that a reader
// never sees a half-written file and a failed write is reported instead of lost.
#pragma once

#include <filesystem>
#include <string_view>

#include "engine/base/status.h"

namespace geomx {

// Writes `bytes` to `path`: first to "<path>.tmp" in the same folder, flushed to the disk (fsync), then renamed
// over `path`, so `path` holds either its old contents or all of `bytes`, never a part of them. When `path`
// exists and is not a regular file (a device such as /dev/stdout or /dev/full, a FIFO) it is written in place.
// Thread-compatible: concurrent writes of the same `path` race on "<path>.tmp".
//
// Errors name `path` and are runtime failures (exit code 1 at the CLI, never "bad input"): kResourceExhausted
// when the disk or the quota is full (ENOSPC, EDQUOT, EFBIG), kInternal for any other failure (no permission, a
// parent folder that is a file or missing, an I/O error). On error the temporary file is removed and `path` is
// left as it was (a device or FIFO may have received part of `bytes`).
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace geomx
