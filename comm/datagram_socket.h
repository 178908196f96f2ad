// DatagramSocket: the unreliable channel of a ZmqVan (Van::SendDatagram, used by DGT's low-priority blocks): one
// UDP socket bound to the same host and port number as the van's tcp:// endpoint, so a peer reaches it from the
// endpoint it already knows. A datagram (docs/wire_format.md, "Datagrams"), integers little-endian:
//
//   [u32 magic "GXD1"][i32 sender node id][u8 sealed][3 bytes 0] then
//     plain  (no CURVE):  body
//     sealed (CURVE):     [24-byte random nonce][crypto_box_easy(body)]  (Curve25519, XSalsa20-Poly1305; 16 more)
//   body = [u32 n][n x u32 frame length][the frames]; frame 0 = EncodeMeta(meta), then the message's data frames.
//
// Sealing uses the sender's CURVE secret key and the receiver's public key (the keys of the job's key directory),
// so only the holder of the key listed for the claimed sender can make a datagram the receiver opens; the
// receiver opens with the public key of the member it connected under that node id. Replays are harmless to DGT
// (a block already received is ignored, a block of a closed round is dropped).
//
// Receive refuses, without allocating more than the datagram it read (at most 65,507 bytes): a wrong magic or
// sealed flag (this van seals iff it has CURVE), an unknown sender (no address or key from Connect), a box that does
// not open, frame counts or lengths that do not add up, a meta that does not decode, a meta whose sender is not the
// datagram's. Each refusal is counted; the caller goes on receiving.
//
// Thread-safety: Send from any thread; Receive from one thread at a time (the van's Recv).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/message.h"
#include "engine/base/status.h"

namespace geomx::comm {

// The header and the sealing a datagram adds to its frames' bytes (the body's frame table not included).
inline constexpr size_t kDatagramHeaderBytes = 12;
inline constexpr size_t kDatagramSealBytes = 24 + 16;
// What a datagram's framing adds to its meta and data, sealed and with two frames: header, seal, frame table.
inline constexpr size_t kDatagramEnvelopeBytes = kDatagramHeaderBytes + kDatagramSealBytes + 12;

class DatagramSocket {
 public:
  using Key = std::array<uint8_t, 32>;

  // Binds UDP to the host and port of `tcp_endpoint` ("tcp://A.B.C.D:P", IPv4 numeric). `secret_key`: this node's
  // CURVE secret key (raw 32 bytes) to seal with, or nullopt for plain datagrams. kUnavailable when the port is
  // taken or the endpoint is not an IPv4 tcp:// one.
  static Result<std::unique_ptr<DatagramSocket>> Bind(const std::string& tcp_endpoint, std::optional<Key> secret_key);
  ~DatagramSocket();
  DatagramSocket(const DatagramSocket&) = delete;
  DatagramSocket& operator=(const DatagramSocket&) = delete;

  // Where node `node_id` receives datagrams (the host and port of its tcp:// endpoint) and, when sealing, its
  // public key and member name (Message::peer of what it sends). False (and nothing stored) for an endpoint that
  // is not IPv4 tcp://, or a missing key when sealing.
  bool AddPeer(int node_id, const std::string& tcp_endpoint, std::optional<Key> public_key, std::string member);
  // Sends `msg` (meta.sender = this node) to `node_id`. kNotFound for a peer without an address; kResourceExhausted
  // for a message over one datagram; kUnavailable when the kernel refuses it. Returns the bytes sent.
  Result<size_t> Send(int node_id, const Message& msg);
  // Reads one datagram if one is waiting (non-blocking). OK with *msg filled; kDeadlineExceeded when none is
  // waiting; kDataLoss for a refused datagram (counted; try again).
  Status Receive(Message* msg);

  int fd() const { return fd_; }
  uint16_t port() const { return port_; }
  uint64_t refused() const { return refused_.load(); }

 private:
  struct Peer {
    uint32_t ip = 0;    // network order
    uint16_t port = 0;  // network order
    std::optional<Key> public_key;
    std::string member;
  };
  DatagramSocket(int fd, uint16_t port, std::optional<Key> secret_key);
  Status Refuse(const std::string& why);

  const int fd_;
  const uint16_t port_;
  const std::optional<Key> secret_key_;
  std::mutex mu_;
  std::map<int, Peer> peers_;  // guarded by mu_
  std::atomic<uint64_t> refused_{0};
  std::vector<uint8_t> buffer_;  // Receive's, one datagram
};

// Host and port of "tcp://A.B.C.D:P" (network order); nullopt for anything else.
std::optional<std::pair<uint32_t, uint16_t>> ParseTcpIpv4(const std::string& endpoint);

}  // namespace geomx::comm
