// ZmqVan: the ZeroMQ implementation of Van (tcp:// between processes and hosts, inproc:// inside one process).
//
// Sockets: one PULL socket bound to this node's address receives from everybody; one PUSH socket per connected
// peer sends to it. A message is one ZeroMQ multipart message: frame 0 = EncodeMeta(meta), frames 1..n =
// msg.data (docs/wire_format.md). Data frames are sent without copying (ZeroMQ holds a reference to each Bytes'
// owner until the frame is on the wire) and received without copying (each received Bytes owns its zmq_msg_t).
// High-water marks are unlimited, so nothing is dropped silently; ZMQ_LINGER is 0, so Stop() and destruction
// never wait for unsent messages (a node that must not lose its last message waits for a reply first).
// ZmqVan does not count traffic: wrap it in a ShapedVan for that.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "comm/van.h"

namespace geomx::comm {

struct ZmqVanOptions {
  int send_hwm = 0;   // ZMQ_SNDHWM per peer socket, in messages; 0 = unlimited (no silent drops)
  int recv_hwm = 0;   // ZMQ_RCVHWM of the receiving socket; 0 = unlimited
  int linger_ms = 0;  // ZMQ_LINGER on close: how long unsent messages may delay Stop(); 0 = drop them
};

// Owns one ZeroMQ context (its I/O threads). Create one per process, or one per test, and pass it to every
// ZmqVan; inproc:// endpoints are visible only to vans sharing the context. Not a singleton (docs/style.md R9).
// Every ZmqVan using it must be destroyed (or at least Stop()ped) before the context. Thread-safe.
class ZmqContext {
 public:
  explicit ZmqContext(int io_threads = 1);
  ~ZmqContext();
  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;

  // The raw `void*` zmq context, for comm/*.cc only (zmq.h stays out of headers).
  void* raw() const { return ctx_; }

 private:
  void* ctx_;
};

// Thread-safety: Bind once, before the first Recv. Connect and Send may be called from any thread, concurrently
// (one mutex per peer socket: two Sends to the same peer serialise, Sends to different peers do not). Recv from
// one thread at a time. Stop from any thread; it unblocks a waiting Recv.
class ZmqVan : public Van {
 public:
  // `context` is borrowed and must outlive this van.
  explicit ZmqVan(ZmqContext* context, ZmqVanOptions options = {});
  ~ZmqVan() override;  // Stop()s
  ZmqVan(const ZmqVan&) = delete;
  ZmqVan& operator=(const ZmqVan&) = delete;

  // "tcp://host:0" binds a free port; the result names the real one (ZMQ_LAST_ENDPOINT). kFailedPrecondition
  // when already bound or stopped; kUnavailable when ZeroMQ refuses the address (in use, bad host).
  Result<std::string> Bind(const std::string& address) override;
  // Opens a PUSH socket to `endpoint` (ZeroMQ connects in the background and queues until it can deliver).
  // Connecting a node id again replaces its socket (messages still queued on the old one are dropped).
  Status Connect(int node_id, const std::string& endpoint, LinkClass link) override;
  // kNotFound for a node id never connected; kCancelled after Stop(); kInternal if ZeroMQ fails mid-message.
  Result<size_t> Send(int node_id, const Message& msg) override;
  Status Recv(Message* msg, int timeout_ms) override;
  void Stop() override;

 private:
  struct Peer;
  void* NewSocket(int type, std::string* error);
  Status ReceiveFrames(Message* msg);

  ZmqContext* const context_;
  const ZmqVanOptions options_;
  std::atomic<bool> stopped_{false};
  // Written by Stop() to wake a Recv blocked in zmq_poll: a plain pipe, so no extra zmq socket and no inproc
  // name to invent. [0] = read end (polled), [1] = write end.
  int wake_pipe_[2] = {-1, -1};

  std::mutex recv_mu_;              // held by Recv and by Stop while it closes the receiving socket
  void* receiver_ = nullptr;        // PULL; guarded by recv_mu_
  std::string bound_endpoint_;      // guarded by recv_mu_

  std::mutex peers_mu_;             // guards the map (not the sockets inside: each Peer has its own mutex)
  std::map<int, std::unique_ptr<Peer>> peers_;  // entries are never erased before destruction
};

}  // namespace geomx::comm
