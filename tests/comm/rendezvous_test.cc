// Scheduler + Postoffice: rendezvous, node table, barriers, refusals, heartbeats, shutdown. Every case runs over
// LoopbackVan and inproc ZmqVan.
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "comm/customer.h"
#include "ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::FastOptions;
using testing::MakeSpec;
using testing::MakeTransport;
using testing::RunConcurrently;
using testing::TestTier;
using Clock = std::chrono::steady_clock;

class RendezvousTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<testing::Transport> t_ = MakeTransport(GetParam());
};

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST_P(RendezvousTest, NodeTableIdsRanksAndBarriers) {
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 2, 3));
  ASSERT_TRUE(tier.Start().ok());
  std::set<int> ids;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(tier.server(r).my_rank(), r);
    EXPECT_EQ(tier.server(r).role(), NodeRole::kServer);
    ids.insert(tier.server(r).my_id());
  }
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(tier.worker(r).my_rank(), r);
    ids.insert(tier.worker(r).my_id());
  }
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids.count(kSchedulerId), 0u);
  Postoffice& w2 = tier.worker(2);
  EXPECT_EQ(w2.nodes().size(), 6u);
  EXPECT_EQ(w2.ServerIds(), (std::vector<int>{tier.server(0).my_id(), tier.server(1).my_id()}));
  EXPECT_EQ(w2.WorkerIds().size(), 3u);
  EXPECT_EQ(w2.WorkerIds()[1], tier.worker(1).my_id());
  EXPECT_EQ(w2.Describe(tier.server(1).my_id()), "server dc-a/server1");
  EXPECT_TRUE(w2.health().ok());

  for (int round = 0; round < 3; ++round) {
    std::vector<std::function<Status()>> fns;
    for (Postoffice* po : tier.all()) fns.push_back([po] { return po->Barrier("all"); });
    for (int r = 0; r < 3; ++r) fns.push_back([&tier, r] { return tier.worker(r).Barrier("workers"); });
    for (int r = 0; r < 2; ++r) fns.push_back([&tier, r] { return tier.server(r).Barrier("servers"); });
    for (const Status& s : RunConcurrently(fns)) EXPECT_TRUE(s.ok()) << s.ToString();
  }
  const Status bad = tier.worker(0).Barrier("servers");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(bad, "not in barrier group")) << bad.ToString();
  EXPECT_EQ(tier.worker(0).Barrier("everyone").code(), StatusCode::kInvalidArgument);

  EXPECT_TRUE(tier.Finalize().ok());
  EXPECT_TRUE(tier.worker(0).Finalize().ok()) << "idempotent";
}

// Regression: a server whose Finalize timed out while the workers were still training (a run longer than
// request_timeout_ms) stopped its threads, so the retry returned OK at once and the tier shut down under the
// workers. Now the threads keep serving after kDeadlineExceeded and a second Finalize waits again.
TEST_P(RendezvousTest, FinalizeTimeoutLeavesTheNodeServingAndRetryable) {
  TierSpec spec = MakeSpec(*t_, "dc-a", 1, 1);
  spec.options.request_timeout_ms = 300;
  TestTier tier(*t_, spec);
  ASSERT_TRUE(tier.Start().ok());
  EXPECT_EQ(tier.server(0).Finalize().code(), StatusCode::kDeadlineExceeded);  // the worker is still "training"
  EXPECT_TRUE(tier.server(0).health().ok());
  // Still serving: a barrier needs the server's receive thread.
  std::vector<Status> r = RunConcurrently({[&] { return tier.server(0).Barrier("all"); },
                                           [&] { return tier.worker(0).Barrier("all"); }});
  EXPECT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_TRUE(r[1].ok()) << r[1].ToString();
  r = RunConcurrently({[&] { return tier.server(0).Finalize(); }, [&] { return tier.worker(0).Finalize(); }});
  EXPECT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_TRUE(r[1].ok()) << r[1].ToString();
  EXPECT_TRUE(tier.Finalize().ok());
}

TEST_P(RendezvousTest, AnyRankTakesTheFreeOnes) {
  TierSpec spec = MakeSpec(*t_, "dc-b", 1, 3);
  TestTier tier(*t_, spec);
  ASSERT_TRUE(tier.StartScheduler().ok());
  // Worker 1 asks for rank 1; two others ask for any rank.
  std::vector<std::unique_ptr<Van>> vans;
  std::vector<std::unique_ptr<Postoffice>> pos;
  for (int i = 0; i < 2; ++i) {
    NodeInfo n{.role = NodeRole::kWorker, .rank = -1, .name = "dc-b/any" + std::to_string(i), .party = "dc-b"};
    vans.push_back(t_->NewVan());
    pos.push_back(std::make_unique<Postoffice>(spec, n, vans.back().get()));
  }
  auto& s0 = tier.server_node(0);
  auto& w1 = tier.worker_node(1);
  std::vector<std::function<Status()>> fns = {
      [&] { return s0.po->Start(s0.address); }, [&] { return w1.po->Start(w1.address); },
      [&] { return pos[0]->Start(t_->Address("dc-b/any0")); }, [&] { return pos[1]->Start(t_->Address("dc-b/any1")); }};
  for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
  // The free ranks go to the "any rank" nodes in name order, whatever the arrival order.
  EXPECT_EQ(pos[0]->my_rank(), 0);
  EXPECT_EQ(pos[1]->my_rank(), 2);
  EXPECT_EQ(w1.po->my_rank(), 1);
  std::vector<std::function<Status()>> fin = {[&] { return s0.po->Finalize(); }, [&] { return w1.po->Finalize(); },
                                              [&] { return pos[0]->Finalize(); }, [&] { return pos[1]->Finalize(); }};
  for (const Status& s : RunConcurrently(fin)) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(tier.SchedulerResult().ok());
}

TEST_P(RendezvousTest, TimeoutNamesTheMissingNode) {
  CommOptions o = FastOptions();
  o.rendezvous_timeout_ms = 300;
  TierSpec spec = MakeSpec(*t_, "dc-a", 1, 3, o);
  spec.worker_names = {"dc-a/worker0", "dc-a/worker1", "dc-a/worker2"};
  TestTier tier(*t_, spec);
  ASSERT_TRUE(tier.StartScheduler().ok());
  const auto start = Clock::now();
  auto& s0 = tier.server_node(0);
  auto& w0 = tier.worker_node(0);
  auto& w2 = tier.worker_node(2);
  std::vector<std::function<Status()>> fns = {[&] { return s0.po->Start(s0.address); },
                                              [&] { return w0.po->Start(w0.address); },
                                              [&] { return w2.po->Start(w2.address); }};
  for (const Status& s : RunConcurrently(fns)) {
    EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
    EXPECT_TRUE(Contains(s, "tier dc-a: rendezvous timed out after 0.3 s: missing worker rank 1 (dc-a/worker1), "
                            "3 of 4 nodes registered"))
        << s.ToString();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  const Status sched = tier.SchedulerResult();
  EXPECT_EQ(sched.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(Contains(sched, "missing worker rank 1 (dc-a/worker1)")) << sched.ToString();
}

TEST_P(RendezvousTest, NoSchedulerTimesOut) {
  CommOptions o = FastOptions();
  o.rendezvous_timeout_ms = 200;
  TestTier tier(*t_, MakeSpec(*t_, "dc-z", 1, 1, o));
  auto& w = tier.worker_node(0);
  const Status s = w.po->Start(w.address);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(Contains(s, "no node table from the scheduler")) << s.ToString();
}

TEST_P(RendezvousTest, RankClashOutOfRangeAndCountMismatchAreRefusedAtOnce) {
  CommOptions o = FastOptions();
  o.rendezvous_timeout_ms = 2000;
  TierSpec spec = MakeSpec(*t_, "dc-a", 1, 2, o);
  TestTier tier(*t_, spec);
  ASSERT_TRUE(tier.StartScheduler().ok());
  auto& s0 = tier.server_node(0);
  auto& w0 = tier.worker_node(0);
  auto& w1 = tier.worker_node(1);
  std::thread first([&] { EXPECT_TRUE(w0.po->Start(w0.address).ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // w0 registered as worker rank 0

  auto refused = [&](NodeInfo n, TierSpec s) {
    auto van = t_->NewVan();
    Postoffice po(s, n, van.get());
    const auto start = Clock::now();
    const Status st = po.Start(t_->Address("dc-a/intruder-" + n.name));
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(1)) << "refused at once, not after the rendezvous timeout";
    return st;
  };
  Status clash = refused({.role = NodeRole::kWorker, .rank = 0, .name = "dc-a/worker0b", .party = "dc-a"}, spec);
  EXPECT_EQ(clash.code(), StatusCode::kAlreadyExists) << clash.ToString();
  EXPECT_TRUE(Contains(clash, "worker rank 0, already taken by dc-a/worker0")) << clash.ToString();
  Status range = refused({.role = NodeRole::kWorker, .rank = 5, .name = "dc-a/worker5", .party = "dc-a"}, spec);
  EXPECT_EQ(range.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(range, "valid ranks are 0..1")) << range.ToString();
  TierSpec other = spec;
  other.num_workers = 3;
  Status counts = refused({.role = NodeRole::kWorker, .rank = 1, .name = "dc-a/worker1x", .party = "dc-a"}, other);
  EXPECT_EQ(counts.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(counts, "expects 1 servers and 3 workers, the scheduler 1 and 2")) << counts.ToString();
  TierSpec wrong_tier = spec;
  wrong_tier.name = "dc-b";
  Status tier_name = refused({.role = NodeRole::kServer, .rank = 0, .name = "dc-b/server0", .party = "dc-b"},
                             wrong_tier);
  EXPECT_TRUE(Contains(tier_name, "wants to join tier 'dc-b'")) << tier_name.ToString();

  // The tier still completes with the right nodes.
  std::vector<std::function<Status()>> rest = {[&] { return s0.po->Start(s0.address); },
                                               [&] { return w1.po->Start(w1.address); }};
  for (const Status& s : RunConcurrently(rest)) EXPECT_TRUE(s.ok()) << s.ToString();
  first.join();
  EXPECT_TRUE(tier.Finalize().ok());
}

TEST_P(RendezvousTest, DeadNodeIsReportedToWaitersWithoutHang) {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 20;
  // 1 s, not less: with 300 ms a scheduler thread starved by a loaded machine (ctest -j) was itself declared
  // silent by the nodes, and the test failed on the wrong error.
  o.heartbeat_timeout_ms = 1000;
  o.request_timeout_ms = 10000;  // long: only the heartbeat may end the waits
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 1, 3, o));
  ASSERT_TRUE(tier.Start().ok());
  Customer pending("tier dc-a", 10000);
  tier.worker(0).AttachTracker(&pending);
  const int64_t ts = pending.NewRequest({{tier.server(0).my_id(), "server dc-a/server0 for key 1"}}, "push");

  // worker1 crashes: its van goes silent (no heartbeats, no goodbye).
  tier.worker_node(1).van->Stop();
  const auto start = Clock::now();
  std::vector<std::function<Status()>> waits = {[&] { return tier.worker(0).Barrier("all"); },
                                                [&] { return tier.worker(2).Barrier("workers"); },
                                                [&] { return pending.Wait(ts); }};
  for (const Status& s : RunConcurrently(waits)) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_TRUE(Contains(s, "node dc-a/worker1 (worker rank 1, party dc-a)")) << s.ToString();
    EXPECT_TRUE(Contains(s, "declared dead")) << s.ToString();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  // The server waits for nothing; it hears the news too.
  for (int i = 0; i < 100 && tier.server(0).health().ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(tier.server(0).health().code(), StatusCode::kUnavailable);
  EXPECT_EQ(tier.SchedulerResult().code(), StatusCode::kUnavailable);
  EXPECT_EQ(tier.worker(0).Finalize().code(), StatusCode::kUnavailable);
  tier.worker(0).DetachTracker(&pending);
}

// Regression (issue 18): servers finalize right after the start and serve until the end; the scheduler skipped
// finalized nodes, so a dead server was never reported and workers waited for their request timeout.
TEST_P(RendezvousTest, FinalizedServerIsStillWatched) {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 20;
  o.heartbeat_timeout_ms = 1000;
  o.request_timeout_ms = 60000;  // long: only the heartbeat may end the wait
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 1, 2, o));
  ASSERT_TRUE(tier.Start().ok());
  std::thread server_finalize([&] { (void)tier.server(0).Finalize(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server has said goodbye
  tier.server_node(0).van->Stop();                               // ... and then dies
  const auto start = Clock::now();
  const Status s = tier.worker(0).Barrier("workers");
  server_finalize.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "node dc-a/server0 (server rank 0, party dc-a)")) << s.ToString();
  EXPECT_TRUE(Contains(s, "declared dead")) << s.ToString();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
}

// A node that leaves with a reason fails the tier at once for everybody, naming it and the reason; no heartbeat
// (disabled here) and no request timeout is involved.
TEST_P(RendezvousTest, LeaveTellsEveryNodeWhyAtOnce) {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 0;
  o.request_timeout_ms = 60000;
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 1, 3, o));
  ASSERT_TRUE(tier.Start().ok());
  Customer pending("tier dc-a", 60000);
  tier.worker(0).AttachTracker(&pending);
  const int64_t ts = pending.NewRequest({{tier.server(0).my_id(), "server dc-a/server0 for key 1"}}, "push");
  const auto start = Clock::now();
  std::vector<std::function<Status()>> waits = {[&] { return tier.worker(0).Barrier("all"); },
                                                [&] { return tier.worker(2).Barrier("workers"); },
                                                [&] { return pending.Wait(ts); },
                                                [&] {
                                                  tier.worker(1).Leave(Status::Internal("disk on fire"));
                                                  return tier.worker(1).health();
                                                }};
  const std::vector<Status> results = RunConcurrently(waits);
  for (size_t i = 0; i < results.size(); ++i) {
    const Status& s = results[i];
    EXPECT_FALSE(s.ok()) << i;
    EXPECT_TRUE(Contains(s, "dc-a/worker1 (worker rank 1, party dc-a)")) << s.ToString();
    EXPECT_TRUE(Contains(s, "left the job: disk on fire")) << s.ToString();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(tier.SchedulerResult().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(tier.server(0).health(), "left the job: disk on fire"));
  tier.worker(0).DetachTracker(&pending);
}

// A Postoffice destroyed in the middle of the job (an error return that skipped Finalize) leaves on its way out.
TEST_P(RendezvousTest, DestroyedNodeLeavesOnItsWayOut) {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 0;
  o.request_timeout_ms = 60000;
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 1, 2, o));
  ASSERT_TRUE(tier.Start().ok());
  tier.worker_node(1).po.reset();
  const Status s = tier.worker(0).Barrier("all");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "dc-a/worker1 stopped before the end of the job")) << s.ToString();
}

// topology.failure_policy: continue (CommOptions::continue_without_lost_workers): a dead worker is dropped, the
// others are told (kNodeLeft, with its id), barriers and the goodbye no longer wait for it, the tier ends OK.
TEST_P(RendezvousTest, ALostWorkerIsDroppedAndTheTierGoesOn) {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 20;
  o.heartbeat_timeout_ms = 2000;  // not less: a starved scheduler thread would be declared silent
  o.request_timeout_ms = 60000;
  o.continue_without_lost_workers = true;
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 1, 3, o));
  ASSERT_TRUE(tier.Start().ok());
  std::mutex mu;
  std::vector<std::pair<int, std::string>> left;
  tier.server(0).SetNodeLeftCallback([&](int id, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    left.emplace_back(id, why);
  });
  const int lost_id = tier.worker(1).my_id();
  tier.worker_node(1).van->Stop();  // worker1 dies
  // A barrier of the other workers is released without it (worker1 never arrives).
  std::vector<Status> r = RunConcurrently({[&] { return tier.worker(0).Barrier("workers"); },
                                           [&] { return tier.worker(2).Barrier("workers"); }});
  for (const Status& st : r) EXPECT_TRUE(st.ok()) << st.ToString();
  // The server hears the news on its own receive thread, maybe after the workers' barrier was released (CI).
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!left.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].first, lost_id);
    EXPECT_TRUE(left[0].second.find("dc-a/worker1") != std::string::npos) << left[0].second;
    EXPECT_TRUE(left[0].second.find("declared dead") != std::string::npos) << left[0].second;
  }
  EXPECT_TRUE(tier.worker(0).health().ok());
  EXPECT_TRUE(tier.server(0).health().ok());
  // The goodbye of everybody else ends the tier, OK.
  std::vector<Status> f = RunConcurrently({[&] { return tier.server(0).Finalize(); },
                                           [&] { return tier.worker(0).Finalize(); },
                                           [&] { return tier.worker(2).Finalize(); }});
  for (const Status& st : f) EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(tier.SchedulerResult().ok()) << tier.SchedulerResult().ToString();
}

// Without the policy (the default), or when the lost node is a server, the tier fails as before.
TEST_P(RendezvousTest, ALostServerFailsTheTierEvenUnderContinue) {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 20;
  o.heartbeat_timeout_ms = 2000;  // not less: a starved scheduler thread would be declared silent
  o.request_timeout_ms = 60000;
  o.continue_without_lost_workers = true;
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 1, 2, o));
  ASSERT_TRUE(tier.Start().ok());
  tier.server_node(0).van->Stop();
  const Status s = tier.worker(0).Barrier("workers");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "dc-a/server0")) << s.ToString();
}

TEST_P(RendezvousTest, SilentSchedulerIsDetected) {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 20;
  o.heartbeat_timeout_ms = 300;
  TestTier tier(*t_, MakeSpec(*t_, "dc-a", 1, 1, o));
  ASSERT_TRUE(tier.Start().ok());
  tier.scheduler().Stop();
  EXPECT_EQ(tier.SchedulerResult().code(), StatusCode::kCancelled);
  const auto start = Clock::now();
  const Status s = tier.worker(0).Barrier("all");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "has been silent")) << s.ToString();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

INSTANTIATE_TEST_SUITE_P(Transports, RendezvousTest, ::testing::Values("loopback", "zmq"));

}  // namespace
}  // namespace geomx::comm
