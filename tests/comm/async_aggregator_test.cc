// AsyncAggregator (comm/handlers/async_aggregator.h): updates applied on arrival without a barrier across
// senders, the staleness bound (faster senders wait, never a deadlock, never a staler update), init and pulls,
// and the refusals. One global tier: a server, the "data centres" as workers (one per party) and a master worker.
#include "comm/handlers/async_aggregator.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::FastOptions;
using testing::MakeSpec;
using testing::RunConcurrently;
using testing::TestTier;

constexpr uint64_t kLen = 8;

// SGD with lr 1 on one master copy per key: w -= sum / num_merged. Records the order of the updates.
class RecordingSink : public AsyncSink {
 public:
  bool Init(uint64_t wk, std::span<const float> w) override {
    return weights_.try_emplace(wk, w.begin(), w.end()).second;
  }
  bool HasWeights(uint64_t wk) const override { return weights_.count(wk) > 0; }
  Result<Bytes> Apply(uint64_t wk, int sender, int64_t round, std::span<const float> sum, int num_merged) override {
    std::vector<float>& w = weights_.at(wk);
    for (size_t i = 0; i < w.size(); ++i) w[i] -= sum[i] / static_cast<float>(num_merged);
    order.emplace_back(sender, round);
    return Bytes::Copy(w.data(), w.size() * sizeof(float));
  }
  Result<Bytes> Read(uint64_t wk, int sender) override {
    reads.push_back(sender);
    const std::vector<float>& w = weights_.at(wk);
    return Bytes::Copy(w.data(), w.size() * sizeof(float));
  }
  std::vector<std::pair<int, int64_t>> order;  // (sender, round) in application order
  std::vector<int> reads;

 private:
  std::map<uint64_t, std::vector<float>> weights_;
};

class AsyncAggregatorTest : public ::testing::Test {
 protected:
  // `dcs` senders dc-a, dc-b, ... as workers 0..dcs-1 of the tier, the master worker last.
  void Build(int dcs, int max_staleness, int64_t last_round = -1) {
    t_ = testing::MakeTransport("loopback");
    const CommOptions o = FastOptions();
    layout_ = KeyLayout::Build({{0, kLen}}, 1, o.split_bytes).value();
    TierSpec spec = MakeSpec(*t_, "global", 1, dcs + 1, o);
    spec.scheduler_party = "central";
    std::vector<std::string> parties;
    AsyncAggregatorOptions opts;
    for (int d = 0; d < dcs; ++d) {
      parties.push_back(std::string("dc-") + static_cast<char>('a' + d));
      spec.worker_names.push_back(parties.back() + "/server0");
      opts.senders.push_back(parties.back());
    }
    parties.push_back("central");
    spec.worker_names.push_back("central/master");
    spec.server_names.push_back("global/server0");
    opts.max_staleness = max_staleness;
    opts.last_round = last_round;
    tier_ = std::make_unique<TestTier>(*t_, spec, parties);
    agg_ = AsyncAggregator::Create(layout_, opts, &sink_).value();
    server_ = std::make_unique<KvServer>(&tier_->server(0), 0, agg_.get());
    for (int w = 0; w <= dcs; ++w) kvs_.push_back(std::make_unique<KvWorker>(&tier_->worker(w), 0, layout_));
    ASSERT_TRUE(tier_->Start().ok());
    std::vector<std::function<Status()>> barrier;
    for (Postoffice* po : tier_->all()) barrier.push_back([po] { return po->Barrier("all"); });
    for (const Status& s : RunConcurrently(barrier)) ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<float> init(kLen, 0.0f);
    const float* v = init.data();
    ASSERT_TRUE(master().Wait(master().Push(keys_, {&v, 1}, kInitRound)).ok());
  }

  void TearDown() override {
    if (tier_) {
      EXPECT_TRUE(tier_->Finalize().ok());
    }
    kvs_.clear();
    server_.reset();
    agg_.reset();
    tier_.reset();
  }

  KvWorker& dc(int d) { return *kvs_[d]; }
  KvWorker& master() { return *kvs_.back(); }

  // Blocking update of key 0 from data centre d: gradient sum `g` of one worker; returns the answer.
  Result<std::vector<float>> Push(int d, int64_t round, float g = 1.0f) {
    std::vector<float> grad(kLen, g), out(kLen);
    const float* v = grad.data();
    float* o = out.data();
    GEOMX_RETURN_IF_ERROR(dc(d).Wait(dc(d).PushPull(keys_, {&v, 1}, {&o, 1}, round)));
    return out;
  }

  // Waits (bounded) until the aggregator holds `n` updates back.
  bool WaitForWaiting(size_t n) {
    for (int i = 0; i < 2000 && agg_->num_waiting() != n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return agg_->num_waiting() == n;
  }

  std::unique_ptr<testing::Transport> t_;
  KeyLayout layout_;
  std::vector<uint64_t> keys_ = {0};
  RecordingSink sink_;
  std::unique_ptr<TestTier> tier_;
  std::unique_ptr<AsyncAggregator> agg_;
  std::unique_ptr<KvServer> server_;
  std::vector<std::unique_ptr<KvWorker>> kvs_;
};

TEST_F(AsyncAggregatorTest, AppliesEachUpdateOnArrivalWithoutWaitingForOtherDataCentres) {
  Build(2, /*max_staleness=*/0);
  for (int64_t r = 0; r < 5; ++r) {
    auto w = Push(0, r);  // dc-b never pushes: with a barrier this would block
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_FLOAT_EQ((*w)[0], -static_cast<float>(r + 1));
  }
  AsyncAggregatorStats s = agg_->stats();
  EXPECT_EQ(s.applied, 5);
  EXPECT_EQ(s.ahead_of_others, 5);
  EXPECT_EQ(s.max_staleness, 0);  // dc-a always read its own last update
  auto b = Push(1, 0);
  ASSERT_TRUE(b.ok());
  EXPECT_FLOAT_EQ((*b)[0], -6.0f);
  s = agg_->stats();
  EXPECT_EQ(s.max_staleness, 5);  // dc-b's gradient was computed at version 0, applied at version 5
  EXPECT_EQ(s.applied_by_sender, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(s.waited, 0);
}

TEST_F(AsyncAggregatorTest, BoundMakesTheFasterDataCentreWait) {
  Build(2, /*max_staleness=*/1);
  ASSERT_TRUE(Push(0, 0).ok());  // version 1; dc-b still at 0
  // dc-a's next update would leave dc-b 2 updates behind: it waits.
  std::vector<float> grad(kLen, 1.0f), out(kLen);
  const float* v = grad.data();
  float* o = out.data();
  std::atomic<bool> answered{false};
  Status answer_status;
  dc(0).PushPull(keys_, {&v, 1}, {&o, 1}, 1, [&](Status s) {
    answer_status = s;
    answered = true;
  });
  ASSERT_TRUE(WaitForWaiting(1));
  EXPECT_FALSE(answered.load());
  ASSERT_TRUE(Push(1, 0).ok());  // dc-b's update (staleness 1) releases dc-a's
  for (int i = 0; i < 2000 && !answered.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(answered.load());
  EXPECT_TRUE(answer_status.ok()) << answer_status.ToString();
  EXPECT_FLOAT_EQ(out[0], -3.0f);
  const AsyncAggregatorStats s = agg_->stats();
  EXPECT_EQ(s.applied, 3);
  EXPECT_EQ(s.waited, 1);
  EXPECT_EQ(s.max_staleness, 1);
  EXPECT_EQ(sink_.order, (std::vector<std::pair<int, int64_t>>{{0, 0}, {1, 0}, {0, 1}}));
}

// Three data centres at different speeds push concurrently: with the bound no applied update is staler than it,
// everything is applied (no deadlock), and without it the fast data centres run ahead.
class AsyncAggregatorBoundTest : public AsyncAggregatorTest, public ::testing::WithParamInterface<int> {};

TEST_P(AsyncAggregatorBoundTest, ConcurrentDataCentresNeverExceedTheBound) {
  const int bound = GetParam();
  constexpr int kRounds = 30;
  Build(3, bound, kRounds - 1);
  std::vector<std::function<Status()>> dcs;
  for (int d = 0; d < 3; ++d) {
    dcs.push_back([this, d]() -> Status {
      std::mt19937 rng(static_cast<unsigned>(d + 1));
      for (int64_t r = 0; r < kRounds; ++r) {
        // dc-c is the slow one; the others jitter.
        std::this_thread::sleep_for(std::chrono::microseconds(d == 2 ? 2000 : rng() % 500));
        GEOMX_RETURN_IF_ERROR(Push(d, r).status());
      }
      return Status::Ok();
    });
  }
  for (const Status& s : RunConcurrently(dcs)) ASSERT_TRUE(s.ok()) << s.ToString();
  const AsyncAggregatorStats s = agg_->stats();
  EXPECT_EQ(s.applied, 3 * kRounds);
  EXPECT_EQ(agg_->num_waiting(), 0u);
  if (bound > 0) {
    EXPECT_LE(s.max_staleness, bound);
    for (const auto& [staleness, n] : s.staleness_histogram) EXPECT_LE(staleness, bound) << n << " updates";
  }
  EXPECT_GT(s.ahead_of_others, 0);  // no barrier between data centres
  // Every data centre's update was applied in its round order.
  std::vector<int64_t> next(3, 0);
  for (const auto& [d, r] : sink_.order) EXPECT_EQ(r, next[d]++);
}

INSTANTIATE_TEST_SUITE_P(Bounds, AsyncAggregatorBoundTest, ::testing::Values(0, 2, 3));

TEST_F(AsyncAggregatorTest, InitialPullWaitsForTheInitPushAndCountsAsARead) {
  Build(2, 1);
  // The init push happened in Build; a pull of round -1 is answered with the weights and is dc-b's read.
  ASSERT_TRUE(Push(0, 0).ok());  // version 1
  std::vector<float> out(kLen);
  float* o = out.data();
  ASSERT_TRUE(dc(1).Wait(dc(1).Pull(keys_, {&o, 1}, kInitRound)).ok());
  EXPECT_FLOAT_EQ(out[0], -1.0f);
  EXPECT_EQ(sink_.reads, (std::vector<int>{1}));
  // dc-b has read version 1, so dc-a may go one further without waiting.
  ASSERT_TRUE(Push(0, 1).ok());
  EXPECT_EQ(agg_->stats().waited, 0);
}

TEST_F(AsyncAggregatorTest, AFresherReadReleasesAHeldBackUpdate) {
  Build(2, 1);
  ASSERT_TRUE(Push(0, 0).ok());
  std::vector<float> grad(kLen, 1.0f), out(kLen), pulled(kLen);
  const float* v = grad.data();
  float* o = out.data();
  std::atomic<bool> answered{false};
  dc(0).PushPull(keys_, {&v, 1}, {&o, 1}, 1, [&](Status) { answered = true; });
  ASSERT_TRUE(WaitForWaiting(1));
  float* p = pulled.data();
  ASSERT_TRUE(dc(1).Wait(dc(1).Pull(keys_, {&p, 1}, 0)).ok());  // dc-b reads version 1
  for (int i = 0; i < 2000 && !answered.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(answered.load());
  EXPECT_EQ(agg_->num_waiting(), 0u);
  EXPECT_EQ(agg_->stats().max_staleness, 0);
}

TEST_F(AsyncAggregatorTest, RefusesBadPushes) {
  Build(2, 0, /*last_round=*/9);
  ASSERT_TRUE(Push(0, 3).ok());
  auto repeated = Push(0, 3);
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("late or repeated push"), std::string::npos)
      << repeated.status().ToString();
  EXPECT_FALSE(Push(0, 2).ok());
  auto beyond = Push(1, 10);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.status().message().find("rounds 0..9"), std::string::npos) << beyond.status().ToString();
  // The master worker is not a data centre: its round >= 0 pushes are not updates.
  std::vector<float> grad(kLen, 1.0f);
  const float* v = grad.data();
  Status s = master().Wait(master().Push(keys_, {&v, 1}, 0));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not one of the data centres"), std::string::npos) << s.ToString();
  // Wrong codec.
  RawRequest raw;
  raw.command = Command::kPush;
  raw.codec = "gx";
  raw.round = 4;
  raw.wire_keys = {layout_.slices(0)[0].wire_key};
  raw.payloads = {Bytes::Copy(grad.data(), 4)};
  auto r = dc(1).RequestRaw(raw);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("codec 'gx'"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(agg_->stats().applied, 1);  // refused requests changed nothing
}

TEST(AsyncAggregatorCreateTest, RefusesABoundThatCannotBeKept) {
  RecordingSink sink;
  KeyLayout layout = KeyLayout::Build({{0, kLen}}, 1, 256).value();
  AsyncAggregatorOptions o;
  o.senders = {"dc-a", "dc-b", "dc-c"};
  o.max_staleness = 1;
  auto r = AsyncAggregator::Create(layout, o, &sink);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("use at least 2"), std::string::npos) << r.status().ToString();
  o.max_staleness = -1;
  EXPECT_FALSE(AsyncAggregator::Create(layout, o, &sink).ok());
  o.max_staleness = 2;
  EXPECT_TRUE(AsyncAggregator::Create(layout, o, &sink).ok());
  o.senders.clear();
  EXPECT_FALSE(AsyncAggregator::Create(layout, o, &sink).ok());
  o.senders = {"dc-a"};
  o.reducer = "no-such-reducer";
  EXPECT_EQ(AsyncAggregator::Create(layout, o, &sink).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace geomx::comm
