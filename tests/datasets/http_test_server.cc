#include "tests/datasets/http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace geomx::testing {
namespace {

// Sends all of `data`; false when the peer went away. MSG_NOSIGNAL: a client that hangs up raises no SIGPIPE.
bool SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t k = send(fd, data, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// The header value of `name` (lower case) in a raw request, "" if absent.
std::string Header(const std::string& request, const std::string& name) {
  std::string lower = request;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t at = lower.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  size_t start = at + 3 + name.size();
  while (start < request.size() && request[start] == ' ') ++start;
  const size_t end = request.find("\r\n", start);
  return request.substr(start, end - start);
}

}  // namespace

HttpTestServer::HttpTestServer() {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(listen_fd_, 0) << std::strerror(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  EXPECT_EQ(listen(listen_fd_, 8), 0) << std::strerror(errno);
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Loop(); });
}

HttpTestServer::~HttpTestServer() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
}

void HttpTestServer::Serve(const std::string& path, std::string bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  files_[path] = std::move(bytes);
}

void HttpTestServer::CutAfter(const std::string& path, int64_t bytes, int times) {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_[path] = {bytes, times};
}

void HttpTestServer::Corrupt(const std::string& path, int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  corrupt_[path] = offset;
}

void HttpTestServer::IgnoreRanges(bool ignore) {
  std::lock_guard<std::mutex> lock(mu_);
  ignore_ranges_ = ignore;
}

void HttpTestServer::OmitContentLength(bool omit) {
  std::lock_guard<std::mutex> lock(mu_);
  omit_length_ = omit;
}

std::vector<HttpTestServer::Request> HttpTestServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void HttpTestServer::Loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    Handle(fd);
    shutdown(fd, SHUT_RDWR);
    close(fd);
  }
}

void HttpTestServer::Handle(int fd) {
  // Read the request head (bounded in size and time).
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return;
    const ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k <= 0) return;
    head.append(buf, static_cast<size_t>(k));
  }
  const size_t sp1 = head.find(' ');
  const size_t sp2 = head.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return;
  const std::string method = head.substr(0, sp1);
  std::string path = head.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!path.empty() && path[0] == '/') path.erase(0, 1);
  const std::string range = Header(head, "range");

  std::string body;
  int64_t cut = -1;
  int64_t corrupt_at = -1;
  bool found = false;
  bool ignore_ranges = false;
  bool omit_length = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto f = files_.find(path);
    if (f != files_.end()) {
      found = true;
      body = f->second;
      auto c = cuts_.find(path);
      if (c != cuts_.end() && c->second.second > 0) {
        cut = c->second.first;
        --c->second.second;
      }
      auto x = corrupt_.find(path);
      if (x != corrupt_.end()) corrupt_at = x->second;
      ignore_ranges = ignore_ranges_;
      omit_length = omit_length_;
    }
  }
  auto log = [&](int status) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back({path, range, status});
  };
  if (method != "GET" || !found) {
    const int status = method != "GET" ? 405 : 404;
    log(status);
    const std::string msg = status == 404 ? "not found\n" : "GET only\n";
    const std::string resp = "HTTP/1.1 " + std::to_string(status) + (status == 404 ? " Not Found" : " Not Allowed") +
                             "\r\nContent-Length: " + std::to_string(msg.size()) +
                             "\r\nConnection: close\r\n\r\n" + msg;
    SendAll(fd, resp.data(), resp.size());
    return;
  }
  if (corrupt_at >= 0 && corrupt_at < static_cast<int64_t>(body.size())) {
    body[static_cast<size_t>(corrupt_at)] = static_cast<char>(body[static_cast<size_t>(corrupt_at)] ^ 0xff);
  }
  const int64_t size = static_cast<int64_t>(body.size());
  int64_t start = 0;
  if (!range.empty() && !ignore_ranges && range.rfind("bytes=", 0) == 0) {
    start = std::strtoll(range.c_str() + 6, nullptr, 10);
    if (start >= size) {
      log(416);
      const std::string resp = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" +
                               std::to_string(size) + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      SendAll(fd, resp.data(), resp.size());
      return;
    }
  }
  const bool partial = start > 0;
  log(partial ? 206 : 200);
  std::string resp = partial ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n";
  if (partial) {
    resp += "Content-Range: bytes " + std::to_string(start) + "-" + std::to_string(size - 1) + "/" +
            std::to_string(size) + "\r\n";
  }
  resp += "Content-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\n";
  if (!omit_length) resp += "Content-Length: " + std::to_string(size - start) + "\r\n";
  resp += "Connection: close\r\n\r\n";
  if (!SendAll(fd, resp.data(), resp.size())) return;
  int64_t n = size - start;
  if (cut >= 0 && cut < n) n = cut;
  SendAll(fd, body.data() + start, static_cast<size_t>(n));
}

}  // namespace geomx::testing
