#include "comm/datagram_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sodium.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "comm/codec.h"

namespace geomx::comm {
namespace {

constexpr uint32_t kMagic = 0x31445847;  // "GXD1"
constexpr size_t kMaxDatagram = 65507;   // IPv4 UDP payload

void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out->insert(out->end(), b, b + 4);
}

uint32_t GetU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::optional<std::pair<uint32_t, uint16_t>> ParseTcpIpv4(const std::string& endpoint) {
  const std::string prefix = "tcp://";
  if (endpoint.rfind(prefix, 0) != 0) return std::nullopt;
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon <= prefix.size()) return std::nullopt;
  const std::string host = endpoint.substr(prefix.size(), colon - prefix.size());
  const std::string port = endpoint.substr(colon + 1);
  in_addr addr{};
  if (inet_pton(AF_INET, host.c_str(), &addr) != 1) return std::nullopt;
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const unsigned long p = std::stoul(port);
  if (p == 0 || p > 65535) return std::nullopt;
  return std::make_pair(addr.s_addr, htons(static_cast<uint16_t>(p)));
}

Result<std::unique_ptr<DatagramSocket>> DatagramSocket::Bind(const std::string& tcp_endpoint,
                                                             std::optional<Key> secret_key) {
  const auto where = ParseTcpIpv4(tcp_endpoint);
  if (!where) return Status::Unavailable("datagrams: " + tcp_endpoint + " is not an IPv4 tcp:// endpoint");
  if (secret_key) {
    static std::once_flag once;
    static int init = -1;
    std::call_once(once, [] { init = sodium_init(); });
    if (init < 0) return Status::Internal("datagrams: sodium_init failed");
  }
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(std::string("datagrams: socket: ") + std::strerror(errno));
  // Room for a round's burst of blocks both ways (the FORCE options as root, else up to net.core.[rw]mem_max): a
  // datagram dropped by a full buffer of our own is not the network's loss.
  const int buffer = 8 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof(buffer)) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  }
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof(buffer)) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = where->first;
  addr.sin_port = where->second;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return Status::Unavailable("datagrams: bind udp " + tcp_endpoint.substr(6) + ": " + std::strerror(err));
  }
  return std::unique_ptr<DatagramSocket>(new DatagramSocket(fd, ntohs(where->second), secret_key));
}

DatagramSocket::DatagramSocket(int fd, uint16_t port, std::optional<Key> secret_key)
    : fd_(fd), port_(port), secret_key_(secret_key) {}

DatagramSocket::~DatagramSocket() { close(fd_); }

bool DatagramSocket::AddPeer(int node_id, const std::string& tcp_endpoint, std::optional<Key> public_key,
                             std::string member) {
  const auto where = ParseTcpIpv4(tcp_endpoint);
  if (!where || (secret_key_.has_value() && !public_key.has_value())) return false;
  std::lock_guard<std::mutex> lock(mu_);
  peers_[node_id] = Peer{where->first, where->second, public_key, std::move(member)};
  return true;
}

Result<size_t> DatagramSocket::Send(int node_id, const Message& msg) {
  Peer peer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(node_id);
    if (it == peers_.end()) return Status::NotFound("datagrams: no address for node " + std::to_string(node_id));
    peer = it->second;
  }
  const Bytes meta = EncodeMeta(msg.meta);
  std::vector<uint8_t> body;
  PutU32(&body, static_cast<uint32_t>(1 + msg.data.size()));
  PutU32(&body, static_cast<uint32_t>(meta.size()));
  for (const Bytes& d : msg.data) PutU32(&body, static_cast<uint32_t>(d.size()));
  body.insert(body.end(), meta.data(), meta.data() + meta.size());
  for (const Bytes& d : msg.data) body.insert(body.end(), d.data(), d.data() + d.size());
  const size_t total = kDatagramHeaderBytes + body.size() + (secret_key_ ? kDatagramSealBytes : 0);
  if (total > kMaxDatagram) {
    return Status::ResourceExhausted("datagrams: a message of " + std::to_string(total) + " bytes is over one "
                                     "datagram");
  }
  std::vector<uint8_t> out;
  out.reserve(total);
  PutU32(&out, kMagic);
  PutU32(&out, static_cast<uint32_t>(msg.meta.sender));
  out.push_back(secret_key_ ? 1 : 0);
  out.insert(out.end(), 3, 0);
  if (secret_key_) {
    uint8_t nonce[crypto_box_NONCEBYTES];
    randombytes_buf(nonce, sizeof(nonce));
    out.insert(out.end(), nonce, nonce + sizeof(nonce));
    const size_t at = out.size();
    out.resize(at + crypto_box_MACBYTES + body.size());
    if (crypto_box_easy(out.data() + at, body.data(), body.size(), nonce, peer.public_key->data(),
                        secret_key_->data()) != 0) {
      return Status::Internal("datagrams: crypto_box_easy failed");
    }
  } else {
    out.insert(out.end(), body.begin(), body.end());
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = peer.ip;
  addr.sin_port = peer.port;
  // A full send buffer is waited out (up to a second: our own buffer is not the network's loss); other errors are
  // the caller's to see.
  for (int attempt = 0;; ++attempt) {
    const ssize_t sent =
        sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    if (sent >= 0) return static_cast<size_t>(sent);
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) || attempt >= 100) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return out.size();  // counted as lost
      return Status::Unavailable(std::string("datagrams: sendto: ") + std::strerror(errno));
    }
    pollfd p{fd_, POLLOUT, 0};
    (void)poll(&p, 1, 10);
  }
}

Status DatagramSocket::Refuse(const std::string& why) {
  refused_.fetch_add(1);
  return Status::DataLoss("datagram refused: " + why);
}

Status DatagramSocket::Receive(Message* msg) {
  std::vector<uint8_t>& buf = buffer_;  // one reader at a time (the class comment): reused, not reallocated
  buf.resize(kMaxDatagram + 1);
  sockaddr_in from{};
  socklen_t from_len = sizeof(from);
  const ssize_t n = recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::DeadlineExceeded("no datagram");
    return Status::Unavailable(std::string("datagrams: recvfrom: ") + std::strerror(errno));
  }
  const size_t size = static_cast<size_t>(n);
  if (size < kDatagramHeaderBytes || GetU32(buf.data()) != kMagic) return Refuse("not a geomx datagram");
  const int sender = static_cast<int32_t>(GetU32(buf.data() + 4));
  const bool sealed = buf[8] == 1;
  if (buf[8] > 1 || buf[9] != 0 || buf[10] != 0 || buf[11] != 0) return Refuse("bad header");
  if (sealed != secret_key_.has_value()) return Refuse(sealed ? "sealed, this node has no keys" : "not sealed");
  Peer peer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(sender);
    if (it == peers_.end()) return Refuse("unknown sender " + std::to_string(sender));
    peer = it->second;
  }
  std::vector<uint8_t> opened;
  const uint8_t* body = buf.data() + kDatagramHeaderBytes;
  size_t body_size = size - kDatagramHeaderBytes;
  if (sealed) {
    if (body_size < kDatagramSealBytes) return Refuse("shorter than its seal");
    const uint8_t* nonce = body;
    const uint8_t* box = body + crypto_box_NONCEBYTES;
    const size_t box_size = body_size - crypto_box_NONCEBYTES;
    opened.resize(box_size - crypto_box_MACBYTES);
    if (crypto_box_open_easy(opened.data(), box, box_size, nonce, peer.public_key->data(), secret_key_->data()) != 0) {
      return Refuse("does not open with node " + std::to_string(sender) + "'s key");
    }
    body = opened.data();
    body_size = opened.size();
  } else if (from.sin_addr.s_addr != peer.ip) {
    return Refuse("node " + std::to_string(sender) + " sent from another address");
  }
  if (body_size < 4) return Refuse("no frame table");
  const uint64_t frames = GetU32(body);
  if (frames < 1 || frames > (body_size - 4) / 4) return Refuse("frame count " + std::to_string(frames));
  const size_t table = 4 + 4 * frames;
  uint64_t total = 0;
  for (uint64_t f = 0; f < frames; ++f) total += GetU32(body + 4 + 4 * f);
  if (table + total != body_size) return Refuse("frame lengths do not add up to the datagram");
  const uint8_t* p = body + table;
  const size_t meta_size = GetU32(body + 4);
  Message m;
  Status decoded = DecodeMeta(p, meta_size, &m.meta);
  if (!decoded.ok()) return Refuse(decoded.message());
  if (m.meta.sender != sender) return Refuse("meta names sender " + std::to_string(m.meta.sender));
  p += meta_size;
  for (uint64_t f = 1; f < frames; ++f) {
    const size_t len = GetU32(body + 4 + 4 * f);
    m.data.push_back(Bytes::Copy(p, len));
    p += len;
  }
  if (sealed) m.peer = peer.member;
  *msg = std::move(m);
  return Status::Ok();
}

}  // namespace geomx::comm
