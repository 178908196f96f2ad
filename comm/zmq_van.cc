#include "comm/zmq_van.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <zmq.h>

#include "comm/codec.h"
#include "engine/base/check.h"

namespace geomx::comm {
namespace {

std::string ZmqError(int err) { return zmq_strerror(err); }

// A received frame kept alive by the Bytes that wrap its data (received frames are never copied).
struct OwnedZmqMsg {
  zmq_msg_t msg;
  OwnedZmqMsg() { zmq_msg_init(&msg); }
  ~OwnedZmqMsg() { zmq_msg_close(&msg); }
  OwnedZmqMsg(const OwnedZmqMsg&) = delete;
  OwnedZmqMsg& operator=(const OwnedZmqMsg&) = delete;
};

// ZeroMQ calls this once it no longer needs a zero-copy frame's bytes (possibly on an I/O thread). `hint` is the
// heap copy of the Bytes' owner that InitFrame handed over; deleting it drops that reference.
void ReleaseOwner(void* /*data*/, void* hint) {
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
void DrainRest(void* socket, bool more) {
  while (more) {
    zmq_msg_t zm;
    zmq_msg_init(&zm);
    int rc;
    while ((rc = zmq_msg_recv(&zm, socket, 0)) < 0 && zmq_errno() == EINTR) {
    }
    more = rc >= 0 && zmq_msg_more(&zm);
    zmq_msg_close(&zm);
  }
}

}  // namespace

struct ZmqVan::Peer {
  std::mutex mu;            // serialises whole multipart messages on `socket`
  void* socket = nullptr;   // PUSH; guarded by mu; null after Stop()
  std::string endpoint;     // guarded by mu
};

ZmqContext::ZmqContext(int io_threads) : ctx_(zmq_ctx_new()) {
  GEOMX_CHECK(ctx_ != nullptr) << "zmq_ctx_new: " << ZmqError(zmq_errno());
  GEOMX_CHECK_EQ(zmq_ctx_set(ctx_, ZMQ_IO_THREADS, io_threads), 0);
}

ZmqContext::~ZmqContext() {
  // Blocks until every socket is closed; ZmqVan sockets use ZMQ_LINGER 0, so that is immediate once they are.
  while (zmq_ctx_term(ctx_) != 0 && zmq_errno() == EINTR) {
  }
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

void* ZmqVan::NewSocket(int type, std::string* error) {
  void* s = zmq_socket(context_->raw(), type);
  if (s == nullptr) {
    *error = "zmq_socket: " + ZmqError(zmq_errno());
    return nullptr;
  }
  const int hwm = type == ZMQ_PULL ? options_.recv_hwm : options_.send_hwm;
  const int hwm_option = type == ZMQ_PULL ? ZMQ_RCVHWM : ZMQ_SNDHWM;
  if (zmq_setsockopt(s, ZMQ_LINGER, &options_.linger_ms, sizeof(int)) != 0 ||
      zmq_setsockopt(s, hwm_option, &hwm, sizeof(int)) != 0) {
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
  std::string error;
  void* s = NewSocket(ZMQ_PULL, &error);
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
  return bound_endpoint_;
}

Status ZmqVan::Connect(int node_id, const std::string& endpoint, LinkClass /*link*/) {
  std::string error;
  void* s = NewSocket(ZMQ_PUSH, &error);
  if (s == nullptr) return Status::Internal("ZmqVan::Connect(node " + std::to_string(node_id) + "): " + error);
  if (zmq_connect(s, endpoint.c_str()) != 0) {
    const int err = zmq_errno();
    zmq_close(s);
    return Status::InvalidArgument("ZmqVan::Connect(node " + std::to_string(node_id) + ", " + endpoint +
                                   "): " + ZmqError(err));
  }
  void* old = nullptr;
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
    old = peer->socket;
    peer->socket = s;
    peer->endpoint = endpoint;
  }
  CloseSocket(old);
  return Status::Ok();
}

Result<size_t> ZmqVan::Send(int node_id, const Message& msg) {
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
  size_t total = 0;
  for (size_t i = 0; i < num_frames; ++i) {
    const Bytes& frame = i == 0 ? header : msg.data[i - 1];
    zmq_msg_t zm;
    if (!InitFrame(frame, &zm)) {
      return Status::ResourceExhausted("ZmqVan::Send: zmq_msg_init: " + ZmqError(zmq_errno()));
    }
    const int flags = i + 1 < num_frames ? ZMQ_SNDMORE : 0;
    int rc;
    while ((rc = zmq_msg_send(&zm, peer->socket, flags)) < 0 && zmq_errno() == EINTR) {
    }
    if (rc < 0) {
      const int err = zmq_errno();
      zmq_msg_close(&zm);
      if (i > 0) {
        // Frames 0..i-1 are queued as an unfinished multipart message that would swallow the next message's
        // frames. Only closing the socket discards them; reopen it so later Sends still work.
        std::string error;
        CloseSocket(peer->socket);
        peer->socket = NewSocket(ZMQ_PUSH, &error);
        if (peer->socket != nullptr && zmq_connect(peer->socket, peer->endpoint.c_str()) != 0) {
          CloseSocket(peer->socket);
          peer->socket = nullptr;
        }
      }
      if (err == ETERM) return Status::Cancelled("ZmqVan::Send: context terminated");
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
  Status decoded = DecodeMeta(static_cast<const uint8_t*>(zmq_msg_data(&head)), zmq_msg_size(&head), &msg->meta);
  zmq_msg_close(&head);
  if (!decoded.ok()) {
    DrainRest(receiver_, more);
    return decoded.WithContext("ZmqVan::Recv: dropped a malformed message");
  }
  msg->data.clear();
  while (more) {
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
    const size_t size = zmq_msg_size(&frame->msg);
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
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      wait_ms = left > 0 ? static_cast<long>(left) : 0;
    }
    zmq_pollitem_t items[2] = {{receiver_, 0, ZMQ_POLLIN, 0}, {nullptr, wake_pipe_[0], ZMQ_POLLIN, 0}};
    const int rc = zmq_poll(items, 2, wait_ms);
    if (rc < 0) {
      const int err = zmq_errno();
      if (err == EINTR) continue;
      if (err == ETERM) return Status::Cancelled("ZmqVan::Recv: context terminated");
      return Status::Internal("ZmqVan::Recv: zmq_poll: " + ZmqError(err));
    }
    if (stopped_ || (items[1].revents & ZMQ_POLLIN) != 0) return Status::Cancelled("ZmqVan::Recv: van is stopped");
    if ((items[0].revents & ZMQ_POLLIN) != 0) {
      Status s = ReceiveFrames(msg);
      if (s.code() != StatusCode::kUnavailable) return s;
    }
    if (timeout_ms >= 0 && Clock::now() >= deadline) {
      return Status::DeadlineExceeded("ZmqVan::Recv: no message within " + std::to_string(timeout_ms) + " ms");
    }
  }
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
  }
}

}  // namespace geomx::comm
