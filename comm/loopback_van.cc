#include "comm/loopback_van.h"

#include <queue>
#include <utility>
#include <vector>

#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

constexpr const char* kScheme = "loop://";
using Clock = std::chrono::steady_clock;

// What a message would roughly cost on the wire (header estimate + data), for Send's return value.
size_t WireSize(const Message& msg) {
  const Meta& m = msg.meta;
  return 48 + m.keys.size() * 8 + m.lens.size() * 4 + m.codec.size() + m.body.size() + msg.data_bytes();
}

}  // namespace

struct LoopbackNetwork::Entry {
  Clock::time_point due;
  uint64_t seq = 0;
  Message msg;
  Status error;
  bool operator>(const Entry& o) const { return due != o.due ? due > o.due : seq > o.seq; }
};

struct LoopbackNetwork::Mailbox {
  std::mutex mu;
  std::condition_variable cv;
  // Min-heap on (due, seq): FIFO when nothing is delayed.
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;  // GUARDED_BY(mu)
  uint64_t next_seq = 0;                                                      // GUARDED_BY(mu)
  bool bound = false;                                                         // GUARDED_BY(mu)
  bool stopped = false;                                                       // GUARDED_BY(mu)

  void Push(Message msg, Status error, Clock::time_point due) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopped) return;
      queue.push(Entry{due, next_seq++, std::move(msg), std::move(error)});
    }
    cv.notify_all();
  }
};

LoopbackNetwork::LoopbackNetwork(LoopbackOptions options) : options_(options), rng_(options.seed) {}
LoopbackNetwork::~LoopbackNetwork() = default;

void LoopbackNetwork::SetOptions(const LoopbackOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  options_ = options;
  rng_.seed(options.seed);
}

void LoopbackNetwork::IsolateForTesting(const std::string& endpoint, bool isolated) {
  std::lock_guard<std::mutex> lock(mu_);
  if (isolated) {
    isolated_.insert(endpoint);
  } else {
    isolated_.erase(endpoint);
  }
}

void LoopbackNetwork::InjectForTesting(const std::string& endpoint, Message msg, Status recv_error) {
  GetMailbox(endpoint)->Push(std::move(msg), std::move(recv_error), Clock::now());
}

uint64_t LoopbackNetwork::messages_sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

std::shared_ptr<LoopbackNetwork::Mailbox> LoopbackNetwork::GetMailbox(const std::string& endpoint) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& box = boxes_[endpoint];
  if (!box) box = std::make_shared<Mailbox>();
  return box;
}

Status LoopbackNetwork::Deliver(const std::string& from, const std::string& to, const Message& msg) {
  std::shared_ptr<Mailbox> box;
  int copies = 1;
  Clock::duration delay[2] = {};
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++sent_;
    if (isolated_.count(from) || isolated_.count(to)) return Status::Ok();
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (options_.drop_rate > 0 && coin(rng_) < options_.drop_rate) return Status::Ok();
    if (options_.duplicate_rate > 0 && coin(rng_) < options_.duplicate_rate) copies = 2;
    for (int i = 0; i < copies; ++i) {
      if (options_.max_delay_ms > 0) {
        std::uniform_int_distribution<int> ms(0, options_.max_delay_ms);
        delay[i] = std::chrono::milliseconds(ms(rng_));
      }
    }
    auto& slot = boxes_[to];
    if (!slot) slot = std::make_shared<Mailbox>();
    box = slot;
  }
  const auto now = Clock::now();
  for (int i = 0; i < copies; ++i) box->Push(msg, Status::Ok(), now + delay[i]);
  return Status::Ok();
}

LoopbackVan::LoopbackVan(LoopbackNetwork* network) : network_(network) {}

LoopbackVan::~LoopbackVan() { Stop(); }

Result<std::string> LoopbackVan::Bind(const std::string& address) {
  if (address.rfind(kScheme, 0) != 0) {
    return Status::InvalidArgument("loopback van: address '" + address + "' does not start with loop://");
  }
  std::string endpoint = address;
  std::shared_ptr<LoopbackNetwork::Mailbox> box;
  {
    std::lock_guard<std::mutex> lock(network_->mu_);
    if (endpoint == kScheme) endpoint += "anonymous-" + std::to_string(network_->next_anonymous_++);
    auto& slot = network_->boxes_[endpoint];
    if (slot) {
      bool stopped;
      {
        std::lock_guard<std::mutex> box_lock(slot->mu);
        if (slot->bound && !slot->stopped) {
          return Status::AlreadyExists("loopback van: " + endpoint + " is already bound");
        }
        stopped = slot->stopped;
      }
      // Replaced only after its lock is released: the old mailbox may die with this assignment (found by TSan:
      // the lock's destructor unlocked a freed mutex).
      if (stopped) slot = std::make_shared<LoopbackNetwork::Mailbox>();
    } else {
      slot = std::make_shared<LoopbackNetwork::Mailbox>();
    }
    box = slot;
    std::lock_guard<std::mutex> box_lock(box->mu);
    box->bound = true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return Status::FailedPrecondition("loopback van: stopped");
  if (box_) return Status::FailedPrecondition("loopback van: already bound to " + endpoint_);
  endpoint_ = endpoint;
  box_ = std::move(box);
  return endpoint_;
}

Status LoopbackVan::Connect(int node_id, const std::string& endpoint, LinkClass /*link*/,
                            const std::string& /*peer_name*/) {
  if (endpoint.rfind(kScheme, 0) != 0) {
    return Status::InvalidArgument("loopback van: endpoint '" + endpoint + "' does not start with loop://");
  }
  std::lock_guard<std::mutex> lock(mu_);
  peers_[node_id] = endpoint;
  return Status::Ok();
}

Result<size_t> LoopbackVan::Send(int node_id, const Message& msg) {
  std::string to;
  std::string from;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return Status::Cancelled("loopback van: stopped");
    auto it = peers_.find(node_id);
    if (it == peers_.end()) return Status::NotFound("loopback van: node " + std::to_string(node_id) + " not connected");
    to = it->second;
    from = endpoint_;
  }
  GEOMX_RETURN_IF_ERROR(network_->Deliver(from, to, msg));
  return WireSize(msg);
}

Status LoopbackVan::Recv(Message* msg, int timeout_ms) {
  std::shared_ptr<LoopbackNetwork::Mailbox> box;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return Status::Cancelled("loopback van: stopped");
    box = box_;
  }
  if (!box) return Status::FailedPrecondition("loopback van: Recv before Bind");
  const auto deadline = timeout_ms < 0 ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::unique_lock<std::mutex> lock(box->mu);
  while (true) {
    if (box->stopped) return Status::Cancelled("loopback van: stopped");
    const auto now = Clock::now();
    if (!box->queue.empty() && box->queue.top().due <= now) break;
    if (now >= deadline) return Status::DeadlineExceeded("loopback van: no message");
    auto wake = deadline;
    if (!box->queue.empty() && box->queue.top().due < wake) wake = box->queue.top().due;
    if (wake == Clock::time_point::max()) {
      box->cv.wait(lock);
    } else {
      box->cv.wait_until(lock, wake);
    }
  }
  // priority_queue::top is const: copy out (Meta copy, frames shared), then pop.
  LoopbackNetwork::Entry entry = box->queue.top();
  box->queue.pop();
  lock.unlock();
  if (!entry.error.ok()) return entry.error;
  if (entry.msg.meta.version != kProtocolVersion) {
    return Status::DataLoss("loopback van: protocol version " + std::to_string(entry.msg.meta.version) +
                            ", this node speaks " + std::to_string(kProtocolVersion));
  }
  if (!IsKnownCommand(static_cast<uint8_t>(entry.msg.meta.command))) {
    return Status::DataLoss("loopback van: unknown command " +
                            std::to_string(static_cast<int>(entry.msg.meta.command)));
  }
  *msg = std::move(entry.msg);
  return Status::Ok();
}

void LoopbackVan::Stop() {
  std::shared_ptr<LoopbackNetwork::Mailbox> box;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    box = box_;
  }
  if (!box) return;
  {
    std::lock_guard<std::mutex> lock(box->mu);
    box->stopped = true;
    while (!box->queue.empty()) box->queue.pop();
  }
  box->cv.notify_all();
}

}  // namespace geomx::comm
