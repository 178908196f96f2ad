// Scheduler: the rendezvous server of one tier (its node id is 0).
//
//   Scheduler sched(spec, &van);
//   Status s = sched.Run("loop://dc-a/scheduler");   // blocks until every node finalized, or the tier failed
// or, in tests, on its own thread:
//   GEOMX_ASSIGN_OR_RETURN(std::string ep, sched.Start("tcp://127.0.0.1:0"));  ...  Status s = sched.Wait();
//
// Protocol (all over the Van; comm/wire_format.h):
//   * kRegister: a node sends its NodeInfo and its view of the tier. Refused with a kError response naming the
//     reason (the node's Start returns it) when: the tier name or the server/worker counts differ, the role is
//     the scheduler's, the rank is out of range, the rank is taken by another endpoint, or no rank of the role is
//     left. Nodes asking for rank -1 get the ranks nobody claimed when the tier is complete, in (name, endpoint)
//     order (deterministic). Ids: servers 1..S, workers S+1..S+W (TierNodeId). Registering again from the same
//     endpoint is harmless (retries).
//   * when all S+W nodes registered: kNodeTable to every node. If that does not happen within
//     rendezvous_timeout_ms the tier fails: every registered node gets a kError and Run returns kDeadlineExceeded,
//     both naming what is missing ("tier dc-a: rendezvous timed out after 60 s: missing worker rank 1, 2 of 3
//     nodes registered").
//   * kBarrier (body: "all" | "servers" | "workers"): released with kBarrierDone to every member once all
//     members arrived; an unknown group or a non-member is answered with an error kBarrierDone.
//   * kHeartbeat: every message from a node proves it alive; heartbeats are answered (the nodes watch the
//     scheduler too). A node silent for heartbeat_timeout_ms (when heartbeat_interval_ms > 0) is declared dead:
//     every other node gets a kError naming it (name, role, rank, party, endpoint, how long silent) and Run
//     returns kUnavailable. Finalized nodes are watched too: servers finalize right after the start and serve on.
//   * kShutdown: a node is done; when all are, every node gets the kShutdown response and Run returns OK.
//     With a status code != 0 the node leaves early (Postoffice::Leave, body = why): the tier fails at once,
//     every member (the leaving one too) gets a kError naming it and why, and Run returns kUnavailable.
//   * lost workers (CommOptions): with continue_without_lost_workers a dead or leaving worker is dropped
//     (kNodeLeft to every member, barriers and goodbyes stop waiting for it); with wait_for_lost_workers it is
//     waited for (kNodeLeft with field "wait"; servers keep expecting its pushes) and the tier fails when it has
//     not rejoined within rejoin_timeout_ms; otherwise the tier fails.
//   * rejoin (CommOptions::admit_rejoins): a worker that registers for its rank after the tier is complete (a
//     process started again, with a new endpoint or on the same fixed port) replaces the old process, lost or not:
//     every other member gets a kNodeJoined request (fields node, endpoint), connects to the new endpoint and
//     acknowledges; then the worker gets the node table with timestamp kRejoinTable. Its barrier entries catch up
//     (the barriers the tier passed are released for it at once). Without admit_rejoins, or for a server or a
//     rank -1 node, a late registration is refused, saying why.
// Malformed messages and messages from unknown senders are logged and dropped.
// With an authenticating Van (ZmqVan with CURVE, Van::authenticates) a node is the key it holds: a kRegister whose
// node name's member (MemberOf) is not the sender's authenticated member (Message::peer) is refused without an
// answer, and any other message is taken only from the member of the node its meta.sender names; both are logged
// and counted (rejected_messages).
//
// Ownership: borrows the Van (must outlive the scheduler). Threads: Run/Wait block the caller; Start runs the
// same loop on an owned thread (joined by Wait or the destructor). Not thread-safe otherwise (one owner).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "comm/node.h"
#include "comm/van.h"
#include "engine/base/status.h"

namespace geomx::comm {

class Scheduler {
 public:
  Scheduler(TierSpec spec, Van* van);
  ~Scheduler();  // stops and joins a Start()ed loop
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Binds and serves until the tier finalized (OK) or failed (the reason).
  Status Run(const std::string& bind_address);
  // Binds, then serves on a thread; returns the bound endpoint. Wait() joins and returns Run's status.
  Result<std::string> Start(const std::string& bind_address);
  Status Wait();
  // Makes the loop return kCancelled soon (tests; Ctrl-C).
  void Stop() { stop_ = true; }

  const TierSpec& spec() const { return spec_; }
  // Messages dropped because their authenticated sender was not the node they named. Thread-safe.
  uint64_t rejected_messages() const { return rejected_; }

 private:
  class Loop;

  const TierSpec spec_;
  Van* const van_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rejected_{0};
  std::thread thread_;
  Status thread_status_;  // written by the thread, read after join
};

}  // namespace geomx::comm
