#include "comm/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "comm/codec.h"
#include "comm/curve.h"
#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPollMs = 10;
// After its last broadcast (release or failure) the scheduler keeps answering for a while, so that messages still
// queued in the Van (or held by an emulated WAN link) reach the nodes, and nodes that retry their goodbye get an
// answer: this long plus three one-way latencies of the slowest emulated link.
constexpr int kGraceMs = 50;
int GraceMs(const CommOptions& o) {
  return kGraceMs + static_cast<int>(3000 * std::max(o.wan.latency_s, o.lan.latency_s));
}
// Ids handed to nodes that are refused, so the refusal can be addressed (never in the node table).
constexpr int kFirstRefusedId = 1 << 24;

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", static_cast<double>(ms) / 1000.0);
  return buf;
}

struct Member {
  NodeInfo info;
  Clock::time_point last_seen;
  bool finalized = false;
  bool lost = false;  // dropped (continue) or waited for (wait): not in barriers and goodbyes any more
  Clock::time_point lost_at;  // when it was declared lost (wait: its rejoin deadline counts from here)
  // Per barrier group, the node's latest released barrier: a late duplicate of it is ignored.
  std::map<std::string, int64_t> released_barrier_ts;
  // Per barrier group, how many barriers this process entered (a rejoined process starts at 0 and catches up).
  std::map<std::string, int64_t> barriers_entered;
  // Rejoining (CommOptions::admit_rejoins): the kNodeJoined of `join_ts` is not yet acknowledged by `awaiting`;
  // the node gets its node table once it is.
  bool joining = false;
  int64_t join_ts = 0;
  std::set<int> awaiting;
};

}  // namespace

// The state machine of one Serve() call. Single-threaded: only the serving thread touches it.
class Scheduler::Loop {
 public:
  Loop(const TierSpec& spec, Van* van, std::string endpoint, const std::atomic<bool>* stop,
       std::atomic<uint64_t>* rejected)
      : spec_(spec), van_(van), endpoint_(std::move(endpoint)), stop_(stop), rejected_(rejected),
        start_(Clock::now()) {}

  Status Serve() {
    while (true) {
      if (*stop_) return Status::Cancelled("tier " + spec_.name + ": scheduler stopped");
      Message msg;
      Status s = van_->Recv(&msg, kPollMs);
      if (s.ok()) {
        Handle(std::move(msg));
      } else if (s.code() == StatusCode::kCancelled) {
        return Status::Cancelled("tier " + spec_.name + ": scheduler's van stopped");
      } else if (s.code() != StatusCode::kDeadlineExceeded) {
        GEOMX_LOG(kWarning) << "tier " << spec_.name << ": scheduler dropped a message: " << s.ToString();
      }
      if (!result_.has_value()) CheckTimers();
      if (result_.has_value() && Clock::now() >= finish_at_) return *result_;
    }
  }

 private:
  int total() const { return spec_.num_servers + spec_.num_workers; }
  std::string Prefix() const { return "tier " + spec_.name; }

  std::string ExpectedName(NodeRole role, int rank) const {
    const auto& names = role == NodeRole::kServer ? spec_.server_names : spec_.worker_names;
    return rank >= 0 && rank < static_cast<int>(names.size()) ? names[rank] : std::string();
  }
  std::string Describe(const NodeInfo& n) const {
    std::string s = n.name.empty() ? std::string(NodeRoleName(n.role)) : n.name;
    s += " (" + std::string(NodeRoleName(n.role)) + " rank " + std::to_string(n.rank);
    if (!n.party.empty()) s += ", party " + n.party;
    return s + ")";
  }

  void SendTo(int id, Command cmd, bool request, int64_t ts, std::string body, Status status = Status::Ok()) {
    Message m;
    m.meta.command = cmd;
    m.meta.sender = kSchedulerId;
    m.meta.recipient = id;
    m.meta.request = request;
    m.meta.timestamp = ts;
    m.meta.status_code = static_cast<int32_t>(status.code());
    m.meta.body = status.ok() ? std::move(body) : status.message();
    Result<size_t> sent = van_->Send(id, m);
    if (!sent.ok()) {
      GEOMX_LOG(kWarning) << Prefix() << ": scheduler could not send to node " << id << ": "
                          << sent.status().ToString();
    }
  }

  void Finish(Status status) {
    result_ = std::move(status);
    finish_at_ = Clock::now() + std::chrono::milliseconds(GraceMs(spec_.options));
  }

  void Fail(const Status& status, int except_id = -1) {
    GEOMX_LOG(kError) << status.message();
    for (const auto& [id, m] : members_) {
      if (id != except_id) SendTo(id, Command::kError, false, -1, "", status);
    }
    Finish(status);
  }

  void Handle(Message&& msg) {
    const Meta& meta = msg.meta;
    if (meta.command == Command::kRegister) return HandleRegister(msg);
    auto it = members_.find(meta.sender);
    if (it == members_.end()) {
      GEOMX_LOG(kWarning) << Prefix() << ": scheduler dropped " << CommandName(meta.command)
                          << " from unknown node " << meta.sender;
      return;
    }
    if (!FromNamedNode(msg, it->second.info.name)) return;
    Member& m = it->second;
    if (meta.command == Command::kNodeJoined && !meta.request) return HandleJoinAck(meta);
    if (m.lost) {  // declared lost, yet talking (a frozen process that resumed): it must stop
      if (meta.request) {
        SendTo(meta.sender, Command::kError, false, -1, "",
               Status::Unavailable(Prefix() + ": " + m.info.name + " was declared lost and the tier went on "
                                   "without it"));
      }
      return;
    }
    m.last_seen = Clock::now();
    switch (meta.command) {
      case Command::kHeartbeat:
        if (meta.request) SendTo(meta.sender, Command::kHeartbeat, false, meta.timestamp, "");
        return;
      case Command::kBarrier: return HandleBarrier(meta);
      case Command::kShutdown: return HandleShutdown(m, meta);
      default:
        GEOMX_LOG(kWarning) << Prefix() << ": scheduler dropped unexpected " << CommandName(meta.command)
                            << " from " << m.info.name;
    }
  }

  // With an authenticating Van: whether `msg` was sent with the key of the node called `name`; logs and counts
  // it if not.
  bool FromNamedNode(const Message& msg, const std::string& name) {
    if (!van_->authenticates() || msg.peer == MemberOf(name)) return true;
    ++*rejected_;
    GEOMX_LOG(kWarning) << Prefix() << ": scheduler dropped " << CommandName(msg.meta.command) << " in the name of "
                        << (name.empty() ? std::string("a node without a name") : name)
                        << " but sent with the key of " << (msg.peer.empty() ? std::string("nobody") : msg.peer);
    return false;
  }

  void Refuse(const NodeInfo& node, const Status& why) {
    GEOMX_LOG(kWarning) << why.message();
    const int id = next_refused_id_++;
    Status c = van_->Connect(id, node.endpoint, LinkClass::kLan, node.name);
    if (!c.ok()) {
      GEOMX_LOG(kWarning) << Prefix() << ": cannot reach refused node at " << node.endpoint << ": " << c.ToString();
      return;
    }
    SendTo(id, Command::kError, false, -1, "", why);
  }

  void HandleRegister(const Message& msg) {
    Result<RegisterRequest> req = DecodeRegisterRequest(msg.meta.body);
    if (!req.ok()) {
      GEOMX_LOG(kWarning) << Prefix() << ": scheduler dropped a registration: " << req.status().ToString();
      return;
    }
    NodeInfo node = req->node;
    if (node.endpoint.empty()) {
      GEOMX_LOG(kWarning) << Prefix() << ": scheduler dropped a registration without an endpoint";
      return;
    }
    if (!FromNamedNode(msg, node.name)) return;  // an impostor gets no answer
    const std::string who = (node.name.empty() ? std::string(NodeRoleName(node.role)) : node.name) + " (" +
                            node.endpoint + ")";
    // A retry from a node we already know: answer again, change nothing.
    for (const NodeInfo& a : anonymous_) {
      if (a.endpoint == node.endpoint) return;
    }
    for (auto& [id, m] : members_) {
      if (m.info.endpoint != node.endpoint) continue;
      if (m.info.role == node.role && (node.rank == -1 || node.rank == m.info.rank)) {
        // The same endpoint again: a retry, or a restarted process on a fixed port (it is lost, or it had
        // passed a barrier, which a retrying first registration cannot have).
        if (complete_ && !result_.has_value() && spec_.options.admit_rejoins && node.role == NodeRole::kWorker &&
            !m.joining && node.name == m.info.name && (m.lost || !m.barriers_entered.empty())) {
          return Rejoin(node, m);
        }
        if (complete_ && !m.joining) SendTo(id, Command::kNodeTable, false, 0, EncodeNodeTable(table_));
        return;
      }
      return Refuse(node, Status::AlreadyExists(Prefix() + ": " + who + " is already registered as " +
                                                Describe(m.info)));
    }
    if (req->tier != spec_.name) {
      return Refuse(node, Status::InvalidArgument(Prefix() + ": " + who + " wants to join tier '" + req->tier +
                                                  "', this scheduler serves tier '" + spec_.name + "'"));
    }
    if (req->num_servers != spec_.num_servers || req->num_workers != spec_.num_workers) {
      return Refuse(node, Status::InvalidArgument(
                              Prefix() + ": " + who + " expects " + std::to_string(req->num_servers) +
                              " servers and " + std::to_string(req->num_workers) + " workers, the scheduler " +
                              std::to_string(spec_.num_servers) + " and " + std::to_string(spec_.num_workers)));
    }
    if (node.role == NodeRole::kScheduler) {
      return Refuse(node, Status::InvalidArgument(Prefix() + ": " + who + " registers as a scheduler"));
    }
    const int count = Count(node.role);
    const char* role = NodeRoleName(node.role);
    if (node.rank < -1 || node.rank >= count) {
      return Refuse(node, Status::InvalidArgument(Prefix() + ": " + who + " asks for " + role + " rank " +
                                                  std::to_string(node.rank) + ", valid ranks are 0.." +
                                                  std::to_string(count - 1)));
    }
    if (complete_ && result_.has_value()) {
      return Refuse(node, Status::FailedPrecondition(Prefix() + ": " + who + " registered after the tier " +
                                                     (result_->ok() ? "finished" : "failed")));
    }
    if (complete_) {
      auto held = node.rank >= 0 ? members_.find(TierNodeId(node.role, node.rank, spec_.num_servers))
                                 : members_.end();
      if (spec_.options.admit_rejoins && node.role == NodeRole::kWorker && held != members_.end() &&
          held->second.info.name == node.name) {
        return Rejoin(node, held->second);
      }
      std::string why = Prefix() + ": " + who + " registered after the tier was complete (" +
                        std::to_string(total()) + " nodes)";
      if (!spec_.options.admit_rejoins) {
        why += "; a restarted worker can rejoin a running job only with topology.failure_policy continue or wait";
      } else if (node.role != NodeRole::kWorker || node.rank < 0) {
        why += "; only a worker started again with its rank (--rank) can rejoin";
      } else {
        why += "; rank " + std::to_string(node.rank) + " belongs to " + held->second.info.name + ", not " + who;
      }
      return Refuse(node, Status::FailedPrecondition(why));
    }
    if (node.rank >= 0 && members_.count(TierNodeId(node.role, node.rank, spec_.num_servers))) {
      const NodeInfo& holder = members_.at(TierNodeId(node.role, node.rank, spec_.num_servers)).info;
      return Refuse(node, Status::AlreadyExists(Prefix() + ": " + who + " asks for " + role + " rank " +
                                                std::to_string(node.rank) + ", already taken by " + holder.name +
                                                " (" + holder.endpoint + ")"));
    }
    if (Registered(node.role) >= count) {
      return Refuse(node, Status::AlreadyExists(Prefix() + ": " + who + " finds no free " + role + " rank: " +
                                                std::to_string(count) + " " + role + "s registered already (" +
                                                std::to_string(Anonymous(node.role)) + " without a rank)"));
    }
    if (node.rank == -1) {
      // Ranks for "any rank" nodes are handed out when the tier is complete, so they never take a rank that a
      // node asking for it explicitly will claim later.
      anonymous_.push_back(node);
    } else if (!Admit(node)) {
      return;
    }
    if (static_cast<int>(members_.size() + anonymous_.size()) == total()) Complete();
  }

  // A worker process started again for `m`'s rank while the tier runs (CommOptions::admit_rejoins): it takes
  // the place of the old process, lost or not (a process that registers again was restarted). Every other member
  // connects to its new endpoint (kNodeJoined, acknowledged) before it gets its node table, so nobody answers it
  // at the old address; its barriers catch up with the ones the tier passed.
  void Rejoin(NodeInfo node, Member& m) {
    node.id = m.info.id;
    node.rank = m.info.rank;
    const bool wan = !spec_.scheduler_party.empty() && node.party != spec_.scheduler_party;
    Status c = van_->Connect(node.id, node.endpoint, wan ? LinkClass::kWan : LinkClass::kLan, node.name);
    if (!c.ok()) {
      GEOMX_LOG(kWarning) << Prefix() << ": cannot connect to rejoining " << node.name << " at " << node.endpoint
                          << ": " << c.ToString();
      return;
    }
    GEOMX_LOG(kWarning) << Prefix() << ": " << Describe(node) << " rejoins from " << node.endpoint
                        << (m.lost ? "" : " (its previous process at " + m.info.endpoint + " is replaced)");
    m.info.endpoint = node.endpoint;
    for (NodeInfo& t : table_) {
      if (t.id == node.id) t.endpoint = node.endpoint;
    }
    m.lost = false;
    m.finalized = false;
    m.last_seen = Clock::now();
    m.released_barrier_ts.clear();
    m.barriers_entered.clear();
    for (auto& [group, arrived] : barriers_) arrived.erase(node.id);
    m.joining = false;
    m.awaiting.clear();
    // Other workers rejoining at the same time (a host with several workers restarted) do not wait for this
    // process's acknowledgement (it gets the table, with their new endpoints, itself), nor it for theirs: a node
    // without its table cannot acknowledge, and each would wait for the other for ever.
    ForgetAcks(node.id);
    m.joining = true;
    m.join_ts = ++next_join_ts_;
    const std::string body = EncodeFields({{"node", std::to_string(node.id)}, {"endpoint", node.endpoint}});
    for (const auto& [id, other] : members_) {
      if (id == node.id || other.lost || other.joining) continue;
      m.awaiting.insert(id);
      SendTo(id, Command::kNodeJoined, true, m.join_ts, body);
    }
    if (m.awaiting.empty()) FinishJoin(m);
  }

  void HandleJoinAck(const Meta& meta) {
    for (auto& [id, m] : members_) {
      if (m.joining && m.join_ts == meta.timestamp && m.awaiting.erase(meta.sender) && m.awaiting.empty()) {
        FinishJoin(m);
      }
    }
  }

  // Everybody reaches the rejoined node: it gets the node table (timestamp kRejoinTable: it joins a running tier).
  void FinishJoin(Member& m) {
    m.joining = false;
    SendTo(m.info.id, Command::kNodeTable, false, kRejoinTable, EncodeNodeTable(table_));
    GEOMX_LOG(kInfo) << Prefix() << ": " << m.info.name << " rejoined the tier";
  }

  // `gone` will not acknowledge a rejoin: stop waiting for it.
  void ForgetAcks(int gone) {
    for (auto& [id, m] : members_) {
      if (m.joining && m.awaiting.erase(gone) && m.awaiting.empty()) FinishJoin(m);
    }
  }

  int Count(NodeRole role) const { return role == NodeRole::kServer ? spec_.num_servers : spec_.num_workers; }
  int Anonymous(NodeRole role) const {
    int n = 0;
    for (const NodeInfo& a : anonymous_) n += a.role == role ? 1 : 0;
    return n;
  }
  int Registered(NodeRole role) const {
    int n = Anonymous(role);
    for (const auto& [id, m] : members_) n += m.info.role == role ? 1 : 0;
    return n;
  }

  // Gives `node` (with its rank) its id and a channel; false when the Van cannot reach it.
  bool Admit(NodeInfo node) {
    node.id = TierNodeId(node.role, node.rank, spec_.num_servers);
    const bool wan = !spec_.scheduler_party.empty() && node.party != spec_.scheduler_party;
    Status c = van_->Connect(node.id, node.endpoint, wan ? LinkClass::kWan : LinkClass::kLan, node.name);
    if (!c.ok()) {
      GEOMX_LOG(kWarning) << Prefix() << ": cannot connect to " << node.name << " at " << node.endpoint << ": "
                          << c.ToString();
      return false;
    }
    GEOMX_LOG(kDebug) << Prefix() << ": registered " << Describe(node) << " as node " << node.id;
    members_[node.id] = Member{node, Clock::now(), false, {}};
    return true;
  }

  // The free ranks of `role`, lowest first.
  std::vector<int> FreeRanks(NodeRole role) const {
    std::vector<int> free;
    for (int r = 0; r < Count(role); ++r) {
      if (!members_.count(TierNodeId(role, r, spec_.num_servers))) free.push_back(r);
    }
    return free;
  }

  void Complete() {
    // "Any rank" nodes take the free ranks in (name, endpoint) order: deterministic, unlike arrival order.
    std::sort(anonymous_.begin(), anonymous_.end(), [](const NodeInfo& a, const NodeInfo& b) {
      return std::tie(a.name, a.endpoint) < std::tie(b.name, b.endpoint);
    });
    for (NodeRole role : {NodeRole::kServer, NodeRole::kWorker}) {
      std::vector<int> free = FreeRanks(role);
      size_t next = 0;
      for (NodeInfo& a : anonymous_) {
        if (a.role != role) continue;
        a.rank = free[next++];
        if (!Admit(a)) {
          Fail(Status::Unavailable(Prefix() + ": cannot reach " + a.name + " at " + a.endpoint));
          return;
        }
      }
    }
    anonymous_.clear();
    complete_ = true;
    NodeInfo self;
    self.id = kSchedulerId;
    self.role = NodeRole::kScheduler;
    self.rank = 0;
    self.name = SchedulerName(spec_);
    self.party = spec_.scheduler_party;
    self.endpoint = endpoint_;
    table_.push_back(self);
    for (auto& [id, m] : members_) {
      m.last_seen = Clock::now();  // heartbeats are watched from now on
      table_.push_back(m.info);
    }
    const std::string body = EncodeNodeTable(table_);
    for (const auto& [id, m] : members_) SendTo(id, Command::kNodeTable, false, 0, body);
    GEOMX_LOG(kInfo) << Prefix() << ": all " << total() << " nodes registered";
  }

  bool InGroup(const std::string& group, const NodeInfo& n) const {
    return group == "all" || (group == "servers" && n.role == NodeRole::kServer) ||
           (group == "workers" && n.role == NodeRole::kWorker);
  }

  void HandleBarrier(const Meta& meta) {
    const std::string& group = meta.body;
    const NodeInfo& who = members_.at(meta.sender).info;
    if (group != "all" && group != "servers" && group != "workers") {
      return SendTo(meta.sender, Command::kBarrierDone, false, meta.timestamp, "",
                    Status::InvalidArgument(Prefix() + ": unknown barrier group '" + group +
                                            "' (all, servers, workers)"));
    }
    if (!InGroup(group, who)) {
      return SendTo(meta.sender, Command::kBarrierDone, false, meta.timestamp, "",
                    Status::InvalidArgument(Prefix() + ": " + who.name + " is not in barrier group '" + group + "'"));
    }
    Member& m = members_.at(meta.sender);
    auto& released = m.released_barrier_ts;
    if (released.count(group) && meta.timestamp <= released[group]) return;  // a duplicate delivery
    auto& arrived = barriers_[group];
    auto a = arrived.find(meta.sender);
    if (a != arrived.end() && a->second == meta.timestamp) return;  // a duplicate of a barrier still open
    // A rejoined process enters the barriers the tier passed before it came back: they are released at once.
    if (m.barriers_entered[group]++ < barriers_released_[group]) {
      released[group] = meta.timestamp;
      return SendTo(meta.sender, Command::kBarrierDone, false, meta.timestamp, group);
    }
    arrived[meta.sender] = meta.timestamp;
    TryReleaseBarrier(group);
  }

  // Releases `group`'s barrier when every member of it that is not lost has arrived.
  void TryReleaseBarrier(const std::string& group) {
    auto& arrived = barriers_[group];
    int size = 0, present = 0;
    for (const auto& [id, m] : members_) {
      if (m.lost || !InGroup(group, m.info)) continue;
      ++size;
      present += arrived.count(id) ? 1 : 0;
    }
    if (arrived.empty() || present < size) return;
    ++barriers_released_[group];
    for (const auto& [id, ts] : arrived) {
      if (members_.at(id).lost) continue;
      members_.at(id).released_barrier_ts[group] = ts;
      SendTo(id, Command::kBarrierDone, false, ts, group);
    }
    arrived.clear();
  }

  void HandleShutdown(Member& m, const Meta& meta) {
    if (!meta.request) return;
    if (meta.status_code != 0) return HandleLeave(m, meta);
    m.finalized = true;
    if (result_.has_value()) {  // released already: a retry that missed the answer
      if (result_->ok()) SendTo(meta.sender, Command::kShutdown, false, meta.timestamp, "");
      return;
    }
    TryRelease();
  }

  // Every member that is not lost said goodbye: release them all.
  void TryRelease() {
    if (!complete_ || result_.has_value()) return;
    for (const auto& [id, other] : members_) {
      if (!other.finalized && !other.lost) return;
    }
    for (const auto& [id, other] : members_) {
      if (!other.lost) SendTo(id, Command::kShutdown, false, 0, "");
    }
    GEOMX_LOG(kInfo) << Prefix() << ": all nodes finalized";
    Finish(Status::Ok());
  }

  // A node is gone (dead, or left with `why`): with continue_without_lost_workers and a worker that is not the
  // last one, the tier goes on without it (kNodeLeft to every member, which drops it from what it waits for);
  // with wait_for_lost_workers, a worker is waited for (kNodeLeft with "wait": nobody drops it) until it rejoins
  // or rejoin_timeout_ms passed; otherwise the tier fails. `except_id` is not told of a failure (it cannot hear
  // it).
  void LoseOrFail(int id, const Status& why, int except_id) {
    Member& m = members_.at(id);
    int workers_left = 0;
    for (const auto& [other_id, other] : members_) {
      workers_left += other.info.role == NodeRole::kWorker && !other.lost && other_id != id ? 1 : 0;
    }
    const CommOptions& o = spec_.options;
    const bool wait = o.wait_for_lost_workers;
    if (m.info.role != NodeRole::kWorker || (!wait && !o.continue_without_lost_workers) ||
        (!wait && workers_left < std::max(1, spec_.min_workers_left))) {
      return Fail(why, except_id);
    }
    m.lost = true;
    m.joining = false;
    m.lost_at = Clock::now();
    ForgetAcks(id);
    if (wait) {
      GEOMX_LOG(kWarning) << why.message() << "; the tier waits up to " << Seconds(o.rejoin_timeout_ms)
                          << " for it to rejoin (topology.failure_policy: wait)";
    } else {
      GEOMX_LOG(kWarning) << why.message() << "; the tier goes on with its " << workers_left
                          << " other workers (topology.failure_policy: continue)";
    }
    std::map<std::string, std::string> fields = {{"node", std::to_string(id)}, {"why", why.message()}};
    if (wait) fields["wait"] = "1";
    const std::string body = EncodeFields(fields);
    for (const auto& [other_id, other] : members_) {
      if (!other.lost) SendTo(other_id, Command::kNodeLeft, false, -1, body);
    }
    if (id != except_id) SendTo(id, Command::kError, false, -1, "", why);  // a leaving node's answer
    for (const auto& [group, arrived] : barriers_) {
      (void)arrived;
      TryReleaseBarrier(group);
    }
    TryRelease();
  }

  // A node leaves before the end, saying why: the tier fails now, naming it, for every member (the leaving node
  // included: that is its answer).
  void HandleLeave(Member& m, const Meta& meta) {
    if (result_.has_value()) return;
    constexpr size_t kMaxReason = 4096;
    const std::string why = meta.body.size() > kMaxReason ? meta.body.substr(0, kMaxReason) + "..." : meta.body;
    // kUnavailable whatever the node's own error was: for everybody else it is a peer that went away.
    LoseOrFail(m.info.id,
               Status::Unavailable(Prefix() + ": " + Describe(m.info) + " at " + m.info.endpoint +
                                   " left the job: " + (why.empty() ? std::string("no reason given") : why)),
               -1);
  }

  void CheckTimers() {
    const auto now = Clock::now();
    const CommOptions& o = spec_.options;
    if (!complete_) {
      if (o.rendezvous_timeout_ms > 0 && now - start_ >= std::chrono::milliseconds(o.rendezvous_timeout_ms)) {
        Fail(Status::DeadlineExceeded(RendezvousTimeoutMessage()));
      }
      return;
    }
    if (o.wait_for_lost_workers) {
      for (const auto& [id, m] : members_) {
        if (!m.lost || now - m.lost_at < std::chrono::milliseconds(o.rejoin_timeout_ms)) continue;
        return Fail(Status::Unavailable(Prefix() + ": " + Describe(m.info) + " was lost and did not rejoin within " +
                                        Seconds(o.rejoin_timeout_ms) + " (topology.failure_policy: wait)"));
      }
    }
    if (o.heartbeat_interval_ms <= 0 || o.heartbeat_timeout_ms <= 0) return;
    for (const auto& [id, m] : members_) {
      // Finalized nodes too: servers and the master worker finalize right after the start and serve until the end.
      if (m.lost || now - m.last_seen < std::chrono::milliseconds(o.heartbeat_timeout_ms)) continue;
      const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - m.last_seen).count();
      return LoseOrFail(id, Status::Unavailable(Prefix() + ": node " + Describe(m.info) + " at " + m.info.endpoint +
                                      " sent nothing for " + Seconds(silent) + " (last heard " + Seconds(silent) +
                                      " ago, heartbeat timeout " +
                                      Seconds(o.heartbeat_timeout_ms) + "): declared dead"),
                  id);
    }
  }

  std::string RendezvousTimeoutMessage() const {
    std::string missing;
    int n_missing = 0;
    for (NodeRole role : {NodeRole::kServer, NodeRole::kWorker}) {
      const std::vector<int> free = FreeRanks(role);
      // The lowest free ranks are promised to the nodes that registered without a rank.
      for (size_t i = static_cast<size_t>(Anonymous(role)); i < free.size(); ++i) {
        const int r = free[i];
        if (++n_missing > 8) continue;
        if (!missing.empty()) missing += ", ";
        missing += std::string(NodeRoleName(role)) + " rank " + std::to_string(r);
        const std::string name = ExpectedName(role, r);
        if (!name.empty()) missing += " (" + name + ")";
      }
    }
    if (n_missing > 8) missing += " and " + std::to_string(n_missing - 8) + " more";
    return Prefix() + ": rendezvous timed out after " + Seconds(spec_.options.rendezvous_timeout_ms) +
           ": missing " + missing + ", " + std::to_string(members_.size() + anonymous_.size()) + " of " +
           std::to_string(total()) +
           " nodes registered";
  }

  const TierSpec& spec_;
  Van* const van_;
  const std::string endpoint_;
  const std::atomic<bool>* stop_;
  std::atomic<uint64_t>* rejected_;  // Scheduler::rejected_
  const Clock::time_point start_;
  std::map<int, Member> members_;   // nodes with a rank (and so an id)
  std::vector<NodeInfo> anonymous_; // nodes that asked for any rank, until the tier is complete
  std::vector<NodeInfo> table_;
  bool complete_ = false;
  std::map<std::string, std::map<int, int64_t>> barriers_;  // group -> node id -> barrier ts
  std::map<std::string, int64_t> barriers_released_;        // group -> barriers released so far
  int64_t next_join_ts_ = 0;
  int next_refused_id_ = kFirstRefusedId;
  std::optional<Status> result_;
  Clock::time_point finish_at_;
};

Scheduler::Scheduler(TierSpec spec, Van* van) : spec_(std::move(spec)), van_(van) {}

Scheduler::~Scheduler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

Status Scheduler::Run(const std::string& bind_address) {
  GEOMX_ASSIGN_OR_RETURN(std::string endpoint, van_->Bind(bind_address));
  Loop loop(spec_, van_, endpoint, &stop_, &rejected_);
  return loop.Serve();
}

Result<std::string> Scheduler::Start(const std::string& bind_address) {
  if (thread_.joinable()) return Status::FailedPrecondition("tier " + spec_.name + ": scheduler already started");
  GEOMX_ASSIGN_OR_RETURN(std::string endpoint, van_->Bind(bind_address));
  thread_ = std::thread([this, endpoint] {
    Loop loop(spec_, van_, endpoint, &stop_, &rejected_);
    thread_status_ = loop.Serve();
  });
  return endpoint;
}

Status Scheduler::Wait() {
  if (!thread_.joinable()) return Status::FailedPrecondition("tier " + spec_.name + ": scheduler not started");
  thread_.join();
  return thread_status_;
}

}  // namespace geomx::comm
