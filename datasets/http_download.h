// One HTTP(S) download into a `.part` file, resumable, bounded and with timeouts: the transport of
// `geomx data fetch` (datasets/fetch.h). Backed by libcurl (libcurl4-openssl-dev); only this file pair sees it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/base/status.h"

namespace geomx::data {

struct HttpOptions {
  long connect_timeout_s = 30;        // give up on a host that does not accept the connection within this
  long low_speed_limit_bytes = 1024;  // abort a transfer slower than this many bytes/s ...
  long low_speed_time_s = 60;         // ... for this many seconds in a row (a stalled server never hangs us)
  // Called now and then during the transfer with the bytes the file holds and the bytes expected; may be empty.
  std::function<void(int64_t done, int64_t total)> progress;
};

struct DownloadResult {
  Status status;              // Ok: the file holds exactly `expected_size` bytes (not yet verified)
  int64_t resumed_from = 0;   // the offset of the Range request sent (0: a plain GET)
  bool restarted = false;     // the server answered a Range request with 200: the file was restarted from byte 0
  int64_t bytes = 0;          // the size of the .part file afterwards
  long http_code = 0;         // the last HTTP status received (0: none, e.g. connection refused)
  bool retryable = false;     // on error: the transfer broke off mid-way (cut, stalled); resuming may succeed
};

// Downloads `url` into `part_path`. A non-empty `part_path` is resumed with `Range: bytes=N-`: a 206 answer whose
// Content-Range starts at N is appended; a 200 answer restarts the file from zero; a 416 (the server has fewer bytes
// than the .part) or a .part larger than `expected_size` restarts from zero once. A .part of exactly
// `expected_size` bytes is returned as is, without a request. Never writes more than `expected_size` bytes: a
// server that sends more aborts the transfer and the .part is removed.
// Errors (in `status`, naming the URL): kUnavailable for HTTP errors (with the status code), refused or failed
// connections, oversized answers and transfers that ended early; kDeadlineExceeded for connect and low-speed
// timeouts; kInternal for local write errors (with the path). The .part is kept when it may be resumed and removed
// when it holds nothing useful. Thread-safe (one curl handle per call).
DownloadResult DownloadToPart(const std::string& url, const std::string& part_path, int64_t expected_size,
                              const HttpOptions& options);

}  // namespace geomx::data
