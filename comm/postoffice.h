// Postoffice: one tier's membership, seen from one node. An object, never a singleton (style R9): a local server
// owns two, one per tier (its data centre's, as a server; the global tier's, as a worker), each with its own Van.
//
//   LoopbackVan van(&net);
//   Postoffice po(spec, NodeInfo{.role = NodeRole::kWorker, .rank = 1, .name = "dc-a/worker1", .party = "dc-a"},
//                 &van);
//   GEOMX_RETURN_IF_ERROR(po.Start("loop://dc-a/worker1"));   // bind, register, wait for the node table
//   KvWorker kv(&po, /*app_id=*/0, layout);                  // register customers, then barrier
//   GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
//   ...
//   GEOMX_RETURN_IF_ERROR(po.Finalize());                    // every node says goodbye; the scheduler releases
//
// Threads: Start() launches a receive thread (dispatches every message: scheduler replies, and data messages to
// the customer registered for Meta.app_id) and a ticker thread (heartbeats, scheduler liveness, request
// timeouts). Both stop in Finalize() or the destructor.
//
// Errors: the first fatal error of the tier (the scheduler reports a dead node or a failed rendezvous, the
// scheduler itself goes silent) becomes health(); every blocked call (Barrier, Finalize, Customer::Wait of every
// attached Customer) returns it promptly. Malformed, wrong-version, unknown-command or unknown-sender messages are
// logged and dropped.
//
// Identity: with an authenticating Van (ZmqVan with CURVE, Van::authenticates), a message is taken only from the
// key of the node it claims to come from: Message::peer must be the member (MemberOf) of the node the table lists
// for meta.sender, or SchedulerName(spec) for sender 0. Any other message is logged, counted (rejected_messages)
// and dropped, so one member of the job cannot speak for another (a forged kError "from the scheduler", a push
// under another worker's id).
//
// Ownership: borrows the Van (must outlive the Postoffice) and attached Customers (must be detached before they
// die). Thread-safe after construction; accessors of the node table are valid after Start() returned OK.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "comm/message.h"
#include "comm/node.h"
#include "comm/van.h"
#include "engine/base/status.h"

namespace geomx::comm {

class Customer;

class Postoffice {
 public:
  // Called on the receive thread with every data message (kPush/kPull/kPushPull/kControl, requests and responses)
  // whose Meta.app_id matches.
  using Handler = std::function<void(Message&&)>;

  // `self`: role, requested rank (-1 = any free rank), name and party; id and endpoint are filled by Start().
  Postoffice(TierSpec spec, NodeInfo self, Van* van);
  // Stops the threads. A node that started and was neither released by the scheduler nor told of a failure
  // leaves first (Leave with "stopped before the end of the job"), so its tier hears of it at once.
  ~Postoffice();

  Postoffice(const Postoffice&) = delete;
  Postoffice& operator=(const Postoffice&) = delete;

  // Binds `bind_address`, registers with the scheduler and waits (at most rendezvous_timeout_ms, plus a grace
  // period to let the scheduler name the missing nodes) for the node table; then connects to every peer
  // (LinkClass::kWan when the peer's party differs from ours) and starts heartbeats. Errors: the scheduler's
  // refusal (rank clash, count mismatch, ...) or rendezvous timeout, verbatim; kDeadlineExceeded if the scheduler
  // never answered. Call once.
  Status Start(const std::string& bind_address);

  // Blocks until every member of `group` ("all" = servers and workers, "servers", "workers") has entered the same
  // barrier. kDeadlineExceeded after request_timeout_ms; health() when the tier failed.
  Status Barrier(const std::string& group);

  // Tells the scheduler this node is done and waits until every node is (or the tier failed, or
  // request_timeout_ms passed); then stops the threads. Idempotent once it returned OK or a tier failure. After
  // kDeadlineExceeded (a healthy tier whose other nodes are still working: a long training run) the threads keep
  // serving and Finalize() may be called again to wait longer.
  Status Finalize();

  // Leaves the job early because of `why`: tells the scheduler (a kShutdown request carrying why's code and
  // message), which fails the tier at once, naming this node and `why`, for every member, so nobody waits for a
  // heartbeat timeout. Waits briefly (at most 1 s) for the scheduler's answer, then `why` (or the scheduler's
  // wording of it) is health(). No-op before Start, once the tier failed, or once the scheduler released this
  // node. Threads keep running (the destructor stops them). Callable from any thread except this Postoffice's
  // own handlers and failure callback.
  void Leave(const Status& why);

  // Called once, on the thread that noticed it, with the first fatal error of the tier (health() already returns
  // it). Carries a failure from one tier to another (a local server leaves its data centre's tier when the global
  // tier failed). Replacing or clearing it waits for a call in progress, so whatever the old callback touches
  // may be destroyed once this returns.
  void SetFailureCallback(std::function<void(const Status&)> callback);

  // Called on the receive thread when the scheduler drops a lost worker and the tier goes on without it
  // (CommOptions::continue_without_lost_workers; kNodeLeft): its node id and why. Servers use it to stop waiting
  // for that worker's pushes. Not called under wait_for_lost_workers (the worker is waited for). A worker that
  // rejoins later (kNodeJoined) is reconnected here; its servers learn it from the worker itself (its first
  // requests). Replacing or clearing it waits for a call in progress.
  void SetNodeLeftCallback(std::function<void(int node_id, const std::string& why)> callback);

  // Sends `msg` to `node_id` (sender and version are filled in). kFailedPrecondition before Start; kNotFound for
  // an unknown node; the Van's error otherwise. Callable from any thread, including handlers.
  Status Send(int node_id, Message msg);
  // As Send, as a datagram that may be lost (Van::SendDatagram).
  Status SendDatagram(int node_id, Message msg);
  // As Send, on the van's priority channel `channel` >= 1 (Van::SendOnChannel).
  Status SendOnChannel(int node_id, Message msg, int channel);

  // Customer dispatch. Register before Start() or before the barrier that lets peers talk to you; messages for
  // an app with no handler are logged and dropped. Unregister waits for a running handler to return, so it must
  // not be called from a handler of this Postoffice.
  void RegisterCustomer(int app_id, Handler handler);
  void UnregisterCustomer(int app_id);

  // Customers whose requests must time out (ExpireOverdue on the ticker) and fail with health(). Borrowed.
  void AttachTracker(Customer* customer);
  void DetachTracker(Customer* customer);

  // OK, or the first fatal error of the tier.
  Status health() const;

  // Accessors (valid after Start).
  const TierSpec& spec() const { return spec_; }
  const NodeInfo& self() const { return self_; }
  int my_id() const { return self_.id; }
  int my_rank() const { return self_.rank; }
  // Whether this node joined a tier that was already running (a restarted worker; comm/scheduler.h "rejoin"):
  // the tier's earlier barriers are behind it and the servers are past round 0.
  bool rejoined() const { return rejoined_; }
  NodeRole role() const { return self_.role; }
  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  std::vector<int> ServerIds() const;  // rank order
  std::vector<int> WorkerIds() const;  // rank order
  // The node with this id, or null.
  const NodeInfo* FindNode(int id) const;
  // "server dc-a/server1" (or "node 7" when unknown), for messages.
  std::string Describe(int id) const;

  // Messages dropped because their authenticated sender was not the node they claimed to come from.
  uint64_t rejected_messages() const { return rejected_; }

  // Test seam: declares the tier failed as if the scheduler had said so.
  void FailForTesting(const Status& status) { SetFatal(status); }

 private:
  using Clock = std::chrono::steady_clock;

  void ReceiveLoop();
  void TickerLoop();
  void HandleMessage(Message&& msg);
  void HandleSchedulerMessage(Message&& msg);
  // With an authenticating Van: whether `msg` comes from the key of the node it claims; counts and logs it if not.
  bool FromClaimedSender(const Message& msg);
  void HandleNodeTable(const Message& msg);
  // kNodeJoined from the scheduler: connect to the rejoined worker's new endpoint, then acknowledge.
  void HandleNodeJoined(const Meta& meta);
  void DispatchData(Message&& msg);
  void SetFatal(const Status& status);
  Status SendToScheduler(Command cmd, int64_t ts, std::string body);
  // channel: 0 = Send, -1 = SendDatagram, >= 1 = SendOnChannel.
  Status SendVia(int node_id, Message msg, int channel);
  // Waits on cv_ until `done()` (mu_ held), the tier failed, or `deadline`.
  template <typename Pred>
  bool WaitFor(std::unique_lock<std::mutex>& lock, Pred done, Clock::time_point deadline);
  void StopThreads();

  const TierSpec spec_;
  NodeInfo self_;                // id/rank/endpoint written during Start, before have_table_ is published
  Van* const van_;               // borrowed
  std::vector<NodeInfo> nodes_;  // written once by the receive thread before have_table_ flips; then immutable

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool have_table_ = false;                    // GUARDED_BY(mu_)
  bool rejoined_ = false;                      // written with the node table, before Start returns
  Status start_error_;                         // GUARDED_BY(mu_): refusal from the scheduler during Start
  Status fatal_;                               // GUARDED_BY(mu_): health()
  std::map<int64_t, Status> barrier_done_;     // GUARDED_BY(mu_): barrier ts -> the scheduler's answer
  std::set<int64_t> barrier_waiting_;          // GUARDED_BY(mu_): barriers entered, not yet answered
  int64_t next_barrier_ts_ = 0;                // GUARDED_BY(mu_)
  bool shutdown_released_ = false;             // GUARDED_BY(mu_)
  bool finalized_ = false;                     // GUARDED_BY(mu_)
  Clock::time_point last_scheduler_contact_;   // GUARDED_BY(mu_)

  // Held while trackers are called (Fail, ExpireOverdue), so Detach waits for a call in progress.
  std::mutex trackers_mu_;
  std::set<Customer*> trackers_;               // GUARDED_BY(trackers_mu_)

  std::mutex callback_mu_;                     // held while failure_callback_ runs
  std::function<void(const Status&)> failure_callback_;  // GUARDED_BY(callback_mu_)
  std::function<void(int, const std::string&)> node_left_callback_;  // GUARDED_BY(callback_mu_)

  std::mutex dispatch_mu_;                     // held while a customer handler runs
  std::map<int, std::shared_ptr<Handler>> handlers_;  // GUARDED_BY(dispatch_mu_)

  std::vector<Message> early_;   // receive thread only: data that arrived before our node table
  std::atomic<uint64_t> rejected_{0};

  std::atomic<bool> started_{false};
  std::atomic<bool> stop_{false};
  std::thread receiver_;
  std::thread ticker_;
};

}  // namespace geomx::comm
