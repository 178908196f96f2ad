// Van: moves Messages between the nodes of one tier. Transport only: it knows endpoints and node ids, not roles
// or keys. Implementations: ZmqVan (ZeroMQ tcp:// and inproc://, zero-copy multipart), LoopbackVan (in memory,
// with drop/delay injection, for tests), ShapedVan (a decorator that emulates a WAN: bandwidth + latency per link
// class, and counts traffic).
//
// Threading: Send may be called from several threads at once; Recv from one thread at a time.
#pragma once

#include <cstddef>
#include <string>

#include "comm/message.h"
#include "comm/traffic.h"
#include "engine/base/status.h"

namespace geomx::comm {

// What one datagram carries on a 1500-byte MTU: 1500 - 20 (IPv4) - 8 (UDP) bytes.
inline constexpr size_t kDatagramBytes = 1472;

class Van {
 public:
  virtual ~Van() = default;
  // Binds this node's receiving socket. "tcp://127.0.0.1:0" picks a free port. Returns the bound endpoint that
  // peers can connect to ("tcp://127.0.0.1:41234", "inproc://dc-a/worker0").
  virtual Result<std::string> Bind(const std::string& address) = 0;
  // Opens (or re-opens with a new endpoint) the channel to `node_id`. `link` says whether the pair crosses data
  // centres (used by shaping and traffic accounting). `peer_name` is the peer's node name ("dc-a/worker1",
  // "dc-a/server0@global"): an authenticating Van talks only to the holder of that member's key (comm/curve.h);
  // the others ignore it.
  virtual Status Connect(int node_id, const std::string& endpoint, LinkClass link, const std::string& peer_name) = 0;
  // Sends `msg` to `node_id` (connected before). Returns the bytes put on the wire (header + data).
  virtual Result<size_t> Send(int node_id, const Message& msg) = 0;
  // Sends `msg` as a datagram: it may be lost on the way (never duplicated, never corrupted) and is not delivered
  // in order with Send's messages. For DGT's low-priority blocks (comm/dgt/dgt_link.h): a message of at most one
  // datagram's payload (kDatagramBytes). A Van without an unreliable channel (ZmqVan, LoopbackVan) delivers it
  // reliably, as Send does; ShapedVan emulates the loss of a lossy link. Returns the bytes put on the wire.
  virtual Result<size_t> SendDatagram(int node_id, const Message& msg) { return Send(node_id, msg); }
  // Sends `msg` reliably on priority channel `channel` (1 = the most important of the lower-priority channels) to
  // `node_id`: a connection of its own, so it is not in order with Send's messages or other channels', and on a
  // lossy link each channel is its own TCP flow (DGT's TCP-priority modes, comm/dgt/dgt_link.h). ZmqVan opens one
  // connection per channel with its own IP TOS; ShapedVan emulates a flow per channel; the others deliver it as
  // Send does. Returns the bytes put on the wire.
  virtual Result<size_t> SendOnChannel(int node_id, const Message& msg, int channel) {
    (void)channel;
    return Send(node_id, msg);
  }
  // Waits up to `timeout_ms` (-1: forever) for the next message. kDeadlineExceeded on timeout; kDataLoss for a
  // malformed or wrong-version message (the caller logs it and keeps receiving); kCancelled after Stop().
  virtual Status Recv(Message* msg, int timeout_ms) = 0;
  // Unblocks Recv and closes the sockets. Idempotent.
  virtual void Stop() = 0;
  // True when Recv fills Message::peer with the sender's authenticated member name (ZmqVan with CURVE): the
  // Postoffice and the Scheduler then drop every message whose claimed sender is not that member.
  virtual bool authenticates() const { return false; }
};

}  // namespace geomx::comm
