// Test helpers for the parameter-server tests: transports (LoopbackVan or inproc ZmqVan) and whole tiers started
// in-process as threads (style R16). Test-only code.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/loopback_van.h"
#include "comm/node.h"
#include "comm/postoffice.h"
#include "comm/scheduler.h"
#include "comm/van.h"
#include "comm/zmq_van.h"

namespace geomx::comm::testing {

// Short timeouts so failures show in well under a second and nothing can hang a test run.
CommOptions FastOptions();

// Makes vans and addresses for one kind of transport.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::unique_ptr<Van> NewVan() = 0;
  // The address a node called `name` binds ("loop://dc-a/worker0", "inproc://dc-a-worker0").
  virtual std::string Address(const std::string& name) const = 0;
  // Later addresses differ from earlier ones (ZeroMQ releases inproc names asynchronously after a close).
  virtual void Renew() {}
  virtual LoopbackNetwork* loopback() { return nullptr; }
  virtual ZmqContext* zmq() { return nullptr; }
};
// "loopback" or "zmq" (inproc).
std::unique_ptr<Transport> MakeTransport(const std::string& kind);

TierSpec MakeSpec(Transport& t, const std::string& name, int servers, int workers,
                  CommOptions options = FastOptions());

struct TestNode {
  std::unique_ptr<Van> van;
  std::unique_ptr<Postoffice> po;
  std::string address;
};

// One tier: a scheduler on its thread and its nodes' Postoffices (not started until Start()).
class TestTier {
 public:
  // Node names default to "<tier>/server<r>" and "<tier>/worker<r>" (or spec.server_names/worker_names); parties
  // default to the tier's name (or `worker_parties` by rank).
  TestTier(Transport& t, TierSpec spec, std::vector<std::string> worker_parties = {});
  ~TestTier();

  // Starts the scheduler, then every node concurrently; returns the first node error.
  Status Start();
  // Only the scheduler (to start nodes one by one).
  Status StartScheduler();
  // Finalizes every node concurrently, then waits for the scheduler; returns the first error.
  Status Finalize();
  // Waits for the scheduler's result (after the nodes are done or the tier failed).
  Status SchedulerResult();

  Postoffice& server(int rank) { return *servers_[rank].po; }
  Postoffice& worker(int rank) { return *workers_[rank].po; }
  TestNode& server_node(int rank) { return servers_[rank]; }
  TestNode& worker_node(int rank) { return workers_[rank]; }
  const TierSpec& spec() const { return spec_; }
  Scheduler& scheduler() { return *scheduler_; }
  // Every node's Postoffice (servers then workers).
  std::vector<Postoffice*> all();

 private:
  Transport& t_;
  TierSpec spec_;
  std::unique_ptr<Van> scheduler_van_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<TestNode> servers_;
  std::vector<TestNode> workers_;
  bool scheduler_waited_ = false;
  Status scheduler_status_;
};

// Sends raw ZeroMQ multipart messages (garbage) to a node's inproc endpoint, as a broken peer would.
void SendRawFramesForTesting(ZmqContext& ctx, const std::string& endpoint,
                             const std::vector<std::vector<std::string>>& messages);
// Sends well-formed messages with arbitrary Metas to `endpoint` through a throw-away van of the transport.
void SendMessagesForTesting(Transport& t, const std::string& endpoint, const std::vector<Message>& messages);

// Runs fns concurrently and returns their statuses.
std::vector<Status> RunConcurrently(const std::vector<std::function<Status()>>& fns);

}  // namespace geomx::comm::testing
