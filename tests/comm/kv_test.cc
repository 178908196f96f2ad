// KvWorker + KvServer + SyncAggregator inside one tier (2 servers, 2 workers), over LoopbackVan and inproc ZmqVan.
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "comm/codec.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/payloads.h"
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

constexpr int kDense = 0;   // app ids
constexpr int kRows = 1;
constexpr int kConcat = 2;

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

// Keys: 0 (10 floats), 1 (200 floats: 4 slices of 50 over both servers with split_bytes 256), 2 (64), 3 (1).
std::vector<KeySpec> DenseKeys() { return {{0, 10}, {1, 200}, {2, 64}, {3, 1}}; }

// A dc tier with every server running three aggregators (sum/mean, row_sparse, concat) and every worker three
// KvWorkers.
class KvTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { Build(FastOptions()); }

  void Build(CommOptions options) {
    t_->Renew();
    tier_ = std::make_unique<TestTier>(*t_, MakeSpec(*t_, "dc-a", 2, 2, options));
    dense_layout_ = KeyLayout::Build(DenseKeys(), 2, options.split_bytes).value();
    raw_layout_ = KeyLayout::Build({{10, 64, false}, {11, 64, false}}, 2, options.split_bytes).value();
    for (int r = 0; r < 2; ++r) {
      Postoffice& po = tier_->server(r);
      SyncAggregatorOptions mean{.expected_senders = 2, .reducer = "sum"};
      mean.on_control = [this, r](const KvRequest& req) {
        std::lock_guard<std::mutex> lock(control_mu_);
        controls_[r] = req.meta.body;
        return Status::Ok();
      };
      aggs_.push_back(SyncAggregator::Create(dense_layout_, mean, &store_).value());
      aggs_.push_back(
          SyncAggregator::Create(raw_layout_, {.expected_senders = 2, .reducer = "row_sparse"}, &identity_).value());
      aggs_.push_back(
          SyncAggregator::Create(raw_layout_, {.expected_senders = 2, .reducer = "concat"}, &identity_).value());
      servers_.push_back(std::make_unique<KvServer>(&po, kDense, aggs_[aggs_.size() - 3].get()));
      servers_.push_back(std::make_unique<KvServer>(&po, kRows, aggs_[aggs_.size() - 2].get()));
      servers_.push_back(std::make_unique<KvServer>(&po, kConcat, aggs_[aggs_.size() - 1].get()));
    }
    for (int r = 0; r < 2; ++r) {
      dense_.push_back(std::make_unique<KvWorker>(&tier_->worker(r), kDense, dense_layout_));
      rows_.push_back(std::make_unique<KvWorker>(&tier_->worker(r), kRows, raw_layout_));
      concat_.push_back(std::make_unique<KvWorker>(&tier_->worker(r), kConcat, raw_layout_));
    }
    const Status started = tier_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    std::vector<std::function<Status()>> fns;
    for (Postoffice* po : tier_->all()) fns.push_back([po] { return po->Barrier("all"); });
    for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void TearDown() override {
    dense_.clear();
    rows_.clear();
    concat_.clear();
    servers_.clear();
    if (tier_ && tier_->worker(0).health().ok()) {
      EXPECT_TRUE(tier_->Finalize().ok());
    }
    tier_.reset();
  }

  // Worker w's gradient for key k in round r: small multiples of 0.25, so sums and means are exact.
  static std::vector<float> Grad(int w, uint64_t k, int64_t r, uint64_t n) {
    std::vector<float> g(n);
    for (uint64_t j = 0; j < n; ++j) g[j] = static_cast<float>((w + 1) * (r + 2)) + 0.25f * static_cast<float>(j % 7) + k;
    return g;
  }

  // Both workers PushPull every dense key for `round`; each must get the mean.
  void RunMeanRound(int64_t round) {
    const std::vector<uint64_t> keys = {0, 1, 2, 3};
    std::vector<std::function<Status()>> fns;
    std::vector<std::vector<std::vector<float>>> outs(2, std::vector<std::vector<float>>(4));
    for (int w = 0; w < 2; ++w) {
      fns.push_back([&, w] {
        std::vector<std::vector<float>> grads;
        std::vector<const float*> in;
        std::vector<float*> out;
        for (size_t i = 0; i < keys.size(); ++i) {
          grads.push_back(Grad(w, keys[i], round, dense_layout_.length(keys[i])));
          outs[w][i].assign(grads.back().size(), -1.0f);
        }
        for (size_t i = 0; i < keys.size(); ++i) {
          in.push_back(grads[i].data());
          out.push_back(outs[w][i].data());
        }
        return dense_[w]->Wait(dense_[w]->PushPull(keys, in, out, round));
      });
    }
    for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
    for (int w = 0; w < 2; ++w) {
      for (size_t i = 0; i < keys.size(); ++i) {
        const auto a = Grad(0, keys[i], round, outs[w][i].size());
        const auto b = Grad(1, keys[i], round, outs[w][i].size());
        for (size_t j = 0; j < a.size(); ++j) ASSERT_EQ(outs[w][i][j], (a[j] + b[j]) / 2) << "key " << keys[i];
      }
    }
  }

  std::unique_ptr<testing::Transport> t_ = MakeTransport(GetParam());
  std::unique_ptr<TestTier> tier_;
  KeyLayout dense_layout_, raw_layout_;
  StoreSink store_;
  IdentitySink identity_;
  std::vector<std::unique_ptr<SyncAggregator>> aggs_;
  std::vector<std::unique_ptr<KvServer>> servers_;
  std::vector<std::unique_ptr<KvWorker>> dense_, rows_, concat_;
  std::mutex control_mu_;
  std::map<int, std::string> controls_;
};

TEST_P(KvTest, KeySplitAcrossBothServers) {
  std::set<int> ranks;
  for (const auto& s : dense_layout_.slices(1)) ranks.insert(s.server_rank);
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
}

TEST_P(KvTest, PushPullReturnsTheMeanInOneRoundTrip) {
  for (int64_t round = 0; round < 5; ++round) RunMeanRound(round);
  EXPECT_EQ(dense_[0]->num_pending(), 0u);
  for (const auto& a : aggs_) EXPECT_EQ(a->num_open_rounds(), 0u);
}

TEST_P(KvTest, ZeroCopyBytesValues) {
  // The Bytes overload sends slices of the caller's buffers without copying them.
  std::vector<std::function<Status()>> fns;
  std::vector<std::vector<float>> outs(2, std::vector<float>(200));
  for (int w = 0; w < 2; ++w) {
    fns.push_back([&, w] {
      const std::vector<Bytes> values = {Bytes::CopyVector(Grad(w, 1, 0, 200))};
      return dense_[w]->Wait(
          dense_[w]->PushPull(std::vector<uint64_t>{1}, values, std::vector<float*>{outs[w].data()}, 0));
    });
  }
  for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
  const auto a = Grad(0, 1, 0, 200), b = Grad(1, 1, 0, 200);
  for (size_t j = 0; j < a.size(); ++j) ASSERT_EQ(outs[1][j], (a[j] + b[j]) / 2);
  // Every server stores the mean of its own slices.
  for (const KeySlice& s : dense_layout_.slices(1)) {
    std::optional<Bytes> stored = aggs_[3 * s.server_rank]->Stored(s.wire_key);
    ASSERT_TRUE(stored.has_value());
    ASSERT_EQ(stored->size(), s.length * 4);
    float first;
    std::memcpy(&first, stored->data(), 4);
    EXPECT_EQ(first, (a[s.offset] + b[s.offset]) / 2);
  }
}

TEST_P(KvTest, PushThenPullAndInitialValues) {
  // worker1 asks for the initial value before anyone set it: the pull waits for worker0's init push.
  std::vector<float> init1(200), init3(1, 42.0f), got1(200, 0), got3(1, 0);
  for (size_t j = 0; j < init1.size(); ++j) init1[j] = 0.5f * j;
  const std::vector<uint64_t> keys = {1, 3};
  const int64_t pull = dense_[1]->Pull(keys, std::vector<float*>{got1.data(), got3.data()}, kInitRound);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_TRUE(dense_[0]->Wait(dense_[0]->Push(keys, std::vector<const float*>{init1.data(), init3.data()},
                                                kInitRound))
                  .ok());
  ASSERT_TRUE(dense_[1]->Wait(pull).ok());
  EXPECT_EQ(got1, init1);
  EXPECT_EQ(got3, init3);

  // Round 0 as push + pull: the pushes are acknowledged when the round completes, the pull gets the mean.
  std::vector<std::function<Status()>> fns;
  for (int w = 0; w < 2; ++w) {
    fns.push_back([&, w] {
      auto g = Grad(w, 3, 0, 1);
      return dense_[w]->Wait(dense_[w]->Push(std::vector<uint64_t>{3}, std::vector<const float*>{g.data()}, 0));
    });
  }
  for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
  float mean = 0;
  ASSERT_TRUE(dense_[0]->Wait(dense_[0]->Pull(std::vector<uint64_t>{3}, std::vector<float*>{&mean}, 0)).ok());
  EXPECT_EQ(mean, (Grad(0, 3, 0, 1)[0] + Grad(1, 3, 0, 1)[0]) / 2);
}

TEST_P(KvTest, RefusalsNameKeyAndRound) {
  RunMeanRound(0);
  float v = 1, out = 0;
  const std::vector<uint64_t> k3 = {3};
  // A push for a completed round.
  Status old = dense_[0]->Wait(dense_[0]->PushPull(k3, std::vector<const float*>{&v}, std::vector<float*>{&out}, 0));
  EXPECT_EQ(old.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(old, "key 3 slice 0, round 0: already completed")) << old.ToString();
  EXPECT_TRUE(Contains(old, "server dc-a/server")) << old.ToString();
  // A second push from the same worker for an open round.
  const int64_t first = dense_[0]->Push(k3, std::vector<const float*>{&v}, 1);
  Status dup = dense_[0]->Wait(dense_[0]->Push(k3, std::vector<const float*>{&v}, 1));
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(dup, "round 1: second push from worker dc-a/worker0")) << dup.ToString();
  ASSERT_TRUE(dense_[1]->Wait(dense_[1]->Push(k3, std::vector<const float*>{&v}, 1)).ok());
  EXPECT_TRUE(dense_[0]->Wait(first).ok());
  // Argument errors fail before anything is sent.
  Status unknown = dense_[0]->Wait(dense_[0]->Pull(std::vector<uint64_t>{99}, std::vector<float*>{&out}, 1));
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(unknown, "unknown key 99")) << unknown.ToString();
  // Wrong lengths and codecs reach the server through the raw API and are refused by it.
  RawRequest bad_len{.command = Command::kPushPull, .codec = "", .round = 2, .wire_keys = {WireKey(3, 0)},
                     .payloads = {Bytes::Copy("12345678")}};
  Result<std::vector<Bytes>> r = dense_[0]->RequestRaw(bad_len);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << "refused by the worker: 2 floats for 1";
  RawRequest bad_codec{.command = Command::kPushPull, .codec = "concat", .round = 2, .wire_keys = {WireKey(3, 0)},
                       .payloads = {Bytes::Copy("1234")}};
  r = dense_[0]->RequestRaw(bad_codec);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(r.status(), "codec 'concat', this server reduces with 'sum'")) << r.status().ToString();
  RawRequest bad_rows{.command = Command::kPush, .codec = "row_sparse", .round = 0, .wire_keys = {WireKey(10, 0)},
                      .payloads = {Bytes::Copy("not a row-sparse payload")}};
  r = rows_[0]->RequestRaw(bad_rows);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status(), "key 10 slice 0, round 0")) << r.status().ToString();
  // The tier still works.
  RunMeanRound(3);
}

TEST_P(KvTest, RequestTimeoutNamesPeerKeyAndTimestamp) {
  TearDown();
  CommOptions o = FastOptions();
  o.request_timeout_ms = 200;
  Build(o);
  // Only worker0 pushes: the round never completes and the server never answers.
  std::vector<float> g(200, 1.0f), out(200);
  const int64_t ts = dense_[0]->PushPull(std::vector<uint64_t>{1}, std::vector<const float*>{g.data()},
                                         std::vector<float*>{out.data()}, 0);
  const Status s = dense_[0]->Wait(ts);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(Contains(s, "no response from server dc-a/server")) << s.ToString();
  EXPECT_TRUE(Contains(s, "for key 1")) << s.ToString();
  EXPECT_TRUE(Contains(s, "ts=" + std::to_string(ts))) << s.ToString();
  EXPECT_TRUE(Contains(s, "after 0.2 s")) << s.ToString();
  // Callback requests time out too.
  std::promise<Status> done;
  dense_[0]->PushPull(std::vector<uint64_t>{0}, std::vector<const float*>{g.data()},
                      std::vector<float*>{out.data()}, 0, [&](Status st) { done.set_value(st); });
  EXPECT_EQ(done.get_future().get().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(dense_[0]->num_pending(), 0u);
}

TEST_P(KvTest, LostMessagesTimeOutInsteadOfHanging) {
  LoopbackNetwork* net = t_->loopback();
  if (net == nullptr) GTEST_SKIP() << "fault injection is a LoopbackVan feature";
  TearDown();
  CommOptions o = FastOptions();
  o.request_timeout_ms = 200;
  Build(o);
  RunMeanRound(0);
  net->SetOptions({.drop_rate = 1.0});
  std::vector<float> g(1, 1.0f), out(1);
  const Status lost = dense_[1]->Wait(dense_[1]->PushPull(std::vector<uint64_t>{3}, std::vector<const float*>{g.data()},
                                                          std::vector<float*>{out.data()}, 1));
  EXPECT_EQ(lost.code(), StatusCode::kDeadlineExceeded) << lost.ToString();
  EXPECT_TRUE(Contains(lost, "for key 3 (pushpull round 1, ts=")) << lost.ToString();
  net->SetOptions({});
  RunMeanRound(2);  // the next round works; round 1 of key 3 stays open (bounded by max_open_rounds)
}

TEST_P(KvTest, RowSparseAndConcatEndToEnd) {
  std::vector<std::function<Status()>> fns;
  std::vector<std::vector<Bytes>> results(2);
  for (int w = 0; w < 2; ++w) {
    fns.push_back([&, w] {
      const std::vector<uint64_t> rows = w == 0 ? std::vector<uint64_t>{3, 1} : std::vector<uint64_t>{1, 8};
      const std::vector<float> vals = w == 0 ? std::vector<float>{1, 2, 3, 4} : std::vector<float>{10, 20, 5, 5};
      RawRequest req{.command = Command::kPushPull, .codec = "row_sparse", .round = 0,
                     .wire_keys = {WireKey(10, 0)}, .payloads = {EncodeRowSparse(2, rows, vals)}};
      auto r = rows_[w]->RequestRaw(req);
      if (!r.ok()) return r.status();
      std::vector<Bytes> items = {Bytes::Copy("support-vectors-of-worker" + std::to_string(w))};
      RawRequest cat{.command = Command::kPushPull, .codec = "concat", .round = 0, .wire_keys = {WireKey(11, 0)},
                     .payloads = {EncodeRecords(items)}};
      auto c = concat_[w]->RequestRaw(cat);
      if (!c.ok()) return c.status();
      results[w] = {(*r)[0], (*c)[0]};
      return Status::Ok();
    });
  }
  for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
  for (int w = 0; w < 2; ++w) {
    auto rs = DecodeRowSparse(results[w][0]);
    ASSERT_TRUE(rs.ok());
    EXPECT_EQ(rs->rows, (std::vector<uint64_t>{1, 3, 8}));
    EXPECT_EQ(rs->values, (std::vector<float>{13, 24, 1, 2, 5, 5}));
    auto recs = DecodeRecords(results[w][1]);
    ASSERT_TRUE(recs.ok());
    ASSERT_EQ(recs->size(), 2u);
    EXPECT_EQ((*recs)[0].view(), "support-vectors-of-worker0");
    EXPECT_EQ((*recs)[1].view(), "support-vectors-of-worker1");
  }
}

TEST_P(KvTest, ControlReachesEveryServer) {
  const std::string body = EncodeFields({{"optimizer", "sgd"}, {"lr", "0.1"}});
  ASSERT_TRUE(dense_[0]->SendControl(body).ok());
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    EXPECT_EQ(controls_.size(), 2u);
    EXPECT_EQ(controls_[1], body);
  }
  const Status none = rows_[0]->SendControl(body);
  EXPECT_EQ(none.code(), StatusCode::kUnimplemented) << none.ToString();
}

TEST_P(KvTest, GarbageIsDroppedAndServingGoesOn) {
  Postoffice& server = tier_->server(0);
  const std::string server_ep = server.self().endpoint;
  const std::string worker_ep = tier_->worker(0).self().endpoint;
  const int worker_id = tier_->worker(0).my_id();
  std::vector<Message> bad;
  {
    Message m;  // wrong protocol version
    m.meta.version = 99;
    m.meta.command = Command::kPush;
    m.meta.sender = worker_id;
    bad.push_back(m);
    Message framing;  // 2 keys, 1 frame, wrong lens: answered with an error to a ts nobody waits for
    framing.meta.command = Command::kPushPull;
    framing.meta.sender = worker_id;
    framing.meta.timestamp = 123456;
    framing.meta.keys = {WireKey(0, 0), WireKey(2, 0)};
    framing.meta.lens = {10};
    framing.data = {Bytes::Copy("xyz")};
    bad.push_back(framing);
    Message stranger = framing;  // unknown sender
    stranger.meta.sender = 77;
    bad.push_back(stranger);
    Message no_app = framing;  // no customer for this app
    no_app.meta.app_id = 42;
    bad.push_back(no_app);
    Message response;  // a response where requests are expected, and vice versa
    response.meta.command = Command::kPull;
    response.meta.request = false;
    response.meta.sender = worker_id;
    response.meta.keys = {1, 2, 3};
    bad.push_back(response);
    Message table;  // a forged node table
    table.meta.command = Command::kNodeTable;
    table.meta.sender = kSchedulerId;
    table.meta.body = "\xa2garbage";
    bad.push_back(table);
  }
  if (LoopbackNetwork* net = t_->loopback()) {
    for (const std::string& ep : {server_ep, worker_ep}) {
      for (const Message& m : bad) net->InjectForTesting(ep, m);
      net->InjectForTesting(ep, Message(), Status::DataLoss("truncated frame"));
    }
  } else {
    // Over ZeroMQ: real bytes through a raw socket (garbage, truncated meta) plus well-formed bad messages.
    for (const std::string& ep : {server_ep, worker_ep}) {
      testing::SendRawFramesForTesting(
          *t_->zmq(), ep, {{"\xde\xad\xbe\xef", std::string("\x9e\x01", 2)}, {std::string()}, {"\x93\x01"}});
      testing::SendMessagesForTesting(*t_, ep, bad);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  RunMeanRound(0);
  RunMeanRound(1);
  EXPECT_TRUE(server.health().ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, KvTest, ::testing::Values("loopback", "zmq"));

}  // namespace
}  // namespace geomx::comm
