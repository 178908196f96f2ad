#include "cli/free_ports.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <utility>

namespace geomx::cli {
namespace {

// Closes the sockets on every path out of PickFreePorts.
struct SocketSet {
  std::vector<int> fds;
  ~SocketSet() {
    for (int fd : fds) close(fd);
  }
};

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};

// The kernel's ephemeral port range; Linux's default when it cannot be read.
std::pair<int, int> EphemeralRange() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 0, hi = 0;
  if (in >> lo >> hi && lo > 0 && hi >= lo && hi <= 65535) return {lo, hi};
  return {32768, 60999};
}

// Binds `fd` to `port` of `info`'s address (the address family's port field set).
bool BindPort(int fd, const addrinfo* info, int port) {
  sockaddr_storage addr{};
  std::memcpy(&addr, info->ai_addr, info->ai_addrlen);
  const in_port_t net_port = htons(static_cast<uint16_t>(port));
  if (addr.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = net_port;
  } else {
    reinterpret_cast<sockaddr_in*>(&addr)->sin_port = net_port;
  }
  return bind(fd, reinterpret_cast<const sockaddr*>(&addr), info->ai_addrlen) == 0;
}

}  // namespace

Result<std::vector<int>> PickFreePorts(const std::string& host, int count) {
  if (count < 0) return Status::InvalidArgument("PickFreePorts: negative count");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  if (int rc = getaddrinfo(host.c_str(), "0", &hints, &raw); rc != 0) {
    return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, AddrInfoDeleter> info(raw);
  // Every socket stays bound until all are picked, so the kernel cannot hand out one port twice.
  SocketSet sockets;
  std::vector<int> ports;
  const auto [ephemeral_lo, ephemeral_hi] = EphemeralRange();
  (void)ephemeral_hi;
  constexpr int kLowest = 10000;  // below: well-known services' ports
  std::mt19937 rng(static_cast<uint32_t>(getpid()) * 2654435761u ^
                   static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (int i = 0; i < count; ++i) {
    int fd = socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, info->ai_protocol);
    if (fd < 0) return Status::ResourceExhausted(std::string("socket: ") + std::strerror(errno));
    sockets.fds.push_back(fd);
    bool bound = false;
    for (int attempt = 0; attempt < 64 && ephemeral_lo - 1 > kLowest && !bound; ++attempt) {
      const int port = std::uniform_int_distribution<int>(kLowest, ephemeral_lo - 1)(rng);
      bound = std::find(ports.begin(), ports.end(), port) == ports.end() && BindPort(fd, info.get(), port);
    }
    if (!bound && bind(fd, info->ai_addr, info->ai_addrlen) != 0) {
      const int err = errno;
      if (err == EADDRINUSE) return Status::ResourceExhausted("no free TCP port left on " + host);
      return Status::InvalidArgument("cannot bind a port on '" + host +
                                     "' (is it an address of this machine?): " + std::strerror(err));
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return Status::Internal(std::string("getsockname: ") + std::strerror(errno));
    }
    const in_port_t port = addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&addr)->sin_port;
    ports.push_back(ntohs(port));
  }
  return ports;
}

}  // namespace geomx::cli
