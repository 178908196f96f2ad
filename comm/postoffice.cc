#include "comm/postoffice.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

#include "comm/codec.h"
#include "comm/curve.h"
#include "comm/customer.h"
#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

constexpr int kRecvPollMs = 20;  // how often the receive thread notices Stop
constexpr int kTickMs = 20;      // ticker period (heartbeats are sent on their own interval)

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// How often a node repeats a message the scheduler may not have received (registration, goodbye).
std::chrono::milliseconds RetryInterval(const CommOptions& o) {
  int ms = o.rendezvous_timeout_ms > 0 ? o.rendezvous_timeout_ms / 10 : 500;
  return std::chrono::milliseconds(std::clamp(ms, 20, 1000));
}

bool IsDataCommand(Command c) {
  return c == Command::kPush || c == Command::kPull || c == Command::kPushPull || c == Command::kControl;
}

}  // namespace

Postoffice::Postoffice(TierSpec spec, NodeInfo self, Van* van)
    : spec_(std::move(spec)), self_(std::move(self)), van_(van) {}

template <typename Pred>
bool Postoffice::WaitFor(std::unique_lock<std::mutex>& lock, Pred done, Clock::time_point deadline) {
  while (!done() && fatal_.ok()) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) return done();
  }
  return done();
}

Postoffice::~Postoffice() {
  Leave(Status::Unavailable(self_.name + " stopped before the end of the job"));
  SetFailureCallback(nullptr);
  SetNodeLeftCallback(nullptr);
  StopThreads();
}

void Postoffice::Leave(const Status& why) {
  if (!started_ || why.ok()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fatal_.ok() || shutdown_released_ || stop_) return;
  }
  GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " leaves the job: " << why.message();
  Message m;
  m.meta.command = Command::kShutdown;
  m.meta.sender = self_.id;
  m.meta.recipient = kSchedulerId;
  m.meta.request = true;
  m.meta.status_code = static_cast<int32_t>(why.code());
  m.meta.body = why.message();
  const bool sent = van_->Send(kSchedulerId, m).ok();
  if (sent) {
    // The scheduler answers every member, this node included, with the tier's failure.
    std::unique_lock<std::mutex> lock(mu_);
    WaitFor(lock, [this] { return shutdown_released_ || stop_.load(); }, Clock::now() + std::chrono::seconds(1));
  }
  SetFatal(why);
}

void Postoffice::SetFailureCallback(std::function<void(const Status&)> callback) {
  std::lock_guard<std::mutex> lock(callback_mu_);
  failure_callback_ = std::move(callback);
}

void Postoffice::SetNodeLeftCallback(std::function<void(int, const std::string&)> callback) {
  std::lock_guard<std::mutex> lock(callback_mu_);
  node_left_callback_ = std::move(callback);
}

Status Postoffice::Start(const std::string& bind_address) {
  if (receiver_.joinable() || started_) return Status::FailedPrecondition("postoffice: Start called twice");
  const std::string tier = "tier " + spec_.name;
  GEOMX_ASSIGN_OR_RETURN(std::string endpoint, van_->Bind(bind_address));
  self_.endpoint = endpoint;
  const bool wan = !spec_.scheduler_party.empty() && spec_.scheduler_party != self_.party;
  GEOMX_RETURN_IF_ERROR(van_->Connect(kSchedulerId, spec_.scheduler_endpoint, wan ? LinkClass::kWan : LinkClass::kLan,
                                      SchedulerName(spec_)));
  receiver_ = std::thread([this] { ReceiveLoop(); });

  RegisterRequest reg;
  reg.node = self_;
  reg.tier = spec_.name;
  reg.num_servers = spec_.num_servers;
  reg.num_workers = spec_.num_workers;
  const std::string body = EncodeRegisterRequest(reg);
  // The scheduler names missing nodes when its rendezvous times out; wait a little longer than it to hear why.
  const int timeout_ms = spec_.options.rendezvous_timeout_ms;
  const auto deadline = timeout_ms > 0 ? Clock::now() + std::chrono::milliseconds(timeout_ms + timeout_ms / 2 + 200)
                                       : Clock::time_point::max();
  Status result;
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      lock.unlock();
      Status sent = SendToScheduler(Command::kRegister, 0, body);
      lock.lock();
      if (!sent.ok() && sent.code() != StatusCode::kNotFound) {
        result = sent.WithContext(tier + ": registering with the scheduler at " + spec_.scheduler_endpoint);
        break;
      }
      const auto retry = std::min(deadline, Clock::now() + RetryInterval(spec_.options));
      auto done = [&] { return have_table_ || !start_error_.ok(); };
      WaitFor(lock, done, retry);
      if (!start_error_.ok()) {
        result = start_error_;
        break;
      }
      if (!fatal_.ok()) {
        result = fatal_;
        break;
      }
      if (have_table_) break;
      if (Clock::now() >= deadline) {
        result = Status::DeadlineExceeded(tier + ": " + self_.name + " got no node table from the scheduler at " +
                                          spec_.scheduler_endpoint + " within " + Seconds(timeout_ms) +
                                          " (is the scheduler running?)");
        break;
      }
    }
    last_scheduler_contact_ = Clock::now();
  }
  if (!result.ok()) {
    StopThreads();
    return result;
  }
  started_ = true;
  ticker_ = std::thread([this] { TickerLoop(); });
  GEOMX_LOG(kDebug) << tier << ": " << self_.name << " is node " << self_.id << " (" << NodeRoleName(self_.role)
                    << " rank " << self_.rank << ")";
  return Status::Ok();
}

Status Postoffice::SendToScheduler(Command cmd, int64_t ts, std::string body) {
  Message m;
  m.meta.command = cmd;
  m.meta.sender = self_.id;
  m.meta.recipient = kSchedulerId;
  m.meta.timestamp = ts;
  m.meta.request = true;
  m.meta.body = std::move(body);
  Result<size_t> sent = van_->Send(kSchedulerId, m);
  return sent.ok() ? Status::Ok() : sent.status();
}

void Postoffice::ReceiveLoop() {
  while (!stop_) {
    Message msg;
    Status s = van_->Recv(&msg, kRecvPollMs);
    if (s.ok()) {
      HandleMessage(std::move(msg));
    } else if (s.code() == StatusCode::kCancelled) {
      break;
    } else if (s.code() != StatusCode::kDeadlineExceeded) {
      GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped a message: " << s.ToString();
    }
  }
}

void Postoffice::HandleMessage(Message&& msg) {
  const Meta& meta = msg.meta;
  if (meta.version != kProtocolVersion) {
    GEOMX_LOG(kWarning) << "tier " << spec_.name << ": dropped a message of protocol version " << meta.version;
    return;
  }
  if (van_->authenticates() && !FromClaimedSender(msg)) return;
  if (meta.sender == kSchedulerId) return HandleSchedulerMessage(std::move(msg));
  if (!IsDataCommand(meta.command)) {
    GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped unexpected "
                        << CommandName(meta.command) << " from node " << meta.sender;
    return;
  }
  bool have_table;
  {
    std::lock_guard<std::mutex> lock(mu_);
    have_table = have_table_;
  }
  if (!have_table) {
    // A peer that got its table before us may already talk to us; keep its messages until we know it.
    if (early_.size() < 4096) early_.push_back(std::move(msg));
    return;
  }
  if (FindNode(meta.sender) == nullptr || meta.sender == kSchedulerId) {
    GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped "
                        << CommandName(meta.command) << " from unknown node " << meta.sender;
    return;
  }
  DispatchData(std::move(msg));
}

bool Postoffice::FromClaimedSender(const Message& msg) {
  const int sender = msg.meta.sender;
  std::string claimed;
  if (sender == kSchedulerId) {
    claimed = SchedulerName(spec_);
  } else {
    bool have_table;
    {
      std::lock_guard<std::mutex> lock(mu_);
      have_table = have_table_;
    }
    if (!have_table) return true;  // kept until the table arrives, and judged then (HandleMessage again)
    const NodeInfo* n = FindNode(sender);
    if (n == nullptr) return true;  // dropped as from an unknown node
    claimed = n->name;
  }
  if (msg.peer == MemberOf(claimed)) return true;
  ++rejected_;
  GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped " << CommandName(msg.meta.command)
                      << " claiming to come from " << claimed << " (node " << sender << ") but sent with the key of "
                      << (msg.peer.empty() ? std::string("nobody") : msg.peer);
  return false;
}

void Postoffice::HandleSchedulerMessage(Message&& msg) {
  const Meta& meta = msg.meta;
  std::unique_lock<std::mutex> lock(mu_);
  last_scheduler_contact_ = Clock::now();
  switch (meta.command) {
    case Command::kNodeTable: {
      if (have_table_) return;
      rejoined_ = meta.timestamp == kRejoinTable;
      lock.unlock();
      HandleNodeTable(msg);
      std::vector<Message> early = std::move(early_);
      early_.clear();
      for (auto& m : early) HandleMessage(std::move(m));
      return;
    }
    case Command::kError: {
      const auto code = meta.status_code != 0 ? static_cast<StatusCode>(meta.status_code) : StatusCode::kUnavailable;
      Status s(code, meta.body.empty() ? "tier " + spec_.name + ": the scheduler reported an error" : meta.body);
      if (!have_table_) {
        if (start_error_.ok()) start_error_ = s;
        cv_.notify_all();
        return;
      }
      lock.unlock();
      SetFatal(s);
      return;
    }
    case Command::kBarrierDone:
      if (barrier_waiting_.erase(meta.timestamp) == 0) return;  // a duplicate, or nobody waits any more
      barrier_done_[meta.timestamp] =
          meta.status_code == 0 ? Status::Ok() : Status(static_cast<StatusCode>(meta.status_code), meta.body);
      cv_.notify_all();
      return;
    case Command::kShutdown:
      if (!meta.request) {
        shutdown_released_ = true;
        cv_.notify_all();
      }
      return;
    case Command::kHeartbeat:
      return;
    case Command::kNodeLeft: {
      lock.unlock();
      std::map<std::string, std::string> f;
      int id = -1;
      if (DecodeFields(meta.body, &f).ok() && f.count("node")) id = std::atoi(f.at("node").c_str());
      if (id <= 0 || FindNode(id) == nullptr) {
        GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped a malformed node_left";
        return;
      }
      const std::string why = f.count("why") ? f.at("why") : "";
      if (f.count("wait")) {  // topology.failure_policy: wait: nobody drops it; its data centre pauses
        GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " waits for " << Describe(id)
                            << " to rejoin: " << why;
        return;
      }
      GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " goes on without " << Describe(id)
                          << ": " << why;
      std::lock_guard<std::mutex> cb(callback_mu_);
      if (node_left_callback_) node_left_callback_(id, why);
      return;
    }
    case Command::kNodeJoined:
      lock.unlock();
      return HandleNodeJoined(meta);
    default:
      GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped unexpected "
                          << CommandName(meta.command) << " from the scheduler";
  }
}

void Postoffice::HandleNodeJoined(const Meta& meta) {
  if (!meta.request) return;
  std::map<std::string, std::string> f;
  int id = -1;
  if (DecodeFields(meta.body, &f).ok() && f.count("node")) id = std::atoi(f.at("node").c_str());
  const NodeInfo* n = id > 0 ? FindNode(id) : nullptr;
  if (n == nullptr || n->role != NodeRole::kWorker || !f.count("endpoint") || f.at("endpoint").empty()) {
    GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped a malformed node_joined";
    return;
  }
  const std::string& endpoint = f.at("endpoint");
  if (id != self_.id) {  // reconnecting replaces the channel to its old endpoint
    const LinkClass link = n->party == self_.party ? LinkClass::kLan : LinkClass::kWan;
    Status c = van_->Connect(id, endpoint, link, n->name);
    if (!c.ok()) {
      GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " cannot reach rejoining " << n->name
                          << " at " << endpoint << ": " << c.ToString();
      return;  // no acknowledgement: the scheduler does not hand the node a table nobody can answer
    }
    GEOMX_LOG(kInfo) << "tier " << spec_.name << ": " << self_.name << " reaches rejoined " << n->name << " at "
                     << endpoint;
  }
  Message ack;
  ack.meta.command = Command::kNodeJoined;
  ack.meta.sender = self_.id;
  ack.meta.recipient = kSchedulerId;
  ack.meta.request = false;
  ack.meta.timestamp = meta.timestamp;
  Result<size_t> sent = van_->Send(kSchedulerId, ack);
  if (!sent.ok()) GEOMX_LOG(kWarning) << "tier " << spec_.name << ": node_joined not acknowledged: "
                                          << sent.status().ToString();
}

void Postoffice::HandleNodeTable(const Message& msg) {
  Result<std::vector<NodeInfo>> table = DecodeNodeTable(msg.meta.body);
  Status error;
  if (!table.ok()) {
    GEOMX_LOG(kWarning) << "tier " << spec_.name << ": dropped a node table: " << table.status().ToString();
    return;
  }
  const NodeInfo* me = nullptr;
  for (const auto& n : *table) {
    if (n.endpoint == self_.endpoint && n.role == self_.role) me = &n;
  }
  if (me == nullptr) {
    error = Status::Internal("tier " + spec_.name + ": the node table does not list " + self_.name + " at " +
                             self_.endpoint);
  } else {
    for (const auto& n : *table) {
      if (n.id == kSchedulerId) continue;
      const LinkClass link = n.party == self_.party ? LinkClass::kLan : LinkClass::kWan;
      Status c = van_->Connect(n.id, n.endpoint, link, n.name);
      if (!c.ok() && error.ok()) error = c.WithContext("tier " + spec_.name + ": connecting to " + n.name);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (error.ok()) {
    self_.id = me->id;
    self_.rank = me->rank;
    nodes_ = std::move(*table);
    have_table_ = true;
  } else if (start_error_.ok()) {
    start_error_ = error;
  }
  cv_.notify_all();
}

void Postoffice::DispatchData(Message&& msg) {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  auto it = handlers_.find(msg.meta.app_id);
  if (it == handlers_.end()) {
    GEOMX_LOG(kWarning) << "tier " << spec_.name << ": " << self_.name << " dropped "
                        << CommandName(msg.meta.command) << " for app " << msg.meta.app_id << " (no customer)";
    return;
  }
  (*it->second)(std::move(msg));
}

void Postoffice::TickerLoop() {
  const CommOptions& o = spec_.options;
  const bool heartbeats = o.heartbeat_interval_ms > 0;
  auto next_heartbeat = Clock::now();
  int64_t heartbeat_ts = 0;
  while (!stop_) {
    const auto now = Clock::now();
    if (heartbeats && now >= next_heartbeat) {
      Status s = SendToScheduler(Command::kHeartbeat, heartbeat_ts++, "");
      if (!s.ok()) GEOMX_LOG(kDebug) << "tier " << spec_.name << ": heartbeat not sent: " << s.ToString();
      next_heartbeat = now + std::chrono::milliseconds(o.heartbeat_interval_ms);
    }
    if (heartbeats && o.heartbeat_timeout_ms > 0) {
      Clock::time_point last;
      bool released;
      {
        std::lock_guard<std::mutex> lock(mu_);
        last = last_scheduler_contact_;
        released = shutdown_released_;
      }
      const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last).count();
      if (!released && silent >= o.heartbeat_timeout_ms) {
        SetFatal(Status::Unavailable("tier " + spec_.name + ": the scheduler at " + spec_.scheduler_endpoint +
                                     " has been silent for " + Seconds(silent) + " (heartbeat timeout " +
                                     Seconds(o.heartbeat_timeout_ms) + ")"));
      }
    }
    {
      std::lock_guard<std::mutex> lock(trackers_mu_);
      for (Customer* c : trackers_) c->ExpireOverdue();
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(kTickMs), [this] { return stop_.load(); });
  }
}

void Postoffice::SetFatal(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fatal_.ok()) return;
    fatal_ = status;
    cv_.notify_all();
  }
  GEOMX_LOG(kError) << self_.name << ": " << status.ToString();
  {
    std::lock_guard<std::mutex> lock(trackers_mu_);
    for (Customer* c : trackers_) c->Fail(status);
  }
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (failure_callback_) failure_callback_(status);
}

Status Postoffice::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fatal_;
}

Status Postoffice::Barrier(const std::string& group) {
  if (!started_) return Status::FailedPrecondition("tier " + spec_.name + ": Barrier before Start");
  int64_t ts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fatal_.ok()) return fatal_;
    ts = next_barrier_ts_++;
    barrier_waiting_.insert(ts);
  }
  GEOMX_RETURN_IF_ERROR(SendToScheduler(Command::kBarrier, ts, group));
  const int timeout_ms = spec_.options.request_timeout_ms;
  const auto deadline =
      timeout_ms > 0 ? Clock::now() + std::chrono::milliseconds(timeout_ms) : Clock::time_point::max();
  std::unique_lock<std::mutex> lock(mu_);
  if (WaitFor(lock, [&] { return barrier_done_.count(ts) > 0; }, deadline)) {
    Status s = barrier_done_[ts];
    barrier_done_.erase(ts);
    return s;
  }
  barrier_waiting_.erase(ts);
  if (!fatal_.ok()) return fatal_;
  return Status::DeadlineExceeded("tier " + spec_.name + ": barrier '" + group + "' of " + self_.name +
                                  " not released after " + Seconds(timeout_ms));
}

Status Postoffice::Finalize() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finalized_) return Status::Ok();
    finalized_ = true;
  }
  if (!started_) {
    StopThreads();
    return Status::Ok();
  }
  const int timeout_ms = spec_.options.request_timeout_ms;
  const auto deadline =
      timeout_ms > 0 ? Clock::now() + std::chrono::milliseconds(timeout_ms) : Clock::time_point::max();
  Status result;
  bool may_retry = false;  // the tier is healthy, only slower than the timeout: the caller may wait again
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      if (!fatal_.ok()) {
        result = fatal_;
        break;
      }
      lock.unlock();
      Status sent = SendToScheduler(Command::kShutdown, 0, "");
      lock.lock();
      if (!sent.ok()) {
        result = sent.WithContext("tier " + spec_.name + ": saying goodbye to the scheduler");
        break;
      }
      const auto retry = std::min(deadline, Clock::now() + RetryInterval(spec_.options));
      if (WaitFor(lock, [&] { return shutdown_released_; }, retry)) break;
      if (Clock::now() >= deadline) {
        result = Status::DeadlineExceeded("tier " + spec_.name + ": " + self_.name +
                                          " was not released by the scheduler within " + Seconds(timeout_ms) +
                                          " (some node did not finalize)");
        may_retry = true;
        finalized_ = false;
        break;
      }
    }
  }
  if (may_retry) return result;  // threads keep serving; Finalize() may be called again
  StopThreads();
  return result;
}

void Postoffice::StopThreads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (receiver_.joinable()) receiver_.join();
}

Status Postoffice::Send(int node_id, Message msg) { return SendVia(node_id, std::move(msg), 0); }

Status Postoffice::SendDatagram(int node_id, Message msg) { return SendVia(node_id, std::move(msg), -1); }

Status Postoffice::SendOnChannel(int node_id, Message msg, int channel) {
  if (channel < 1) return Status::InvalidArgument("SendOnChannel: channel " + std::to_string(channel) + " < 1");
  return SendVia(node_id, std::move(msg), channel);
}

Status Postoffice::SendVia(int node_id, Message msg, int channel) {
  if (!started_) return Status::FailedPrecondition("tier " + spec_.name + ": Send before Start");
  if (FindNode(node_id) == nullptr) {
    return Status::NotFound("tier " + spec_.name + ": no node " + std::to_string(node_id));
  }
  msg.meta.version = kProtocolVersion;
  msg.meta.sender = self_.id;
  msg.meta.recipient = node_id;
  Result<size_t> sent = channel < 0   ? van_->SendDatagram(node_id, msg)
                        : channel == 0 ? van_->Send(node_id, msg)
                                       : van_->SendOnChannel(node_id, msg, channel);
  return sent.ok() ? Status::Ok() : sent.status();
}

void Postoffice::RegisterCustomer(int app_id, Handler handler) {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  handlers_[app_id] = std::make_shared<Handler>(std::move(handler));
}

void Postoffice::UnregisterCustomer(int app_id) {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  handlers_.erase(app_id);
}

void Postoffice::AttachTracker(Customer* customer) {
  Status health_now = health();
  std::lock_guard<std::mutex> lock(trackers_mu_);
  trackers_.insert(customer);
  if (!health_now.ok()) customer->Fail(health_now);
}

void Postoffice::DetachTracker(Customer* customer) {
  std::lock_guard<std::mutex> lock(trackers_mu_);
  trackers_.erase(customer);
}

std::vector<int> Postoffice::ServerIds() const {
  std::vector<std::pair<int, int>> v;
  for (const auto& n : nodes_) {
    if (n.role == NodeRole::kServer) v.emplace_back(n.rank, n.id);
  }
  std::sort(v.begin(), v.end());
  std::vector<int> ids;
  for (auto& p : v) ids.push_back(p.second);
  return ids;
}

std::vector<int> Postoffice::WorkerIds() const {
  std::vector<std::pair<int, int>> v;
  for (const auto& n : nodes_) {
    if (n.role == NodeRole::kWorker) v.emplace_back(n.rank, n.id);
  }
  std::sort(v.begin(), v.end());
  std::vector<int> ids;
  for (auto& p : v) ids.push_back(p.second);
  return ids;
}

const NodeInfo* Postoffice::FindNode(int id) const {
  for (const auto& n : nodes_) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

std::string Postoffice::Describe(int id) const {
  const NodeInfo* n = FindNode(id);
  if (n == nullptr) return "node " + std::to_string(id);
  return std::string(NodeRoleName(n->role)) + " " +
         (n->name.empty() ? "rank " + std::to_string(n->rank) : n->name);
}

}  // namespace geomx::comm
