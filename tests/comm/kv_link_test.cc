// KvLink (comm/kv_link.h): the one place where a sender compresses and decompresses, and where P3's slicing and
// priority queue act. On a real tier (loopback or inproc ZeroMQ): dense and FP16 links give the aggregate the
// servers computed (exactly / within FP16 rounding); P3 sends the lower keys first; malformed answers are
// kDataLoss, never garbage in the caller's buffers.
#include "comm/kv_link.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/compression/compressor.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/request_checks.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/codec.h"
#include "comm/kv_server.h"
#include "ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::MakeSpec;
using testing::TestTier;

// Key 0: 7 floats, key 1: 3 floats; split_bytes 12 cuts key 0 into 3 slices of 3, 2 and 2 (key_layout.h).
std::vector<KeySpec> Keys() { return {{0, 7, true}, {1, 3, true}}; }

class KvLinkTest : public ::testing::TestWithParam<std::string> {
 protected:
  // A tier with one server running `handler` and two workers, each with a KvLink of `codec` / `send`.
  void Start(ServerHandler* handler, TierCodec codec, SendPathOptions send = {}) {
    CommOptions o = testing::FastOptions();
    o.split_bytes = 12;
    layout_ = KeyLayout::Build(Keys(), 1, o.split_bytes).value();
    tier_ = std::make_unique<TestTier>(*t_, MakeSpec(*t_, "dc", 1, 2, o));
    server_ = std::make_unique<KvServer>(&tier_->server(0), 0, handler);
    for (int w = 0; w < 2; ++w) {
      kvs_.push_back(std::make_unique<KvWorker>(&tier_->worker(w), 0, layout_));
      links_.push_back(KvLink::Create(kvs_.back().get(), codec, send).value());
    }
    ASSERT_TRUE(tier_->Start().ok());
  }
  void TearDown() override {
    if (tier_) {
      EXPECT_TRUE(tier_->Finalize().ok());
    }
    links_.clear();
    kvs_.clear();
    server_.reset();
  }
  // Both workers PushPull (a, b) concurrently; returns each one's answer (7 + 3 floats). as_bytes: through the
  // call that takes the values as shared buffers.
  std::vector<std::vector<float>> PushPullBoth(const std::vector<std::vector<float>>& values, bool as_bytes = false) {
    std::vector<std::vector<float>> out(2, std::vector<float>(10));
    std::vector<std::function<Status()>> calls;
    for (int w = 0; w < 2; ++w) {
      calls.push_back([&, w, as_bytes] {
        const uint64_t keys[] = {0, 1};
        float* outs[] = {out[w].data(), out[w].data() + 7};
        if (as_bytes) {
          const Bytes in[] = {Bytes::Copy(values[w].data(), 7 * sizeof(float)),
                              Bytes::Copy(values[w].data() + 7, 3 * sizeof(float))};
          return links_[w]->PushPull(keys, in, outs, 0);
        }
        const float* in[] = {values[w].data(), values[w].data() + 7};
        return links_[w]->PushPull(keys, in, outs, 0);
      });
    }
    for (const Status& s : testing::RunConcurrently(calls)) EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  std::unique_ptr<testing::Transport> t_ = testing::MakeTransport(GetParam());
  KeyLayout layout_;
  std::unique_ptr<TestTier> tier_;
  std::unique_ptr<KvServer> server_;
  std::vector<std::unique_ptr<KvWorker>> kvs_;
  std::vector<std::unique_ptr<KvLink>> links_;
};

std::vector<std::vector<float>> TwoWorkersValues() {
  std::vector<std::vector<float>> v(2, std::vector<float>(10));
  for (int w = 0; w < 2; ++w) {
    for (int i = 0; i < 10; ++i) v[w][i] = 0.37f * (i + 1) * (w == 0 ? 1.0f : -0.5f) + 0.01f * w;
  }
  return v;
}

TEST_P(KvLinkTest, DenseLinkGivesTheExactMean) {
  StoreSink mean;
  auto agg = SyncAggregator::Create(KeyLayout::Build(Keys(), 1, 12).value(), {.expected_senders = 2}, &mean).value();
  Start(agg.get(), TierCodec{});
  const auto v = TwoWorkersValues();
  for (const auto& got : PushPullBoth(v)) {
    for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(got[i], (v[0][i] + v[1][i]) / 2) << i;
  }
}

// Values as shared buffers (the trainer's zero-copy call): the same mean as float pointers, on a dense link
// (KvWorker sends the buffers themselves) and on a compressed one (encoded as usual); a buffer of the wrong size is
// refused before anything is sent.
TEST_P(KvLinkTest, BufferValuesGiveTheSameAnswersAndWrongSizesAreRefused) {
  for (const bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "dense");
    LinkSchemes schemes;
    if (fp16) schemes.worker_to_local = schemes.local_to_worker = LinkScheme::kFp16;
    const TierCodec codec = MakeLinkPlan(schemes, LinkParams{}).local;
    StoreSink mean;
    SyncAggregatorOptions opts{.expected_senders = 2};
    opts.tier = codec;
    auto agg = SyncAggregator::Create(KeyLayout::Build(Keys(), 1, 12).value(), opts, &mean).value();
    Start(agg.get(), codec);
    const auto v = TwoWorkersValues();
    for (const auto& got : PushPullBoth(v, /*as_bytes=*/true)) {
      for (int i = 0; i < 10; ++i) EXPECT_NEAR(got[i], (v[0][i] + v[1][i]) / 2, fp16 ? 2e-3f : 0.0f) << i;
    }
    const uint64_t keys[] = {0, 1};
    const Bytes short_value[] = {Bytes::Copy(v[0].data(), 6 * sizeof(float)), Bytes::Copy(v[0].data(), 12)};
    std::vector<float> out(10, -7.0f);
    float* outs[] = {out.data(), out.data() + 7};
    const Status s = links_[0]->PushPull(keys, short_value, outs, 1);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("key 0 has 7 floats, got 24 bytes"), std::string::npos) << s.ToString();
    EXPECT_EQ(out, std::vector<float>(10, -7.0f));
    TearDown();
    tier_.reset();
    t_ = testing::MakeTransport(GetParam());
  }
}

// FP16 both ways: the aggregator decodes the frames (the sink sees the dense sum) and encodes its answer.
TEST_P(KvLinkTest, Fp16LinkDecodesAndEncodesAtTheEnds) {
  LinkSchemes schemes;
  schemes.worker_to_local = schemes.local_to_worker = LinkScheme::kFp16;
  const TierCodec codec = MakeLinkPlan(schemes, LinkParams{}).local;
  ASSERT_TRUE(codec.compressed);
  std::mutex mu;
  std::vector<size_t> seen_sizes;
  FunctionSink sink([&](uint64_t, int64_t, Bytes sum, int n, AggregateDone done) {
    {
      std::lock_guard<std::mutex> lock(mu);
      seen_sizes.push_back(sum.size() / sizeof(float));  // dense floats, whatever travelled
    }
    std::vector<float> m(sum.count<float>());
    for (size_t i = 0; i < m.size(); ++i) m[i] = sum.as<float>()[i] / static_cast<float>(n);
    done(Status::Ok(), Bytes::CopyVector(m));
  });
  SyncAggregatorOptions opts{.expected_senders = 2};
  opts.tier = codec;
  auto agg = SyncAggregator::Create(KeyLayout::Build(Keys(), 1, 12).value(), opts, &sink).value();
  Start(agg.get(), codec);
  const auto v = TwoWorkersValues();
  for (const auto& got : PushPullBoth(v)) {
    for (int i = 0; i < 10; ++i) EXPECT_NEAR(got[i], (v[0][i] + v[1][i]) / 2, 2e-3f) << i;
  }
  std::sort(seen_sizes.begin(), seen_sizes.end());
  EXPECT_EQ(seen_sizes, (std::vector<size_t>{2, 2, 3, 3}));  // key 0 in 3 nearly equal slices, key 1 whole
}

// Each worker's KvWorker::SetLoss travels with its pushes; the aggregator gives the sink the round's mean once,
// before the round's first completion. A loss that is not a number is refused.
TEST_P(KvLinkTest, TheRoundsMeanLossReachesTheSinkOnce) {
  struct LossSink : StoreSink {
    void OnLoss(int64_t round, double mean) override {
      std::lock_guard<std::mutex> lock(mu);
      seen.emplace_back(round, mean);
    }
    std::mutex mu;
    std::vector<std::pair<int64_t, double>> seen;
  } sink;
  auto agg = SyncAggregator::Create(KeyLayout::Build(Keys(), 1, 12).value(), {.expected_senders = 2}, &sink).value();
  Start(agg.get(), TierCodec{});
  kvs_[0]->SetLoss(2.0);
  kvs_[1]->SetLoss(4.5);
  PushPullBoth(TwoWorkersValues());  // 4 wire keys complete in round 0
  std::lock_guard<std::mutex> lock(sink.mu);
  ASSERT_EQ(sink.seen.size(), 1u);
  EXPECT_EQ(sink.seen[0].first, 0);
  EXPECT_DOUBLE_EQ(sink.seen[0].second, 3.25);
}

TEST(RequestChecksTest, ParseLossReadsTheFieldAndRefusesWhatIsNotAFiniteNumber) {
  EXPECT_FALSE(ParseLoss("").value().has_value());
  EXPECT_FALSE(ParseLoss(EncodeFields({{kNumMergedField, "3"}})).value().has_value());
  EXPECT_DOUBLE_EQ(*ParseLoss(EncodeFields({{kLossField, "0.125"}})).value(), 0.125);
  for (const char* bad : {"nan", "inf", "1.5x", "", "abc"}) {
    Result<std::optional<double>> r = ParseLoss(EncodeFields({{kLossField, bad}}));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
}

// Answers every request with `answer(req)`, recording the wire keys in arrival order.
class ScriptedHandler : public ServerHandler {
 public:
  explicit ScriptedHandler(std::function<std::vector<Bytes>(const KvRequest&)> answer) : answer_(std::move(answer)) {}
  void Handle(const KvRequest& req, KvServer& server) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint64_t wk : req.meta.keys) order_.push_back(wk);
    }
    server.Respond(req, answer_(req));
  }
  std::vector<uint64_t> order() {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }

 private:
  std::function<std::vector<Bytes>(const KvRequest&)> answer_;
  std::mutex mu_;
  std::vector<uint64_t> order_;
};

TEST_P(KvLinkTest, P3SendsOneSliceAtATimeLowerKeysFirst) {
  ScriptedHandler echo([](const KvRequest& req) { return req.data; });
  Start(&echo, TierCodec{}, SendPathOptions{.p3 = true, .max_in_flight_bytes = 4});  // one slice in flight
  std::vector<float> a(7, 1.0f), b(3, 2.0f), out_a(7), out_b(3);
  const uint64_t keys[] = {1, 0};  // key 1 queued first, key 0 overtakes it
  const float* in[] = {b.data(), a.data()};
  float* outs[] = {out_b.data(), out_a.data()};
  std::mutex mu;
  std::vector<size_t> completed;
  std::condition_variable cv;
  links_[0]->PushPullAsync(keys, in, outs, 0, [&](size_t i, Status s) {
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::lock_guard<std::mutex> lock(mu);
    completed.push_back(i);
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return completed.size() == 2; }));
  }
  EXPECT_EQ(out_a, a);
  EXPECT_EQ(out_b, b);
  // One request per slice; after the first (which may leave before key 0 is queued), key 0's slices come first.
  std::vector<uint64_t> order = echo.order();
  ASSERT_EQ(order.size(), 4u);
  if (KeyOfWireKey(order[0]) == 1) order.erase(order.begin());
  for (size_t i = 0; i + 1 < order.size(); ++i) EXPECT_LE(KeyOfWireKey(order[i]), KeyOfWireKey(order[i + 1]));
}

TEST_P(KvLinkTest, MalformedAnswersAreDataLossAndLeaveTheOutputAlone) {
  ScriptedHandler wrong([](const KvRequest& req) {
    std::vector<Bytes> out;
    for (size_t i = 0; i < req.meta.keys.size(); ++i) out.push_back(Bytes::CopyVector(std::vector<float>{9.0f}));
    return out;
  });
  LinkSchemes schemes;
  schemes.worker_to_local = LinkScheme::kFp16;
  const TierCodec compressed = MakeLinkPlan(schemes, LinkParams{}).local;
  Start(&wrong, GetParam() == "zmq" ? compressed : TierCodec{});  // a 4-byte answer is neither f32 nor a frame
  std::vector<float> b(3, 2.0f), out(3, -1.0f);
  const uint64_t keys[] = {1};
  const float* in[] = {b.data()};
  float* outs[] = {out.data()};
  Status s = links_[0]->PushPull(keys, in, outs, 0);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(out, (std::vector<float>(3, -1.0f)));
  // Unknown keys are refused before anything is sent.
  const uint64_t bad[] = {42};
  EXPECT_EQ(links_[0]->PushPull(bad, in, outs, 0).code(), StatusCode::kInvalidArgument);
}

// A relay (TSEngine's worker side, KvLink::SetRelay) takes every slice of a push-pull of a round >= 0 instead of
// the tier: it sees each slice's values with its wire key, round and num_merged, and what it answers is written
// into the outputs (a wrong-length answer: kDataLoss, the output untouched). Initial pushes and pulls still go to
// the server. A relay is refused on a compressed link and on one with P3.
TEST_P(KvLinkTest, ARelayTakesThePushPullsOfRoundsSliceBySlice) {
  struct Seen {
    uint64_t wire_key;
    int64_t round;
    std::vector<float> values;
    int merged;
  };
  class Relay : public AggregateSink {
   public:
    void OnComplete(uint64_t wire_key, int64_t round, Bytes slice, int merged, AggregateDone done) override {
      std::vector<float> v(slice.as<float>(), slice.as<float>() + slice.count<float>());
      seen.push_back({wire_key, round, v, merged});
      if (short_answer) v.pop_back();
      for (float& x : v) x = 2 * x + 1;
      done(Status::Ok(), Bytes::CopyVector(v));
    }
    std::vector<Seen> seen;
    bool short_answer = false;
  } relay;
  StoreSink mean;
  auto agg = SyncAggregator::Create(KeyLayout::Build(Keys(), 1, 12).value(), {.expected_senders = 2}, &mean).value();
  Start(agg.get(), TierCodec{});
  ASSERT_TRUE(links_[0]->SetRelay(&relay).ok());
  const auto v = TwoWorkersValues();
  const uint64_t keys[] = {0, 1};
  const float* in[] = {v[0].data(), v[0].data() + 7};
  std::vector<float> out(10, -1.0f);
  float* outs[] = {out.data(), out.data() + 7};
  ASSERT_TRUE(links_[0]->PushPull(keys, in, outs, 3).ok());
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(out[i], 2 * v[0][i] + 1) << i;
  // Key 0's three slices and key 1's one, each with its own values.
  ASSERT_EQ(relay.seen.size(), 4u);
  for (size_t j = 0; j < 4; ++j) {
    const uint64_t key = j < 3 ? 0 : 1;
    const KeySlice& s = layout_.slices(key)[j < 3 ? j : 0];
    EXPECT_EQ(relay.seen[j].wire_key, s.wire_key) << j;
    EXPECT_EQ(relay.seen[j].round, 3);
    EXPECT_EQ(relay.seen[j].merged, 1);
    const auto first = v[0].begin() + (key == 0 ? 0 : 7) + s.offset;
    EXPECT_EQ(relay.seen[j].values, std::vector<float>(first, first + s.length)) << j;
  }
  // Initial values travel to the server and back as before.
  ASSERT_TRUE(links_[0]->Push(keys, in, kInitRound).ok());
  std::vector<float> initial(10, -1.0f);
  float* initial_outs[] = {initial.data(), initial.data() + 7};
  ASSERT_TRUE(links_[0]->Pull(keys, initial_outs, kInitRound).ok());
  EXPECT_EQ(initial, v[0]);
  EXPECT_EQ(relay.seen.size(), 4u);
  // An answer of the wrong length.
  relay.short_answer = true;
  std::fill(out.begin(), out.end(), -1.0f);
  EXPECT_EQ(links_[0]->PushPull(keys, in, outs, 4).code(), StatusCode::kDataLoss);
  EXPECT_EQ(out[9], -1.0f);
  // Where a relay cannot go.
  LinkSchemes schemes;
  schemes.worker_to_local = LinkScheme::kFp16;
  auto fp16 = KvLink::Create(kvs_[1].get(), MakeLinkPlan(schemes, LinkParams{}).local).value();
  EXPECT_EQ(fp16->SetRelay(&relay).code(), StatusCode::kFailedPrecondition);
  auto p3 = KvLink::Create(kvs_[1].get(), TierCodec{}, {.p3 = true}).value();
  EXPECT_EQ(p3->SetRelay(&relay).code(), StatusCode::kFailedPrecondition);
}

INSTANTIATE_TEST_SUITE_P(Transports, KvLinkTest, ::testing::Values("loopback", "zmq"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace geomx::comm
