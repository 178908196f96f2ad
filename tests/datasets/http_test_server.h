// A minimal HTTP/1.1 file server on 127.0.0.1 for the fetch tests: GET of in-memory files, `Range: bytes=N-`
// answered with 206, and faults on demand (cut the connection after K body bytes, corrupt a byte, ignore ranges).
// One connection at a time, `Connection: close` on every answer. Test-only code. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace geomx::testing {

class HttpTestServer {
 public:
  struct Request {
    std::string path;   // without the leading '/'
    std::string range;  // the Range header's value ("" when absent)
    int status = 0;     // what was answered
  };

  // Binds an ephemeral port on 127.0.0.1 and starts serving.
  HttpTestServer();
  ~HttpTestServer();  // stops the thread and closes the socket

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

  // Serves `bytes` at /`path`. Unknown paths answer 404.
  void Serve(const std::string& path, std::string bytes);
  // The next `times` answers for `path` stop after `bytes` body bytes and close the connection.
  void CutAfter(const std::string& path, int64_t bytes, int times = 1);
  // Answers for `path` carry byte `offset` of the file XOR 0xff (the stored file is unchanged).
  void Corrupt(const std::string& path, int64_t offset);
  // When set, Range headers are ignored: every answer is a 200 with the whole file.
  void IgnoreRanges(bool ignore);
  // When set, answers carry no Content-Length: the body ends when the connection closes.
  void OmitContentLength(bool omit);

  std::vector<Request> requests() const;

 private:
  void Loop();
  void Handle(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<std::string, std::string> files_;        // guarded by mu_
  std::map<std::string, std::pair<int64_t, int>> cuts_;  // path -> (bytes, times left); guarded by mu_
  std::map<std::string, int64_t> corrupt_;          // guarded by mu_
  bool ignore_ranges_ = false;                      // guarded by mu_
  bool omit_length_ = false;                        // guarded by mu_
  std::vector<Request> requests_;                   // guarded by mu_
  std::thread thread_;
};

}  // namespace geomx::testing
