// ZmqVan: the ZeroMQ implementation of Van (tcp:// between processes and hosts, inproc:// inside one process).
//
// Sockets: one PULL socket bound to this node's address receives from everybody; one PUSH socket per connected
// peer sends to it. A message is one ZeroMQ multipart message: frame 0 = EncodeMeta(meta), frames 1..n =
// msg.data (docs/wire_format.md). Data frames are sent without copying (ZeroMQ holds a reference to each Bytes'
// owner until the frame is on the wire) and received without copying (each received Bytes owns its zmq_msg_t).
// High-water marks are unlimited, so nothing is dropped silently; ZMQ_LINGER is 0, so Stop() and destruction
// never wait for unsent messages (a node that must not lose its last message waits for a reply first).
// ZmqVan does not count traffic: wrap it in a ShapedVan for that.
//
// Security (ZmqVanOptions::curve set): every link is encrypted and authenticated with CurveZMQ. The receiving
// socket is a CURVE server whose handshakes the context's ZAP handler judges (ZmqContext::EnableCurve: only the
// public keys of the job's key directory get in); every sending socket is a CURVE client that knows the public key
// of the member it talks to (Connect's peer_name), so it talks to nobody else. Recv fills Message::peer with the member
// name the ZAP handler gave the sender's key. Without curve, links are plain text and Message::peer is empty.
//
// Limits against a hostile or broken peer: a frame longer than max_frame_bytes is refused by libzmq while it reads
// the frame's size (before allocating it): the connection is dropped, the unfinished message discarded, the peer
// reconnects and its later messages arrive. A message with more than max_frames data frames is dropped by Recv
// (kDataLoss), and the next message is received normally.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "comm/curve.h"
#include "comm/datagram_socket.h"
#include "comm/van.h"

namespace geomx::comm {

struct ZmqVanOptions {
  int send_hwm = 0;   // ZMQ_SNDHWM per peer socket, in messages; 0 = unlimited (no silent drops)
  int recv_hwm = 0;   // ZMQ_RCVHWM of the receiving socket; 0 = unlimited
  int linger_ms = 0;  // ZMQ_LINGER on close: how long unsent messages may delay Stop(); 0 = drop them
  // ZMQ_SNDTIMEO of every peer socket: a Send that cannot queue its message this long fails with kUnavailable
  // instead of blocking forever (a node outliving its scheduler: its heartbeat, then its destructor, hung). It
  // applies only with a send high-water mark: with an unlimited one (send_hwm 0) a tcp:// send only queues, and a
  // send that could not queue (an inproc:// PUSH whose receiving socket has closed) fails at once. -1 = forever.
  int send_timeout_ms = 10000;
  // Largest frame (header or data frame) the receiving socket accepts, in bytes. ZMQ_MAXMSGSIZE, which libzmq 4.3
  // checks per frame (each ZMTP frame is a "message" to its decoder) against the size field, before allocating:
  // a larger frame drops the connection (see above). With CURVE the limit is applied to the encrypted frame,
  // which is 33 bytes longer; ZmqVan adds those, so max_frame_bytes is always the plain frame's size.
  size_t max_frame_bytes = size_t{1} << 30;
  // Most data frames per message; Recv drops a message with more (kDataLoss naming the count) without keeping
  // the extra frames.
  size_t max_frames = size_t{1} << 20;
  // This node's key pair: when set, every link is CurveZMQ (see above). Bind needs the context's ZAP handler
  // (ZmqContext::EnableCurve) and a tcp:// or ipc:// address (inproc:// bypasses ZeroMQ's security).
  std::optional<CurveIdentity> curve;
  // With curve: the public key (Z85) of every member this van may send to, by member name (LoadPublicKeys).
  // Shared, read-only.
  std::shared_ptr<const std::map<std::string, std::string>> peer_keys;
  // SendDatagram over UDP (comm/datagram_socket.h: the bound tcp:// port number, sealed with the CURVE keys when
  // curve is set). Off, or when that UDP port cannot be bound (logged), a datagram travels as Send's messages do.
  bool datagrams = false;
  // DGT's TCP-priority modes: SendOnChannel(c), c in 1..priority_channels, uses a PUSH connection of its own to
  // the peer whose IP TOS is the class selector CS(priority_channels - c) (ZMQ_TOS, set before connecting: a
  // connected socket keeps the TOS it was opened with), and the peer's main socket gets CS(priority_channels), as
  // GeoMX's DGT marks its reliable channel. 0: no channel sockets, SendOnChannel is Send, no TOS set.
  int priority_channels = 0;
};
// The IP TOS byte of priority channel `channel` (0 = the main socket) with `channels` lower-priority channels:
// (channels - channel) x 32, the DSCP class selector CS(channels - channel) in the TOS byte's top bits.
int PriorityChannelTos(int channel, int channels);

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

  // Starts the context's ZAP handler (ZeroMQ's authentication hook, RFC 27): a thread that judges the handshake
  // of every CURVE server socket of this context (the receiving sockets of ZmqVans with curve). It admits only
  // the CURVE mechanism with a client public key listed in `admitted` (Z85 public key -> member name) and names
  // the client by that member, which Recv reports as Message::peer; everything else is refused, counted and
  // logged. Call before the first curve van binds; calling again replaces `admitted`. kFailedPrecondition when
  // libzmq lacks CURVE, kInternal when the handler's socket cannot be bound.
  Status EnableCurve(std::map<std::string, std::string> admitted);
  // Whether EnableCurve succeeded: a curve van refuses to bind without it (libzmq would admit everybody).
  bool curve_enabled() const;
  // Handshakes the ZAP handler refused so far.
  uint64_t refused_handshakes() const;

 private:
  class ZapHandler;
  void* ctx_;
  mutable std::mutex zap_mu_;
  std::unique_ptr<ZapHandler> zap_;  // GUARDED_BY(zap_mu_); stopped before the context terminates
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
  // `peer_name`: the peer's node name (a member name, or "member@..."). With curve the socket only talks to the
  // holder of that member's key: kFailedPrecondition naming the member and the key directory when peer_keys has
  // no key for it. Without curve the name is not used.
  Status Connect(int node_id, const std::string& endpoint, LinkClass link, const std::string& peer_name) override;
  // kNotFound for a node id never connected; kCancelled after Stop(); kInternal if ZeroMQ fails mid-message.
  Result<size_t> Send(int node_id, const Message& msg) override;
  // With options.datagrams and a UDP socket: one UDP datagram (may be lost); otherwise (no socket, a peer without
  // an IPv4 tcp:// endpoint, a message over one datagram) as Send.
  Result<size_t> SendDatagram(int node_id, const Message& msg) override;
  // With options.priority_channels >= channel >= 1: on the channel's own connection (opened at its first use);
  // otherwise as Send. kInvalidArgument for a channel < 1.
  Result<size_t> SendOnChannel(int node_id, const Message& msg, int channel) override;
  // Also returns the datagrams that arrive (refused ones are counted, logged at debug level and skipped).
  Status Recv(Message* msg, int timeout_ms) override;
  void Stop() override;
  // With curve: Recv fills Message::peer.
  bool authenticates() const override { return options_.curve.has_value(); }
  // The IP TOS of the socket that carries `channel` (0: Send's) to `node_id` (ZMQ_TOS), or -1 when there is no
  // such socket yet. For tests.
  int SocketTos(int node_id, int channel);
  // The zmq_poll calls Recv has made. For tests: a Recv that times out waits in the kernel, it does not spin.
  uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }

 private:
  struct Peer;
  // A socket with the van's options. For ZMQ_PUSH with curve, `server_key` is the peer's public key; `tos` >= 0
  // sets ZMQ_TOS.
  void* NewSocket(int type, const std::string& server_key, std::string* error, int tos = -1);
  // A connected PUSH socket to `peer` (peer->mu held) carrying `channel`, or null with `error`.
  void* OpenChannel(Peer* peer, int channel, std::string* error);
  // Send's and SendOnChannel's body: the message's frames on `peer`'s socket for `channel`.
  Result<size_t> SendOn(int node_id, const Message& msg, int channel);
  // Opens (or replaces) the PUSH socket to `node_id`; `server_key` as for NewSocket.
  Status OpenPeer(int node_id, const std::string& endpoint, const std::string& server_key);
  // Connect's TCP half (the PUSH socket).
  Status ConnectStream(int node_id, const std::string& endpoint, LinkClass link, const std::string& peer_name);
  Status ReceiveFrames(Message* msg);

  ZmqContext* const context_;
  const ZmqVanOptions options_;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> polls_{0};
  // Written by Stop() to wake a Recv blocked in zmq_poll: a plain pipe, so no extra zmq socket and no inproc
  // name to invent. [0] = read end (polled), [1] = write end.
  int wake_pipe_[2] = {-1, -1};

  std::mutex recv_mu_;              // held by Recv and by Stop while it closes the receiving socket
  void* receiver_ = nullptr;        // PULL; guarded by recv_mu_
  std::string bound_endpoint_;      // guarded by recv_mu_

  std::unique_ptr<DatagramSocket> datagrams_;  // set by Bind (before any Connect, Send or Recv), or null

  std::mutex peers_mu_;             // guards the map (not the sockets inside: each Peer has its own mutex)
  std::map<int, std::unique_ptr<Peer>> peers_;  // entries are never erased before destruction
};

}  // namespace geomx::comm
