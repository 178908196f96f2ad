#include "cli/free_ports.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

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
  for (int i = 0; i < count; ++i) {
    int fd = socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, info->ai_protocol);
    if (fd < 0) return Status::ResourceExhausted(std::string("socket: ") + std::strerror(errno));
    sockets.fds.push_back(fd);
    if (bind(fd, info->ai_addr, info->ai_addrlen) != 0) {
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
