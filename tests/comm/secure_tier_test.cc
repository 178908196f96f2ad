// A tier over tcp:// ZmqVans with CurveZMQ: a node's identity is the key it proved to hold, so a member of the job
// cannot pass for another one (impostor registration, forged scheduler messages, pushes under another node's id),
// and a key outside the job's key directory gets nothing delivered at all.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/curve.h"
#include "comm/postoffice.h"
#include "comm/scheduler.h"
#include "comm/zmq_van.h"
#include "ps_test_util.h"
#include "tests/testutil.h"

namespace geomx::comm {
namespace {

using geomx::testing::ScratchDir;

// Waits (bounded) until `done()`; the test's assertions tell what was expected.
void WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 2000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

class SecureTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (scratch_ / "keys").string();
    ASSERT_TRUE(GenerateKeys(dir_, {"sec/scheduler", "sec/server0", "sec/worker0", "sec/worker1"}, false).ok());
    ASSERT_TRUE(GenerateKeys((scratch_ / "other").string(), {"evil/stranger"}, false).ok());
    Result<std::map<std::string, std::string>> keys = LoadPublicKeys(dir_);
    ASSERT_TRUE(keys.ok()) << keys.status().ToString();
    peer_keys_ = std::make_shared<const std::map<std::string, std::string>>(*keys);
    std::map<std::string, std::string> admitted;
    for (const auto& [member, key] : *keys) admitted[key] = member;
    ASSERT_TRUE(context_.EnableCurve(admitted).ok());
    spec_.name = "sec";
    spec_.num_servers = 1;
    spec_.num_workers = 2;
    spec_.options = testing::FastOptions();
  }

  std::unique_ptr<ZmqVan> NewVan(const std::string& member, const std::string& dir = "") {
    Result<CurveIdentity> id = LoadIdentity(dir.empty() ? dir_ : dir, member);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    ZmqVanOptions o;
    if (id.ok()) o.curve = *id;
    o.peer_keys = peer_keys_;
    return std::make_unique<ZmqVan>(&context_, o);
  }

  // A van that binds, connects to the scheduler and sends what it is told: a member of the job gone rogue.
  std::unique_ptr<ZmqVan> Attacker(const std::string& member, const std::string& dir, std::string* endpoint) {
    std::unique_ptr<ZmqVan> van = NewVan(member, dir);
    Result<std::string> bound = van->Bind("tcp://127.0.0.1:0");
    EXPECT_TRUE(bound.ok()) << bound.status().ToString();
    if (bound.ok()) *endpoint = *bound;
    EXPECT_TRUE(van->Connect(kSchedulerId, spec_.scheduler_endpoint, LinkClass::kLan, "sec/scheduler").ok());
    return van;
  }

  static Message RegisterAs(const std::string& name, int rank, const std::string& endpoint) {
    RegisterRequest r;
    r.node.role = NodeRole::kWorker;
    r.node.rank = rank;
    r.node.name = name;
    r.node.party = "sec";
    r.node.endpoint = endpoint;
    r.tier = "sec";
    r.num_servers = 1;
    r.num_workers = 2;
    Message m;
    m.meta.command = Command::kRegister;
    m.meta.recipient = kSchedulerId;
    m.meta.body = EncodeRegisterRequest(r);
    return m;
  }

  ScratchDir scratch_;
  std::string dir_;
  std::shared_ptr<const std::map<std::string, std::string>> peer_keys_;
  ZmqContext context_;  // declared before the vans of each test: destroyed after them
  TierSpec spec_;
};

TEST_F(SecureTierTest, NodesCannotPassForOthers) {
  std::unique_ptr<ZmqVan> scheduler_van = NewVan("sec/scheduler");
  ASSERT_TRUE(scheduler_van->authenticates());
  auto scheduler = std::make_unique<Scheduler>(spec_, scheduler_van.get());
  Result<std::string> scheduler_endpoint = scheduler->Start("tcp://127.0.0.1:0");
  ASSERT_TRUE(scheduler_endpoint.ok()) << scheduler_endpoint.status().ToString();
  spec_.scheduler_endpoint = *scheduler_endpoint;

  // worker0's key registering as worker1 (rank 1): refused without an answer, so worker1 still gets its rank.
  std::string rogue_endpoint;
  std::unique_ptr<ZmqVan> rogue = Attacker("sec/worker0", "", &rogue_endpoint);
  ASSERT_TRUE(rogue->Send(kSchedulerId, RegisterAs("sec/worker1", 1, rogue_endpoint)).ok());
  WaitUntil([&] { return scheduler->rejected_messages() >= 1; });
  EXPECT_EQ(scheduler->rejected_messages(), 1u);
  Message answer;
  EXPECT_EQ(rogue->Recv(&answer, 200).code(), StatusCode::kDeadlineExceeded);

  // A key outside the key directory: its handshake is refused, nothing reaches the scheduler.
  std::string stranger_endpoint;
  std::unique_ptr<ZmqVan> stranger = Attacker("evil/stranger", (scratch_ / "other").string(), &stranger_endpoint);
  ASSERT_TRUE(stranger->Send(kSchedulerId, RegisterAs("sec/worker1", 1, stranger_endpoint)).ok());
  WaitUntil([&] { return context_.refused_handshakes() > 0; });
  EXPECT_GT(context_.refused_handshakes(), 0u);

  // The real tier.
  struct Node {
    std::unique_ptr<ZmqVan> van;
    std::unique_ptr<Postoffice> po;
  };
  std::vector<Node> nodes;
  const std::vector<std::pair<NodeRole, std::string>> who = {
      {NodeRole::kServer, "sec/server0"}, {NodeRole::kWorker, "sec/worker0"}, {NodeRole::kWorker, "sec/worker1"}};
  for (const auto& [role, name] : who) {
    NodeInfo self;
    self.role = role;
    self.rank = name == "sec/worker1" ? 1 : 0;
    self.name = name + "@sec";  // node names may carry a suffix; the key is the member's
    self.party = "sec";
    Node n;
    n.van = NewVan(name);
    n.po = std::make_unique<Postoffice>(spec_, self, n.van.get());
    nodes.push_back(std::move(n));
  }
  std::vector<std::function<Status()>> start;
  for (Node& n : nodes) start.push_back([&n] { return n.po->Start("tcp://127.0.0.1:0"); });
  for (const Status& s : testing::RunConcurrently(start)) ASSERT_TRUE(s.ok()) << s.ToString();
  Postoffice& server = *nodes[0].po;
  Postoffice& worker1 = *nodes[2].po;
  EXPECT_EQ(worker1.my_rank(), 1);
  EXPECT_EQ(worker1.self().endpoint, worker1.FindNode(worker1.my_id())->endpoint);

  // worker0's key, once the tier runs: forged scheduler messages to worker1, a push under worker1's id to the
  // server, and an early leave in worker1's name to the scheduler. Every one is dropped and counted.
  ASSERT_TRUE(rogue->Connect(worker1.my_id(), worker1.self().endpoint, LinkClass::kLan, "sec/worker1@sec").ok());
  ASSERT_TRUE(rogue->Connect(server.my_id(), server.self().endpoint, LinkClass::kLan, "sec/server0@sec").ok());
  Message forged_error;
  forged_error.meta.command = Command::kError;
  forged_error.meta.sender = kSchedulerId;
  forged_error.meta.request = false;
  forged_error.meta.status_code = static_cast<int32_t>(StatusCode::kUnavailable);
  forged_error.meta.body = "tier sec: forged failure";
  ASSERT_TRUE(rogue->Send(worker1.my_id(), forged_error).ok());
  Message forged_release;
  forged_release.meta.command = Command::kShutdown;
  forged_release.meta.sender = kSchedulerId;
  forged_release.meta.request = false;
  ASSERT_TRUE(rogue->Send(worker1.my_id(), forged_release).ok());
  Message forged_push;
  forged_push.meta.command = Command::kPush;
  forged_push.meta.sender = worker1.my_id();
  forged_push.meta.recipient = server.my_id();
  ASSERT_TRUE(rogue->Send(server.my_id(), forged_push).ok());
  Message forged_leave;
  forged_leave.meta.command = Command::kShutdown;
  forged_leave.meta.sender = worker1.my_id();
  forged_leave.meta.request = true;
  forged_leave.meta.status_code = static_cast<int32_t>(StatusCode::kInternal);
  forged_leave.meta.body = "forged leave";
  ASSERT_TRUE(rogue->Send(kSchedulerId, forged_leave).ok());
  WaitUntil([&] {
    return worker1.rejected_messages() >= 2 && server.rejected_messages() >= 1 && scheduler->rejected_messages() >= 2;
  });
  EXPECT_EQ(worker1.rejected_messages(), 2u);
  EXPECT_EQ(server.rejected_messages(), 1u);
  EXPECT_EQ(scheduler->rejected_messages(), 2u);
  EXPECT_EQ(nodes[1].po->rejected_messages(), 0u);

  // The tier never noticed: a barrier and the goodbye go through.
  std::vector<std::function<Status()>> barrier;
  for (Node& n : nodes) barrier.push_back([&n] { return n.po->Barrier("all"); });
  for (const Status& s : testing::RunConcurrently(barrier)) EXPECT_TRUE(s.ok()) << s.ToString();
  for (Node& n : nodes) EXPECT_TRUE(n.po->health().ok()) << n.po->health().ToString();
  std::vector<std::function<Status()>> finalize;
  for (Node& n : nodes) finalize.push_back([&n] { return n.po->Finalize(); });
  for (const Status& s : testing::RunConcurrently(finalize)) EXPECT_TRUE(s.ok()) << s.ToString();
  Status done = scheduler->Wait();
  EXPECT_TRUE(done.ok()) << done.ToString();
  // The stranger never got anything delivered, so the scheduler counted only worker0's two forgeries.
  EXPECT_EQ(scheduler->rejected_messages(), 2u);
  Message nothing;
  EXPECT_EQ(stranger->Recv(&nothing, 50).code(), StatusCode::kDeadlineExceeded);
}

// A rejoin (topology.failure_policy continue or wait) is a registration like the first: once the tier runs, worker0's
// key cannot take worker1's place (dropped and counted, no answer), while worker1's own key, started again after its
// process died, rejoins.
TEST_F(SecureTierTest, OnlyTheWorkersOwnKeyTakesItsPlaceInARunningTier) {
  spec_.options.continue_without_lost_workers = true;
  spec_.options.admit_rejoins = true;
  spec_.options.heartbeat_interval_ms = 20;
  spec_.options.heartbeat_timeout_ms = 60000;
  std::unique_ptr<ZmqVan> scheduler_van = NewVan("sec/scheduler");
  auto scheduler = std::make_unique<Scheduler>(spec_, scheduler_van.get());
  Result<std::string> scheduler_endpoint = scheduler->Start("tcp://127.0.0.1:0");
  ASSERT_TRUE(scheduler_endpoint.ok()) << scheduler_endpoint.status().ToString();
  spec_.scheduler_endpoint = *scheduler_endpoint;
  struct Node {
    std::unique_ptr<ZmqVan> van;
    std::unique_ptr<Postoffice> po;
  };
  auto make = [&](NodeRole role, int rank, const std::string& name) {
    Node n;
    n.van = NewVan(name);
    n.po = std::make_unique<Postoffice>(spec_, NodeInfo{-1, role, rank, name, "sec", ""}, n.van.get());
    return n;
  };
  std::vector<Node> nodes;
  nodes.push_back(make(NodeRole::kServer, 0, "sec/server0"));
  nodes.push_back(make(NodeRole::kWorker, 0, "sec/worker0"));
  nodes.push_back(make(NodeRole::kWorker, 1, "sec/worker1"));
  std::vector<std::function<Status()>> start;
  for (Node& n : nodes) start.push_back([&n] { return n.po->Start("tcp://127.0.0.1:0"); });
  for (const Status& s : testing::RunConcurrently(start)) ASSERT_TRUE(s.ok()) << s.ToString();

  std::string rogue_endpoint;
  std::unique_ptr<ZmqVan> rogue = Attacker("sec/worker0", "", &rogue_endpoint);
  ASSERT_TRUE(rogue->Send(kSchedulerId, RegisterAs("sec/worker1", 1, rogue_endpoint)).ok());
  WaitUntil([&] { return scheduler->rejected_messages() >= 1; });
  EXPECT_EQ(scheduler->rejected_messages(), 1u);
  Message answer;
  EXPECT_EQ(rogue->Recv(&answer, 200).code(), StatusCode::kDeadlineExceeded);

  nodes[2].van->Stop();  // worker1's process dies; started again with its own key it rejoins
  Node again = make(NodeRole::kWorker, 1, "sec/worker1");
  const Status rejoined = again.po->Start("tcp://127.0.0.1:0");
  ASSERT_TRUE(rejoined.ok()) << rejoined.ToString();
  EXPECT_TRUE(again.po->rejoined());
  std::vector<std::function<Status()>> finalize = {[&] { return nodes[0].po->Finalize(); },
                                                   [&] { return nodes[1].po->Finalize(); },
                                                   [&] { return again.po->Finalize(); }};
  for (const Status& s : testing::RunConcurrently(finalize)) EXPECT_TRUE(s.ok()) << s.ToString();
  Status done = scheduler->Wait();
  EXPECT_TRUE(done.ok()) << done.ToString();
}

}  // namespace
}  // namespace geomx::comm
