#include "datasets/http_download.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace geomx::data {
namespace {

void CurlGlobalInitOnce() {
  // curl_global_init is not thread-safe before 7.84; a function-local static runs it exactly once.
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)rc;
}

struct CurlCleanup {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

// The state the callbacks share with DownloadOnce. Borrowed pointers live as long as the call.
struct Transfer {
  CURL* curl = nullptr;
  FILE* file = nullptr;
  const HttpOptions* options = nullptr;
  int64_t pos = 0;            // bytes the file holds now
  int64_t limit = 0;          // the expected size: never written past
  int64_t range_start = -1;   // the first byte of the current response's Content-Range (-1: none)
  bool body_started = false;  // the first body bytes of the final response arrived (status checked)
  bool restarted = false;
  std::string abort_reason;   // why a callback stopped the transfer (the server's fault)
  std::string write_error;    // why a callback stopped the transfer (our disk's fault)
  bool remove_part = false;   // what the .part holds is known to be wrong
  bool bad_range = false;     // the server answered the Range request with another range: start over
};

bool StartsWithNoCase(const char* s, size_t n, const char* prefix) {
  const size_t k = std::strlen(prefix);
  if (n < k) return false;
  for (size_t i = 0; i < k; ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (StartsWithNoCase(data, len, "http/")) {
    t->range_start = -1;  // a new response (after a redirect, or a 100 Continue)
  } else if (StartsWithNoCase(data, len, "content-range:")) {
    // "Content-Range: bytes 1000-1999/2000"
    std::string v(data + 14, len - 14);
    const size_t at = v.find("bytes");
    if (at != std::string::npos) t->range_start = std::strtoll(v.c_str() + at + 5, nullptr, 10);
  }
  return len;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (!t->body_started) {
    t->body_started = true;
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code == 206) {
      if (t->range_start != t->pos) {
        t->abort_reason = "asked for bytes " + std::to_string(t->pos) + "- but the server's Content-Range starts at " +
                          std::to_string(t->range_start);
        t->bad_range = true;
        return 0;
      }
    } else if (code == 200) {
      if (t->pos > 0) {  // the server ignored the Range header: start over
        if (std::fflush(t->file) != 0 || ftruncate(fileno(t->file), 0) != 0) {
          t->write_error = std::strerror(errno);
          return 0;
        }
        t->pos = 0;
        t->restarted = true;
      }
    } else {
      t->abort_reason = "unexpected HTTP status " + std::to_string(code);
      return 0;
    }
  }
  if (t->pos + static_cast<int64_t>(len) > t->limit) {
    t->abort_reason = "the server sent more than the " + std::to_string(t->limit) + " bytes expected";
    t->remove_part = true;
    return 0;
  }
  if (len > 0 && std::fwrite(data, 1, len, t->file) != len) {
    t->write_error = std::strerror(errno);
    return 0;
  }
  t->pos += static_cast<int64_t>(len);
  if (t->options->progress) t->options->progress(t->pos, t->limit);
  return len;
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(size);
}

void RemoveFile(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

// One request. `*retry_from_zero` is set when the server refused the range (416): the caller starts over once.
DownloadResult DownloadOnce(const std::string& url, const std::string& part_path, int64_t expected_size,
                            const HttpOptions& options, bool* retry_from_zero) {
  DownloadResult res;
  int64_t offset = FileSize(part_path);
  if (offset > expected_size) {  // not a prefix of the file we want
    RemoveFile(part_path);
    offset = -1;
  }
  if (offset == expected_size) {
    res.bytes = offset;
    return res;
  }
  if (offset < 0) offset = 0;

  std::unique_ptr<FILE, FileCloser> file(std::fopen(part_path.c_str(), "ab"));
  if (!file) {
    res.status = Status::Internal(part_path + ": cannot open for writing: " + std::strerror(errno));
    return res;
  }
  std::unique_ptr<CURL, CurlCleanup> curl(curl_easy_init());
  if (!curl) {
    res.status = Status::Internal("libcurl: cannot create a handle");
    return res;
  }
  Transfer t;
  t.curl = curl.get();
  t.file = file.get();
  t.options = &options;
  t.pos = offset;
  t.limit = expected_size;
  char errbuf[CURL_ERROR_SIZE] = "";
  const std::string range = std::to_string(offset) + "-";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);  // 4xx/5xx: no body written, CURLE_HTTP_RETURNED_ERROR
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);     // no SIGALRM for timeouts (we may run on any thread)
  curl_easy_setopt(c, CURLOPT_NOPROXY, "127.0.0.1,localhost,::1");  // loopback mirrors never go through a proxy
  curl_easy_setopt(c, CURLOPT_USERAGENT, "geomx-data-fetch");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, options.low_speed_limit_bytes);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, options.low_speed_time_s);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(expected_size));
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (offset > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  res.resumed_from = offset;

  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res.http_code);
  const bool closed_ok = std::fclose(file.release()) == 0;
  res.restarted = t.restarted;
  res.bytes = t.pos;
  const std::string detail = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
  const std::string got = std::to_string(t.pos) + " of " + std::to_string(expected_size) + " bytes";

  if (!t.write_error.empty() || !closed_ok) {
    res.status = Status::Internal(part_path + ": write error: " +
                                  (t.write_error.empty() ? std::string(std::strerror(errno)) : t.write_error));
  } else if (rc == CURLE_OK) {
    if (t.pos != expected_size) {
      res.status = Status::Unavailable(url + ": the transfer ended after " + got + " (HTTP status " +
                                       std::to_string(res.http_code) + ")");
      res.retryable = t.pos > offset;
    } else if (!t.body_started && res.http_code != 200 && res.http_code != 206) {
      res.status = Status::Unavailable(url + ": unexpected HTTP status " + std::to_string(res.http_code));
    }
  } else if (rc == CURLE_WRITE_ERROR && !t.abort_reason.empty()) {
    res.status = Status::Unavailable(url + ": " + t.abort_reason);
    *retry_from_zero = t.bad_range;
  } else if (rc == CURLE_HTTP_RETURNED_ERROR) {
    if (res.http_code == 416 && offset > 0) *retry_from_zero = true;
    res.status = Status::Unavailable(url + ": HTTP status " + std::to_string(res.http_code));
  } else if (rc == CURLE_FILESIZE_EXCEEDED) {
    res.status = Status::Unavailable(url + ": the server announces more than the " + std::to_string(expected_size) +
                                     " bytes expected");
  } else if (rc == CURLE_OPERATION_TIMEDOUT) {
    res.status = Status::DeadlineExceeded(url + ": timed out after " + got + " (" + detail + ")");
    res.retryable = t.pos > offset;
  } else if (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING ||
             rc == CURLE_SEND_ERROR) {
    res.status = Status::Unavailable(url + ": the connection broke off after " + got + " (" + detail + ")");
    res.retryable = t.pos > offset;
  } else {
    res.status = Status::Unavailable(url + ": " + detail);
  }
  if (t.remove_part || (!res.status.ok() && t.pos == 0)) RemoveFile(part_path);
  if (t.remove_part) res.bytes = 0;
  return res;
}

}  // namespace

DownloadResult DownloadToPart(const std::string& url, const std::string& part_path, int64_t expected_size,
                              const HttpOptions& options) {
  CurlGlobalInitOnce();
  bool retry_from_zero = false;
  DownloadResult res = DownloadOnce(url, part_path, expected_size, options, &retry_from_zero);
  if (retry_from_zero) {
    const int64_t resumed_from = res.resumed_from;
    RemoveFile(part_path);
    res = DownloadOnce(url, part_path, expected_size, options, &retry_from_zero);
    res.resumed_from = resumed_from;
    res.restarted = true;
  }
  return res;
}

}  // namespace geomx::data
