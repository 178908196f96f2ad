// A worker process that dies and is started again rejoins its running tier (comm/scheduler.h "rejoin",
// SyncAggregator::ProposeJoin/CommitJoin): one tier of 2 servers and 3 workers, over LoopbackVan and inproc ZmqVan.
// Every aggregate is checked against sums computed here from the pushes (IdentitySink: the value is the sum).
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/codec.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::FastOptions;
using testing::MakeSpec;
using testing::MakeTransport;
using testing::RunConcurrently;
using testing::TestTier;
using Clock = std::chrono::steady_clock;

constexpr int kApp = 0;
constexpr int kWorkers = 3;

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

// Worker w's value for `key` in `round`: distinct small integers, so every sum is exact.
float Value(int w, uint64_t key, int64_t round) { return static_cast<float>(100 * round + 10 * w + key + 1); }

CommOptions RejoinOptions() {
  CommOptions o = FastOptions();
  o.heartbeat_interval_ms = 20;
  o.heartbeat_timeout_ms = 2000;  // not less: a starved scheduler thread would be declared silent
  o.request_timeout_ms = 60000;
  o.admit_rejoins = true;
  return o;
}

// Two one-float keys, one on each server (key k on server k).
class RejoinTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Build(CommOptions options) {
    t_->Renew();
    tier_ = std::make_unique<TestTier>(*t_, MakeSpec(*t_, "dc-a", 2, kWorkers, options));
    layout_ = KeyLayout::Build({{0, 1}, {1, 1}}, 2, options.split_bytes).value();
    for (uint64_t k : {0u, 1u}) ASSERT_EQ(layout_.slices(k)[0].server_rank, static_cast<int>(k));
    for (int r = 0; r < 2; ++r) {
      aggs_.push_back(SyncAggregator::Create(layout_, {.expected_senders = kWorkers}, &sum_).value());
      servers_.push_back(std::make_unique<KvServer>(&tier_->server(r), kApp, aggs_.back().get()));
      SyncAggregator* agg = aggs_.back().get();
      tier_->server(r).SetNodeLeftCallback([agg](int id, const std::string&) { agg->RemoveSender(id); });
    }
    for (int w = 0; w < kWorkers; ++w) kv_.push_back(std::make_unique<KvWorker>(&tier_->worker(w), kApp, layout_));
    ASSERT_TRUE(tier_->Start().ok());
    std::vector<std::function<Status()>> fns;
    for (Postoffice* po : tier_->all()) fns.push_back([po] { return po->Barrier("all"); });
    for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void TearDown() override {
    for (int r = 0; r < 2; ++r) tier_->server(r).SetNodeLeftCallback(nullptr);
    restarted_kv_.reset();
    kv_.clear();
    servers_.clear();
  }

  KvWorker& kv(int w) { return w == 2 && restarted_kv_ ? *restarted_kv_ : *kv_[w]; }

  // Worker w's PushPull of `keys` in `round`, started now; the future has the answers, in `keys` order.
  std::future<Result<std::vector<float>>> PushPull(int w, std::vector<uint64_t> keys, int64_t round) {
    return std::async(std::launch::async, [this, w, keys, round]() -> Result<std::vector<float>> {
      std::vector<float> in, out(keys.size(), -1);
      for (uint64_t k : keys) in.push_back(Value(w, k, round));
      std::vector<const float*> ins;
      std::vector<float*> outs;
      for (size_t i = 0; i < keys.size(); ++i) {
        ins.push_back(&in[i]);
        outs.push_back(&out[i]);
      }
      GEOMX_RETURN_IF_ERROR(kv(w).Wait(kv(w).PushPull(keys, ins, outs, round)));
      return out;
    });
  }

  // Every worker of `ws` pushes both keys in `round`; each must get the sum over `ws`.
  void Round(const std::vector<int>& ws, int64_t round) {
    std::vector<std::future<Result<std::vector<float>>>> answers;
    for (int w : ws) answers.push_back(PushPull(w, {0, 1}, round));
    for (auto& a : answers) {
      Result<std::vector<float>> got = a.get();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      for (uint64_t k : {0u, 1u}) EXPECT_EQ((*got)[k], Sum(ws, k, round)) << "key " << k << ", round " << round;
    }
  }

  static float Sum(const std::vector<int>& ws, uint64_t key, int64_t round) {
    float s = 0;
    for (int w : ws) s += Value(w, key, round);
    return s;
  }

  // Worker 2's process dies (its transport stops: no goodbye).
  void KillWorker2() { tier_->worker_node(2).van->Stop(); }

  // A new process for worker `rank` (not started): a new transport at a new address, the same name and rank.
  testing::TestNode NewProcess(int rank) {
    testing::TestNode n;
    const std::string name = "dc-a/worker" + std::to_string(rank);
    n.van = t_->NewVan();
    n.address = t_->Address(name + "-again");
    n.po = std::make_unique<Postoffice>(tier_->spec(), NodeInfo{-1, NodeRole::kWorker, rank, name, "dc-a", ""},
                                        n.van.get());
    return n;
  }

  // Starts worker 2 again (NewProcess).
  Status RestartWorker2() {
    restarted_ = NewProcess(2);
    restarted_kv_ = std::make_unique<KvWorker>(restarted_.po.get(), kApp, layout_);
    return restarted_.po->Start(restarted_.address);
  }

  // Worker 2's join: the round each server offers, then the largest committed on both.
  Result<int64_t> Join() {
    int64_t round = 0;
    for (int r = 0; r < 2; ++r) {
      GEOMX_ASSIGN_OR_RETURN(std::string answer,
                             kv(2).QueryControl(r, EncodeFields({{"command", SyncAggregator::kJoinCommand}})));
      std::map<std::string, std::string> f;
      GEOMX_RETURN_IF_ERROR(DecodeFields(answer, &f));
      offered_.push_back(std::stoll(f["round"]));
      round = std::max<int64_t>(round, offered_.back());
    }
    for (int r = 0; r < 2; ++r) {
      GEOMX_RETURN_IF_ERROR(kv(2).QueryControl(r, EncodeFields({{"command", SyncAggregator::kJoinAtCommand},
                                                                {"round", std::to_string(round)}}))
                                .status());
    }
    return round;
  }

  // The stored values once `round` completed on both servers.
  Result<std::vector<float>> PullAfter(int w, int64_t round) {
    std::vector<float> out(2, -1);
    std::vector<float*> outs = {&out[0], &out[1]};
    const std::vector<uint64_t> keys = {0, 1};
    GEOMX_RETURN_IF_ERROR(kv(w).Wait(kv(w).Pull(keys, outs, round)));
    return out;
  }

  Status FinalizeLiving() {
    std::vector<std::function<Status()>> fns;
    for (int r = 0; r < 2; ++r) fns.push_back([this, r] { return tier_->server(r).Finalize(); });
    for (int w = 0; w < 2; ++w) fns.push_back([this, w] { return tier_->worker(w).Finalize(); });
    if (restarted_.po) fns.push_back([this] { return restarted_.po->Finalize(); });
    for (const Status& s : RunConcurrently(fns)) GEOMX_RETURN_IF_ERROR(s);
    return tier_->SchedulerResult();
  }

  std::unique_ptr<testing::Transport> t_ = MakeTransport(GetParam());
  std::unique_ptr<TestTier> tier_;
  KeyLayout layout_;
  IdentitySink sum_;
  std::vector<std::unique_ptr<SyncAggregator>> aggs_;
  std::vector<std::unique_ptr<KvServer>> servers_;
  std::vector<std::unique_ptr<KvWorker>> kv_;
  testing::TestNode restarted_;
  std::unique_ptr<KvWorker> restarted_kv_;
  std::vector<int64_t> offered_;
};

// Under continue: worker 2 dies, is dropped, and rounds complete with the other two. Started again it rejoins:
// the servers reach it at its new address, its start barrier is behind it, both servers offer the next round, it
// pulls the last round's values and from then on every round has its push again; the tier ends OK.
TEST_P(RejoinTest, ADroppedWorkerStartedAgainRejoinsAtTheNextRound) {
  CommOptions o = RejoinOptions();
  o.continue_without_lost_workers = true;
  Build(o);
  Round({0, 1, 2}, 0);
  std::mutex mu;
  int left = 0;
  for (int r = 0; r < 2; ++r) {
    SyncAggregator* agg = aggs_[r].get();
    tier_->server(r).SetNodeLeftCallback([agg, &mu, &left](int id, const std::string&) {
      agg->RemoveSender(id);
      std::lock_guard<std::mutex> lock(mu);
      ++left;
    });
  }
  KillWorker2();
  for (auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (left == 2) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(left, 2) << "the servers were not told that worker 2 left";
  }
  Round({0, 1}, 1);  // without it

  const Status started = RestartWorker2();
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_TRUE(restarted_.po->rejoined());
  EXPECT_FALSE(tier_->worker(0).rejoined());
  EXPECT_EQ(restarted_.po->my_id(), tier_->worker(2).my_id());
  const Status barrier = restarted_.po->Barrier("all");  // the tier passed it before the restart
  EXPECT_TRUE(barrier.ok()) << barrier.ToString();
  Result<int64_t> joined = Join();
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(*joined, 2);
  EXPECT_EQ(offered_, (std::vector<int64_t>{2, 2}));
  Result<std::vector<float>> weights = PullAfter(2, *joined - 1);
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  EXPECT_EQ(*weights, (std::vector<float>{Sum({0, 1}, 0, 1), Sum({0, 1}, 1, 1)}));
  Round({0, 1, 2}, 2);  // with it again
  Round({0, 1, 2}, 3);
  const Status done = FinalizeLiving();
  EXPECT_TRUE(done.ok()) << done.ToString();
}

// The servers are at different rounds when the worker comes back (round 2 completed on server 0, not yet on server
// 1): server 0 offers 3, server 1 offers 2; the worker joins at 3 on both, so round 2 on server 1 completes without
// it and round 3 waits for it everywhere.
TEST_P(RejoinTest, ServersAtDifferentRoundsAgreeOnTheLatest) {
  CommOptions o = RejoinOptions();
  o.continue_without_lost_workers = true;
  Build(o);
  Round({0, 1, 2}, 0);
  for (int r = 0; r < 2; ++r) aggs_[r]->RemoveSender(tier_->worker(2).my_id());  // as kNodeLeft would
  KillWorker2();
  Round({0, 1}, 1);
  // Round 2 of key 0 (server 0) completes with workers 0 and 1; key 1 (server 1) waits.
  auto a0 = PushPull(0, {0}, 2);
  auto a1 = PushPull(1, {0}, 2);
  for (auto* a : {&a0, &a1}) {
    Result<std::vector<float>> got = a->get();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)[0], Sum({0, 1}, 0, 2));
  }
  const Status started = RestartWorker2();
  ASSERT_TRUE(started.ok()) << started.ToString();
  Result<int64_t> joined = Join();
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(offered_, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(*joined, 3);
  // Round 2 of key 1 completes without worker 2.
  auto b0 = PushPull(0, {1}, 2);
  auto b1 = PushPull(1, {1}, 2);
  for (auto* b : {&b0, &b1}) {
    Result<std::vector<float>> got = b->get();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)[0], Sum({0, 1}, 1, 2));
  }
  // A push of worker 2 for round 2 is refused: it joined at 3.
  auto late = PushPull(2, {1}, 2);
  Result<std::vector<float>> refused = late.get();
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  EXPECT_TRUE(Contains(refused.status(), "not expected in this round")) << refused.status().ToString();
  Round({0, 1, 2}, 3);
  EXPECT_TRUE(FinalizeLiving().ok());
}

// Under wait the servers never drop the lost worker: the round it missed waits for it, and once started again it
// pushes exactly that round, as if it had never gone (the sums are those of an undisturbed run).
TEST_P(RejoinTest, UnderWaitTheRestartedWorkerPushesTheRoundItMissed) {
  CommOptions o = RejoinOptions();
  o.wait_for_lost_workers = true;
  o.rejoin_timeout_ms = 30000;
  Build(o);
  bool told = false;
  for (int r = 0; r < 2; ++r) {
    tier_->server(r).SetNodeLeftCallback([&told](int, const std::string&) { told = true; });
  }
  Round({0, 1, 2}, 0);
  KillWorker2();
  auto a0 = PushPull(0, {0, 1}, 1);  // waits for worker 2
  auto a1 = PushPull(1, {0, 1}, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past the heartbeat timeout: declared lost
  EXPECT_EQ(a0.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  EXPECT_FALSE(told);  // nobody dropped it
  ASSERT_TRUE(RestartWorker2().ok());
  Result<int64_t> joined = Join();
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(*joined, 1);
  Result<std::vector<float>> weights = PullAfter(2, 0);
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  EXPECT_EQ(*weights, (std::vector<float>{Sum({0, 1, 2}, 0, 0), Sum({0, 1, 2}, 1, 0)}));
  auto a2 = PushPull(2, {0, 1}, 1);
  for (auto* a : {&a0, &a1, &a2}) {
    Result<std::vector<float>> got = a->get();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, (std::vector<float>{Sum({0, 1, 2}, 0, 1), Sum({0, 1, 2}, 1, 1)}));
  }
  EXPECT_TRUE(FinalizeLiving().ok());
}

// Under wait a lost worker that does not come back stops the tier after the rejoin timeout, naming it.
TEST_P(RejoinTest, UnderWaitAWorkerThatDoesNotComeBackStopsTheTier) {
  CommOptions o = RejoinOptions();
  o.wait_for_lost_workers = true;
  o.rejoin_timeout_ms = 300;
  Build(o);
  KillWorker2();
  const Status s = tier_->worker(0).Barrier("workers");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "dc-a/worker2")) << s.ToString();
  EXPECT_TRUE(Contains(s, "did not rejoin within 0.3 s")) << s.ToString();
}

// A process started again before the old one was declared lost replaces it at once.
TEST_P(RejoinTest, ARestartBeforeTheLossIsNoticedReplacesTheOldProcess) {
  CommOptions o = RejoinOptions();
  o.continue_without_lost_workers = true;
  o.heartbeat_timeout_ms = 60000;
  Build(o);
  Round({0, 1, 2}, 0);
  KillWorker2();
  const auto start = Clock::now();
  ASSERT_TRUE(RestartWorker2().ok());
  EXPECT_TRUE(restarted_.po->rejoined());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  Result<int64_t> joined = Join();
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(*joined, 1);
  Round({0, 1, 2}, 1);
  EXPECT_TRUE(FinalizeLiving().ok());
}

// Two workers of a host restarted at once: neither waits for the other's acknowledgement (a node without its table
// cannot give one), both rejoin and the next round has all three pushes.
TEST_P(RejoinTest, TwoWorkersRestartedAtOnceBothRejoin) {
  CommOptions o = RejoinOptions();
  o.continue_without_lost_workers = true;
  o.heartbeat_timeout_ms = 60000;
  Build(o);
  Round({0, 1, 2}, 0);
  tier_->worker_node(1).van->Stop();
  KillWorker2();
  testing::TestNode again1 = NewProcess(1);
  auto kv1 = std::make_unique<KvWorker>(again1.po.get(), kApp, layout_);
  const std::vector<Status> started = RunConcurrently({[&] { return again1.po->Start(again1.address); },
                                                       [&] { return RestartWorker2(); }});
  for (const Status& s : started) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(again1.po->rejoined());
  EXPECT_TRUE(restarted_.po->rejoined());
  kv_[1] = std::move(kv1);  // worker 1's requests now go through its new process
  for (KvWorker* k : {kv_[1].get(), restarted_kv_.get()}) {
    for (int r = 0; r < 2; ++r) {
      Result<std::string> a = k->QueryControl(r, EncodeFields({{"command", SyncAggregator::kJoinCommand}}));
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      ASSERT_TRUE(k->QueryControl(r, EncodeFields({{"command", SyncAggregator::kJoinAtCommand}, {"round", "1"}}))
                      .ok());
    }
  }
  Round({0, 1, 2}, 1);
  std::vector<std::function<Status()>> fns = {[&] { return tier_->server(0).Finalize(); },
                                              [&] { return tier_->server(1).Finalize(); },
                                              [&] { return tier_->worker(0).Finalize(); },
                                              [&] { return again1.po->Finalize(); },
                                              [&] { return restarted_.po->Finalize(); }};
  for (const Status& s : RunConcurrently(fns)) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(tier_->SchedulerResult().ok());
  kv_[1].reset();
}

// Without admit_rejoins (failure_policy stop) a late registration is refused, saying what would allow it; the
// running tier is not disturbed.
TEST_P(RejoinTest, WithoutThePolicyARestartedWorkerIsRefused) {
  CommOptions o = RejoinOptions();
  o.admit_rejoins = false;
  o.heartbeat_timeout_ms = 60000;
  Build(o);
  KillWorker2();
  const Status s = RestartWorker2();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_TRUE(Contains(s, "registered after the tier was complete")) << s.ToString();
  EXPECT_TRUE(Contains(s, "failure_policy continue or wait")) << s.ToString();
  EXPECT_TRUE(tier_->worker(0).health().ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, RejoinTest, ::testing::Values("loopback", "zmq"));

}  // namespace
}  // namespace geomx::comm
