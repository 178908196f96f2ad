#include "comm/zmq_van.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <zmq.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include "comm/codec.h"
#include "engine/base/check.h"
#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

std::string ZmqError(int err) { return zmq_strerror(err); }

// ZAP (RFC 27): libzmq asks the handler bound here about every handshake of a socket with a ZAP domain.
constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr char kZapDomain[] = "geomx";
constexpr int kZapPollMs = 50;   // how often the ZAP handler notices it must stop
constexpr size_t kZapMaxFrames = 16;  // a CURVE request has 7 frames
// CURVE sends each frame as a MESSAGE command: 16 bytes of command name and nonce, the 16-byte Poly1305 tag and
// one flags byte before the encrypted frame. ZMQ_MAXMSGSIZE sees that command.
constexpr size_t kCurveFrameOverhead = 33;

// A received frame kept alive by the Bytes that wrap its data (received frames are never copied).
struct OwnedZmqMsg {
  zmq_msg_t msg;
  OwnedZmqMsg() { zmq_msg_init(&msg); }
  ~OwnedZmqMsg() { zmq_msg_close(&msg); }
  OwnedZmqMsg(const OwnedZmqMsg&) = delete;
  OwnedZmqMsg& operator=(const OwnedZmqMsg&) = delete;
};

// libzmq (not instrumented) hands a zero-copy frame's bytes from the sending thread to the receiving thread
// (inproc) or to its I/O thread, under its own synchronisation: under ThreadSanitizer the hand-over is declared
// (release when the frame goes to libzmq, acquire where it comes back), so our encoder's writes and the decoder's
// or the owner's release reads are ordered for TSan too (docs/sanitizers.md). No code in other builds.
#if defined(__SANITIZE_THREAD__)
void TsanRelease(const void* p) { __tsan_release(const_cast<void*>(p)); }
void TsanAcquire(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
#else
void TsanRelease(const void*) {}
void TsanAcquire(const void*) {}
#endif

// Every received data frame starts at a multiple of this (Message::data).
constexpr uintptr_t kFrameAlignment = alignof(double);

// ZeroMQ calls this once it no longer needs a zero-copy frame's bytes (possibly on an I/O thread). `hint` is the
// heap copy of the Bytes' owner that InitFrame handed over; deleting it drops that reference.
void ReleaseOwner(void* data, void* hint) {
  TsanAcquire(data);
  std::unique_ptr<std::shared_ptr<const void>> owner(static_cast<std::shared_ptr<const void>*>(hint));
}

// Points `zm` at `b` without copying: ZeroMQ keeps a reference to b's owner until the frame has been sent.
// Bytes without an owner (only possible through Bytes::Wrap(nullptr, ...)) are copied.
bool InitFrame(const Bytes& b, zmq_msg_t* zm) {
  if (b.empty()) return zmq_msg_init(zm) == 0;
  if (!b.owner()) {
    if (zmq_msg_init_size(zm, b.size()) != 0) return false;
    std::memcpy(zmq_msg_data(zm), b.data(), b.size());
    return true;
  }
  auto owner = std::make_unique<std::shared_ptr<const void>>(b.owner());
  TsanRelease(b.data());
  if (zmq_msg_init_data(zm, const_cast<uint8_t*>(b.data()), b.size(), ReleaseOwner, owner.get()) != 0) {
    return false;
  }
  owner.release();  // now ZeroMQ's: ReleaseOwner deletes it
  return true;
}

void CloseSocket(void* socket) {
  if (socket != nullptr) zmq_close(socket);
}

// Receives and discards the remaining frames of a multipart message, so the next Recv starts at a frame 0.
// Returns how many frames it discarded.
size_t DrainRest(void* socket, bool more) {
  size_t n = 0;
  while (more) {
    zmq_msg_t zm;
    zmq_msg_init(&zm);
    int rc;
    while ((rc = zmq_msg_recv(&zm, socket, 0)) < 0 && zmq_errno() == EINTR) {
    }
    more = rc >= 0 && zmq_msg_more(&zm);
    n += rc >= 0 ? 1 : 0;
    zmq_msg_close(&zm);
  }
  return n;
}

bool SetKey(void* socket, int option, const std::string& z85) {
  return zmq_setsockopt(socket, option, z85.data(), z85.size()) == 0;
}

}  // namespace

// Answers the ZAP requests of one context on its own thread. Owns the REP socket (closed by the thread on exit).
class ZmqContext::ZapHandler {
 public:
  ZapHandler(void* socket, std::map<std::string, std::string> admitted)
      : socket_(socket), admitted_(std::move(admitted)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~ZapHandler() {
    stop_ = true;
    thread_.join();
  }
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  void SetAdmitted(std::map<std::string, std::string> admitted) {
    std::lock_guard<std::mutex> lock(mu_);
    admitted_ = std::move(admitted);
  }
  uint64_t refused() const { return refused_; }

 private:
  using Clock = std::chrono::steady_clock;

  void Loop() {
    while (!stop_) {
      zmq_pollitem_t item = {socket_, 0, ZMQ_POLLIN, 0};
      const int rc = zmq_poll(&item, 1, kZapPollMs);
      if (rc < 0) {
        if (zmq_errno() == EINTR) continue;
        GEOMX_LOG(kError) << "CurveZMQ: the ZAP handler stops: " << ZmqError(zmq_errno());
        break;
      }
      if ((item.revents & ZMQ_POLLIN) != 0) Answer();
    }
    zmq_close(socket_);
  }

  // Reads one request (frames: version, request id, domain, address, routing id, mechanism, credentials...) and
  // sends the reply (version, request id, status code, status text, user id, metadata).
  void Answer() {
    std::vector<std::string> frames;
    bool more = true;
    while (more) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      int rc;
      while ((rc = zmq_msg_recv(&m, socket_, ZMQ_DONTWAIT)) < 0 && zmq_errno() == EINTR) {
      }
      if (rc < 0) {
        zmq_msg_close(&m);
        if (frames.empty()) return;  // nothing there after all: a REP socket may not reply
        break;
      }
      more = zmq_msg_more(&m);
      if (frames.size() < kZapMaxFrames) {
        frames.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
      }
      zmq_msg_close(&m);
    }
    const std::string request_id = frames.size() > 1 ? frames[1] : std::string();
    const std::string address = frames.size() > 3 ? frames[3] : std::string("an unknown address");
    std::string user;
    std::string refusal;
    if (frames.size() < 6 || frames[0] != "1.0") {
      refusal = "malformed ZAP request";
    } else if (frames[2] != kZapDomain) {
      refusal = "unknown ZAP domain '" + frames[2] + "'";
    } else if (frames[5] != "CURVE") {
      refusal = "mechanism " + frames[5] + " is not allowed (CURVE only)";
    } else if (frames.size() != 7 || frames[6].size() != 32) {
      refusal = "malformed CURVE credentials";
    } else {
      char z85[kCurveKeyChars + 1];
      zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(frames[6].data()), 32);
      std::lock_guard<std::mutex> lock(mu_);
      auto it = admitted_.find(z85);
      if (it != admitted_.end()) {
        user = it->second;
      } else {
        refusal = "public key ";
        refusal.append(z85).append(" is not in the job's key directory");
      }
    }
    if (!refusal.empty()) NoteRefusal(address, refusal);
    const std::string reply[] = {"1.0", request_id, refusal.empty() ? "200" : "400",
                                 refusal.empty() ? "OK" : refusal, user, ""};
    for (size_t i = 0; i < 6; ++i) {
      if (zmq_send(socket_, reply[i].data(), reply[i].size(), i + 1 < 6 ? ZMQ_SNDMORE : 0) < 0) {
        GEOMX_LOG(kWarning) << "CurveZMQ: the ZAP handler could not answer: " << ZmqError(zmq_errno());
        return;
      }
    }
  }

  // Counts a refusal and logs it; a client that keeps retrying (ZeroMQ reconnects every 100 ms) is logged at most
  // once a second, with the number of refusals not logged in between.
  void NoteRefusal(const std::string& address, const std::string& why) {
    const uint64_t n = ++refused_;
    const Clock::time_point now = Clock::now();
    if (n > 1 && now - last_log_ < std::chrono::seconds(1)) {
      ++unlogged_;
      return;
    }
    std::string also;
    if (unlogged_ > 0) also = " (" + std::to_string(unlogged_) + " more refused since the last warning)";
    GEOMX_LOG(kWarning) << "CurveZMQ: refused a connection from " << address << ": " << why << also;
    last_log_ = now;
    unlogged_ = 0;
  }

  void* const socket_;  // REP, bound to kZapEndpoint; used by the thread only
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, std::string> admitted_;  // GUARDED_BY(mu_): Z85 public key -> member name
  std::atomic<uint64_t> refused_{0};
  Clock::time_point last_log_;  // thread only
  uint64_t unlogged_ = 0;       // thread only
  std::thread thread_;
};

struct ZmqVan::Peer {
  std::mutex mu;            // serialises whole multipart messages on `socket` and `channels`
  void* socket = nullptr;   // PUSH; guarded by mu; null after Stop()
  std::vector<void*> channels;  // guarded by mu: [c - 1] = priority channel c's PUSH socket, null until used
  std::string endpoint;     // guarded by mu
  std::string server_key;   // guarded by mu: the peer's public key (Z85) with curve, else empty
};

ZmqContext::ZmqContext(int io_threads) : ctx_(zmq_ctx_new()) {
  GEOMX_CHECK(ctx_ != nullptr) << "zmq_ctx_new: " << ZmqError(zmq_errno());
  GEOMX_CHECK_EQ(zmq_ctx_set(ctx_, ZMQ_IO_THREADS, io_threads), 0);
}

ZmqContext::~ZmqContext() {
  {
    // The handler's socket must be closed before zmq_ctx_term, which waits for every socket of the context.
    std::lock_guard<std::mutex> lock(zap_mu_);
    zap_.reset();
  }
  // Blocks until every socket is closed; ZmqVan sockets use ZMQ_LINGER 0, so that is immediate once they are.
  while (zmq_ctx_term(ctx_) != 0 && zmq_errno() == EINTR) {
  }
}

Status ZmqContext::EnableCurve(std::map<std::string, std::string> admitted) {
  if (!CurveAvailable()) {
    return Status::FailedPrecondition("this libzmq was built without CURVE security (zmq_has(\"curve\") is "
                                      "false): install a libzmq built with libsodium");
  }
  std::lock_guard<std::mutex> lock(zap_mu_);
  if (zap_) {
    zap_->SetAdmitted(std::move(admitted));
    return Status::Ok();
  }
  void* s = zmq_socket(ctx_, ZMQ_REP);
  if (s == nullptr) return Status::Internal("ZmqContext::EnableCurve: zmq_socket: " + ZmqError(zmq_errno()));
  const int linger = 0;
  if (zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger)) != 0 || zmq_bind(s, kZapEndpoint) != 0) {
    const int err = zmq_errno();
    zmq_close(s);
    std::string message = "ZmqContext::EnableCurve: cannot bind the ZAP handler to ";
    message.append(kZapEndpoint).append(": ").append(ZmqError(err));
    return Status::Internal(message);
  }
  zap_ = std::make_unique<ZapHandler>(s, std::move(admitted));
  return Status::Ok();
}

bool ZmqContext::curve_enabled() const {
  std::lock_guard<std::mutex> lock(zap_mu_);
  return zap_ != nullptr;
}

uint64_t ZmqContext::refused_handshakes() const {
  std::lock_guard<std::mutex> lock(zap_mu_);
  return zap_ ? zap_->refused() : 0;
}

ZmqVan::ZmqVan(ZmqContext* context, ZmqVanOptions options) : context_(context), options_(options) {
  GEOMX_CHECK(context_ != nullptr);
  GEOMX_CHECK_EQ(pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK), 0) << "ZmqVan: pipe2: " << std::strerror(errno);
}

ZmqVan::~ZmqVan() {
  Stop();
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
}

int PriorityChannelTos(int channel, int channels) { return std::max(0, channels - channel) * 32; }

void* ZmqVan::NewSocket(int type, const std::string& server_key, std::string* error, int tos) {
  void* s = zmq_socket(context_->raw(), type);
  if (s == nullptr) {
    *error = "zmq_socket: " + ZmqError(zmq_errno());
    return nullptr;
  }
  if (tos >= 0 && zmq_setsockopt(s, ZMQ_TOS, &tos, sizeof(tos)) != 0) {
    *error = "zmq_setsockopt(ZMQ_TOS): " + ZmqError(zmq_errno());
    zmq_close(s);
    return nullptr;
  }
  const int hwm = type == ZMQ_PULL ? options_.recv_hwm : options_.send_hwm;
  const int hwm_option = type == ZMQ_PULL ? ZMQ_RCVHWM : ZMQ_SNDHWM;
  if (zmq_setsockopt(s, ZMQ_LINGER, &options_.linger_ms, sizeof(int)) != 0 ||
      zmq_setsockopt(s, hwm_option, &hwm, sizeof(int)) != 0 ||
      (type == ZMQ_PUSH && zmq_setsockopt(s, ZMQ_SNDTIMEO, &options_.send_timeout_ms, sizeof(int)) != 0)) {
    *error = "zmq_setsockopt: " + ZmqError(zmq_errno());
    zmq_close(s);
    return nullptr;
  }
  bool ok = true;
  if (type == ZMQ_PULL) {
    const size_t overhead = options_.curve ? kCurveFrameOverhead : 0;
    const auto max = static_cast<size_t>(std::numeric_limits<int64_t>::max()) - kCurveFrameOverhead;
    const int64_t limit =
        options_.max_frame_bytes > max ? -1 : static_cast<int64_t>(options_.max_frame_bytes + overhead);
    ok = zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &limit, sizeof(limit)) == 0;
  }
  if (ok && options_.curve) {
    const CurveIdentity& me = *options_.curve;
    if (type == ZMQ_PULL) {
      const int server = 1;
      ok = zmq_setsockopt(s, ZMQ_CURVE_SERVER, &server, sizeof(server)) == 0 &&
           SetKey(s, ZMQ_CURVE_SECRETKEY, me.secret_key) &&
           zmq_setsockopt(s, ZMQ_ZAP_DOMAIN, kZapDomain, std::strlen(kZapDomain)) == 0;
    } else {
      ok = SetKey(s, ZMQ_CURVE_SERVERKEY, server_key) && SetKey(s, ZMQ_CURVE_PUBLICKEY, me.public_key) &&
           SetKey(s, ZMQ_CURVE_SECRETKEY, me.secret_key);
    }
  }
  if (!ok) {
    *error = "zmq_setsockopt: " + ZmqError(zmq_errno());
    zmq_close(s);
    return nullptr;
  }
  return s;
}

Result<std::string> ZmqVan::Bind(const std::string& address) {
  std::lock_guard<std::mutex> lock(recv_mu_);
  if (stopped_) return Status::FailedPrecondition("ZmqVan::Bind(" + address + "): van is stopped");
  if (receiver_ != nullptr) {
    return Status::FailedPrecondition("ZmqVan::Bind(" + address + "): already bound to " + bound_endpoint_);
  }
  if (options_.curve) {
    if (address.rfind("inproc://", 0) == 0) {
      return Status::InvalidArgument("ZmqVan::Bind(" + address + "): CURVE security needs tcp:// or ipc:// " +
                                     "(inproc:// bypasses it)");
    }
    if (!context_->curve_enabled()) {
      return Status::FailedPrecondition("ZmqVan::Bind(" + address + "): CURVE security needs the context's ZAP " +
                                        "handler (ZmqContext::EnableCurve), else every client would get in");
    }
  }
  std::string error;
  void* s = NewSocket(ZMQ_PULL, "", &error);
  if (s == nullptr) return Status::Internal("ZmqVan::Bind(" + address + "): " + error);
  if (zmq_bind(s, address.c_str()) != 0) {
    const int err = zmq_errno();
    zmq_close(s);
    return Status::Unavailable("ZmqVan::Bind(" + address + "): " + ZmqError(err));
  }
  char endpoint[1024];
  size_t size = sizeof(endpoint);
  if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, endpoint, &size) != 0) {
    const int err = zmq_errno();
    zmq_close(s);
    return Status::Internal("ZmqVan::Bind(" + address + "): ZMQ_LAST_ENDPOINT: " + ZmqError(err));
  }
  receiver_ = s;
  bound_endpoint_ = endpoint;
  if (options_.datagrams) {
    std::optional<DatagramSocket::Key> secret;
    if (options_.curve) {
      secret.emplace();
      if (zmq_z85_decode(secret->data(), options_.curve->secret_key.c_str()) == nullptr) {
        return Status::InvalidArgument("ZmqVan::Bind: the secret key is not Z85");
      }
    }
    Result<std::unique_ptr<DatagramSocket>> udp = DatagramSocket::Bind(bound_endpoint_, secret);
    if (udp.ok()) {
      datagrams_ = std::move(udp).value();
    } else {
      GEOMX_LOG(kWarning) << "ZmqVan: no datagram channel, datagrams go over TCP: " << udp.status().ToString();
    }
  }
  return bound_endpoint_;
}

Status ZmqVan::Connect(int node_id, const std::string& endpoint, LinkClass link, const std::string& peer_name) {
  GEOMX_RETURN_IF_ERROR(ConnectStream(node_id, endpoint, link, peer_name));
  if (datagrams_ == nullptr) return Status::Ok();
  std::optional<DatagramSocket::Key> key;
  if (options_.curve) {
    std::lock_guard<std::mutex> lock(peers_mu_);
    const Peer& peer = *peers_.at(node_id);
    std::lock_guard<std::mutex> peer_lock(const_cast<std::mutex&>(peer.mu));
    key.emplace();
    if (zmq_z85_decode(key->data(), peer.server_key.c_str()) == nullptr) key.reset();
  }
  // A peer without an IPv4 tcp:// endpoint (or a key) gets its datagrams over TCP.
  (void)datagrams_->AddPeer(node_id, endpoint, key, MemberOf(peer_name));
  return Status::Ok();
}

Status ZmqVan::ConnectStream(int node_id, const std::string& endpoint, LinkClass /*link*/,
                             const std::string& peer_name) {
  if (!options_.curve) return OpenPeer(node_id, endpoint, "");
  const std::string member = MemberOf(peer_name);
  const std::map<std::string, std::string>* keys = options_.peer_keys.get();
  auto it = keys != nullptr ? keys->find(member) : std::map<std::string, std::string>::const_iterator();
  if (keys == nullptr || it == keys->end()) {
    const std::string& dir = options_.curve->key_dir;
    std::string message = "ZmqVan::Connect(node " + std::to_string(node_id) + ", " + endpoint + "): no public key ";
    message.append("for member '").append(member).append("' (node ").append(peer_name).append(") in the key ");
    message.append("directory ").append(dir).append(" (expected ").append(CurvePublicKeyPath(dir, member));
    message.append(")");
    return Status::FailedPrecondition(message);
  }
  return OpenPeer(node_id, endpoint, it->second);
}

Status ZmqVan::OpenPeer(int node_id, const std::string& endpoint, const std::string& server_key) {
  std::string error;
  const int tos = options_.priority_channels > 0 ? PriorityChannelTos(0, options_.priority_channels) : -1;
  void* s = NewSocket(ZMQ_PUSH, server_key, &error, tos);
  if (s == nullptr) return Status::Internal("ZmqVan::Connect(node " + std::to_string(node_id) + "): " + error);
  if (zmq_connect(s, endpoint.c_str()) != 0) {
    const int err = zmq_errno();
    zmq_close(s);
    return Status::InvalidArgument("ZmqVan::Connect(node " + std::to_string(node_id) + ", " + endpoint +
                                   "): " + ZmqError(err));
  }
  std::vector<void*> old;
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    // Checked under peers_mu_: a Stop() that set stopped_ after this point will find and close the new socket.
    if (stopped_) {
      zmq_close(s);
      return Status::Cancelled("ZmqVan::Connect(node " + std::to_string(node_id) + "): van is stopped");
    }
    std::unique_ptr<Peer>& peer = peers_[node_id];
    if (!peer) peer = std::make_unique<Peer>();
    std::lock_guard<std::mutex> peer_lock(peer->mu);
    old = std::move(peer->channels);  // connections to the old endpoint; reopened at their next use
    peer->channels.clear();
    old.push_back(peer->socket);
    peer->socket = s;
    peer->endpoint = endpoint;
    peer->server_key = server_key;
  }
  for (void* o : old) CloseSocket(o);
  return Status::Ok();
}

void* ZmqVan::OpenChannel(Peer* peer, int channel, std::string* error) {
  void* s = NewSocket(ZMQ_PUSH, peer->server_key, error, PriorityChannelTos(channel, options_.priority_channels));
  if (s != nullptr && zmq_connect(s, peer->endpoint.c_str()) != 0) {
    *error = "zmq_connect(" + peer->endpoint + "): " + ZmqError(zmq_errno());
    zmq_close(s);
    return nullptr;
  }
  return s;
}

Result<size_t> ZmqVan::Send(int node_id, const Message& msg) { return SendOn(node_id, msg, 0); }

Result<size_t> ZmqVan::SendOnChannel(int node_id, const Message& msg, int channel) {
  if (channel < 1) return Status::InvalidArgument("ZmqVan::SendOnChannel: channel " + std::to_string(channel));
  return SendOn(node_id, msg, channel <= options_.priority_channels ? channel : 0);
}

int ZmqVan::SocketTos(int node_id, int channel) {
  std::lock_guard<std::mutex> lock(peers_mu_);
  auto it = peers_.find(node_id);
  if (it == peers_.end()) return -1;
  Peer& peer = *it->second;
  std::lock_guard<std::mutex> peer_lock(peer.mu);
  void* s = channel == 0 ? peer.socket
                         : static_cast<size_t>(channel) <= peer.channels.size() ? peer.channels[channel - 1] : nullptr;
  int tos = -1;
  size_t size = sizeof(tos);
  if (s == nullptr || zmq_getsockopt(s, ZMQ_TOS, &tos, &size) != 0) return -1;
  return tos;
}

Result<size_t> ZmqVan::SendOn(int node_id, const Message& msg, int channel) {
  if (stopped_) return Status::Cancelled("ZmqVan::Send: van is stopped");
  Peer* peer = nullptr;
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    auto it = peers_.find(node_id);
    if (it == peers_.end()) {
      return Status::NotFound("ZmqVan::Send: node " + std::to_string(node_id) + " is not connected");
    }
    peer = it->second.get();  // stable: entries are never erased while the van lives
  }
  const Bytes header = EncodeMeta(msg.meta);
  const size_t num_frames = 1 + msg.data.size();
  std::lock_guard<std::mutex> lock(peer->mu);
  if (peer->socket == nullptr) return Status::Cancelled("ZmqVan::Send: van is stopped");
  void** socket = &peer->socket;
  if (channel > 0) {
    if (peer->channels.size() < static_cast<size_t>(channel)) peer->channels.resize(channel, nullptr);
    socket = &peer->channels[channel - 1];
    std::string error;
    if (*socket == nullptr && (*socket = OpenChannel(peer, channel, &error)) == nullptr) {
      return Status::Internal("ZmqVan::SendOnChannel to node " + std::to_string(node_id) + ", channel " +
                              std::to_string(channel) + ": " + error);
    }
  }
  size_t total = 0;
  for (size_t i = 0; i < num_frames; ++i) {
    const Bytes& frame = i == 0 ? header : msg.data[i - 1];
    zmq_msg_t zm;
    if (!InitFrame(frame, &zm)) {
      return Status::ResourceExhausted("ZmqVan::Send: zmq_msg_init: " + ZmqError(zmq_errno()));
    }
    // With an unlimited high-water mark a send can only wait for a pipe, and an inproc:// PUSH has none once its
    // receiving socket is gone: the first frame then fails at once instead of blocking the sender for
    // send_timeout_ms (a scheduler answering a dead node's last heartbeat stalled its whole tier for 10 s).
    const bool fail_fast = i == 0 && options_.send_hwm == 0;
    const int flags = (i + 1 < num_frames ? ZMQ_SNDMORE : 0) | (fail_fast ? ZMQ_DONTWAIT : 0);
    int rc;
    while ((rc = zmq_msg_send(&zm, *socket, flags)) < 0 && zmq_errno() == EINTR) {
    }
    if (rc < 0) {
      const int err = zmq_errno();
      zmq_msg_close(&zm);
      if (i > 0) {
        // Frames 0..i-1 are queued as an unfinished multipart message that would swallow the next message's
        // frames. Only closing the socket discards them; reopen it so later Sends still work.
        std::string error;
        CloseSocket(*socket);
        *socket = OpenChannel(peer, channel, &error);
      }
      if (err == ETERM) return Status::Cancelled("ZmqVan::Send: context terminated");
      if (err == EAGAIN) {
        const std::string waited =
            fail_fast ? std::string() : " for " + std::to_string(options_.send_timeout_ms) + " ms";
        return Status::Unavailable("ZmqVan::Send to node " + std::to_string(node_id) + " (" + peer->endpoint +
                                   "): nobody received" + waited + " (its receiving socket is gone)");
      }
      return Status::Internal("ZmqVan::Send to node " + std::to_string(node_id) + ": frame " + std::to_string(i) +
                              " of " + std::to_string(num_frames) + ": " + ZmqError(err));
    }
    total += frame.size();
  }
  return total;
}

Status ZmqVan::ReceiveFrames(Message* msg) {
  // The poller said a message is ready; ZeroMQ delivers multipart messages atomically, so once frame 0 is here
  // the rest is too.
  zmq_msg_t head;
  zmq_msg_init(&head);
  int rc;
  while ((rc = zmq_msg_recv(&head, receiver_, ZMQ_DONTWAIT)) < 0 && zmq_errno() == EINTR) {
  }
  if (rc < 0) {
    const int err = zmq_errno();
    zmq_msg_close(&head);
    if (err == EAGAIN) return Status::Unavailable("");  // spurious wake-up: keep polling
    if (err == ETERM) return Status::Cancelled("ZmqVan::Recv: context terminated");
    return Status::Internal("ZmqVan::Recv: " + ZmqError(err));
  }
  bool more = zmq_msg_more(&head);
  std::string peer;
  if (options_.curve) {
    // The member name the ZAP handler gave the sender's key (every frame of an authenticated link carries it).
    const char* user = zmq_msg_gets(&head, "User-Id");
    if (user == nullptr || *user == '\0') {
      zmq_msg_close(&head);
      DrainRest(receiver_, more);
      return Status::DataLoss("ZmqVan::Recv: dropped a message without an authenticated sender");
    }
    peer = user;
  }
  TsanAcquire(zmq_msg_data(&head));
  Status decoded = DecodeMeta(static_cast<const uint8_t*>(zmq_msg_data(&head)), zmq_msg_size(&head), &msg->meta);
  zmq_msg_close(&head);
  if (!decoded.ok()) {
    DrainRest(receiver_, more);
    return decoded.WithContext("ZmqVan::Recv: dropped a malformed message");
  }
  msg->peer = std::move(peer);
  msg->data.clear();
  while (more) {
    if (msg->data.size() >= options_.max_frames) {
      const size_t n = msg->data.size() + DrainRest(receiver_, more);
      msg->data.clear();
      return Status::DataLoss("ZmqVan::Recv: dropped a message of " + std::to_string(n) + " data frames (at most " +
                              std::to_string(options_.max_frames) + " allowed)");
    }
    auto frame = std::make_shared<OwnedZmqMsg>();
    while ((rc = zmq_msg_recv(&frame->msg, receiver_, 0)) < 0 && zmq_errno() == EINTR) {
    }
    if (rc < 0) {
      const int err = zmq_errno();
      return Status::DataLoss("ZmqVan::Recv: data frame " + std::to_string(msg->data.size()) + ": " +
                              ZmqError(err));
    }
    more = zmq_msg_more(&frame->msg);
    void* data = zmq_msg_data(&frame->msg);
    TsanAcquire(data);
    const size_t size = zmq_msg_size(&frame->msg);
    if (reinterpret_cast<uintptr_t>(data) % kFrameAlignment != 0) {
      // libzmq hands a tcp frame at any offset of its receive buffer; payloads are read as floats, int64s and
      // doubles, so a misaligned one is copied (UBSan: a global server read a lone data centre's push unaligned).
      msg->data.push_back(Bytes::Copy(data, size));
      continue;
    }
    msg->data.push_back(Bytes::Wrap(std::move(frame), data, size));
  }
  return Status::Ok();
}

Status ZmqVan::Recv(Message* msg, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  std::lock_guard<std::mutex> lock(recv_mu_);
  if (stopped_) return Status::Cancelled("ZmqVan::Recv: van is stopped");
  if (receiver_ == nullptr) return Status::FailedPrecondition("ZmqVan::Recv before Bind");
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  while (true) {
    long wait_ms = -1;
    if (timeout_ms >= 0) {
      // Rounded up: truncated, the last fraction of a millisecond became zero-timeout polls in a busy loop (every
      // idle receive thread and scheduler spun about a millisecond of every wait).
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
      wait_ms = left > 0 ? static_cast<long>((left + 999) / 1000) : 0;
    }
    polls_.fetch_add(1, std::memory_order_relaxed);
    zmq_pollitem_t items[3] = {{receiver_, 0, ZMQ_POLLIN, 0},
                               {nullptr, wake_pipe_[0], ZMQ_POLLIN, 0},
                               {nullptr, datagrams_ ? datagrams_->fd() : -1, ZMQ_POLLIN, 0}};
    const int rc = zmq_poll(items, datagrams_ ? 3 : 2, wait_ms);
    if (rc < 0) {
      const int err = zmq_errno();
      if (err == EINTR) continue;
      if (err == ETERM) return Status::Cancelled("ZmqVan::Recv: context terminated");
      return Status::Internal("ZmqVan::Recv: zmq_poll: " + ZmqError(err));
    }
    if (stopped_ || (items[1].revents & ZMQ_POLLIN) != 0) return Status::Cancelled("ZmqVan::Recv: van is stopped");
    // Datagrams first: a sender sends a round's datagrams before the message that closes the round (DGT), so the
    // ones already here are taken before it.
    if (datagrams_ && (items[2].revents & ZMQ_POLLIN) != 0) {
      Status s = datagrams_->Receive(msg);
      if (s.ok()) return s;
      if (s.code() == StatusCode::kDataLoss) GEOMX_LOG(kDebug) << "ZmqVan: " << s.message();
    }
    if ((items[0].revents & ZMQ_POLLIN) != 0) {
      Status s = ReceiveFrames(msg);
      if (s.code() != StatusCode::kUnavailable) return s;
    }
    if (timeout_ms >= 0 && Clock::now() >= deadline) {
      return Status::DeadlineExceeded("ZmqVan::Recv: no message within " + std::to_string(timeout_ms) + " ms");
    }
  }
}

Result<size_t> ZmqVan::SendDatagram(int node_id, const Message& msg) {
  if (datagrams_ == nullptr || stopped_) return Send(node_id, msg);
  Result<size_t> sent = datagrams_->Send(node_id, msg);
  if (sent.ok()) return sent;
  if (sent.status().code() == StatusCode::kNotFound || sent.status().code() == StatusCode::kResourceExhausted) {
    return Send(node_id, msg);  // no UDP address for that peer, or too large for one datagram
  }
  return sent;
}

void ZmqVan::Stop() {
  if (stopped_.exchange(true)) return;
  // Wake a Recv blocked in zmq_poll; the byte is never read, so every later poll returns at once too.
  const char byte = 1;
  const ssize_t written = write(wake_pipe_[1], &byte, 1);
  (void)written;  // the pipe can only be full if an earlier byte is already waking the poller
  {
    std::lock_guard<std::mutex> lock(recv_mu_);  // waits for that Recv to return
    CloseSocket(receiver_);
    receiver_ = nullptr;
  }
  std::lock_guard<std::mutex> lock(peers_mu_);
  for (auto& [id, peer] : peers_) {
    std::lock_guard<std::mutex> peer_lock(peer->mu);
    CloseSocket(peer->socket);
    peer->socket = nullptr;
    for (void*& c : peer->channels) {
      CloseSocket(c);
      c = nullptr;
    }
  }
}

}  // namespace geomx::comm
