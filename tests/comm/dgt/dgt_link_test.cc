// DGT on a real tier (comm/dgt/dgt_link.h): a worker's KvLink with DGT pushes to a server whose DgtHandler
// assembles the blocks, over loopback vans that drop datagrams at a given rate (the reliable messages always
// arrive). Checked against values built by hand: what the server assembled is, block by block, either what was
// pushed or zeros; the reliable blocks always arrive; over the rounds, what arrived + the residual = what was
// pushed; without loss every answer is exact and no round waits for its deadline. Malformed payloads are refused.
#include "comm/dgt/dgt_link.h"

#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/codec.h"
#include "comm/datagram_socket.h"
#include "comm/handlers/forward_sink.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "tests/comm/dropping_van.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::MakeSpec;
using testing::TestTier;

class LossyTransport : public testing::Transport {
 public:
  explicit LossyTransport(double loss) : inner_(testing::MakeTransport("loopback")), loss_(loss) {}
  std::unique_ptr<Van> NewVan() override { return std::make_unique<testing::DatagramDroppingVan>(inner_->NewVan(), loss_, ++seed_); }
  std::string Address(const std::string& name) const override { return inner_->Address(name); }
  LoopbackNetwork* loopback() override { return inner_->loopback(); }

 private:
  std::unique_ptr<testing::Transport> inner_;
  const double loss_;
  uint64_t seed_ = 7;
};

// Answers a dense pushpull with the values it got (what DGT assembled), and keeps them.
class EchoHandler : public ServerHandler {
 public:
  void Handle(const KvRequest& req, KvServer& server) override {
    if (!req.meta.codec.empty()) return server.Respond(req, {}, Status::InvalidArgument("echo: dense only"));
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.emplace_back(req.data[0].as<float>(), req.data[0].as<float>() + req.data[0].count<float>());
    }
    server.Respond(req, req.data);
  }
  std::vector<std::vector<float>> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::vector<std::vector<float>> seen_;
};

constexpr size_t kElements = 30;  // 8 blocks of 4 (the last of 2)
constexpr size_t kBlock = 4;

DgtLinkOptions Options(double deadline_s) {
  DgtLinkOptions o;
  o.plan.block_elements = kBlock;
  o.plan.channels = 2;
  o.plan.k0 = 0.25f;
  o.plan.k_min = 0.25f;
  o.plan.adaptive_k = false;
  o.deadline_s = deadline_s;
  return o;
}

class DgtLinkTest : public ::testing::Test {
 protected:
  void Start(double loss, double deadline_s) {
    t_ = std::make_unique<LossyTransport>(loss);
    layout_ = KeyLayout::Build({{0, kElements, true}}, 1, 1 << 20).value();
    dgt_ = std::make_unique<DgtHandler>(&echo_, layout_, Options(deadline_s));
    tier_ = std::make_unique<TestTier>(*t_, MakeSpec(*t_, "dc", 1, 1));
    server_ = std::make_unique<KvServer>(&tier_->server(0), 0, dgt_.get());
    kv_ = std::make_unique<KvWorker>(&tier_->worker(0), 0, layout_);
    SendPathOptions send;
    send.dgt = Options(deadline_s);
    link_ = KvLink::Create(kv_.get(), TierCodec{}, send).value();
    ASSERT_TRUE(tier_->Start().ok());
  }
  void TearDown() override {
    if (tier_) {
      EXPECT_TRUE(tier_->Finalize().ok());
    }
    link_.reset();
    kv_.reset();
    server_.reset();
    dgt_.reset();
  }
  Result<std::vector<float>> PushPull(const std::vector<float>& values, int64_t round) {
    std::promise<Result<std::vector<float>>> p;
    link_->PushPullSlice(WireKey(0, 0), values, round, 1, [&](Status s, std::vector<float> out) {
      p.set_value(s.ok() ? Result<std::vector<float>>(std::move(out)) : Result<std::vector<float>>(s));
    });
    return p.get_future().get();
  }

  std::unique_ptr<LossyTransport> t_;
  KeyLayout layout_;
  EchoHandler echo_;
  std::unique_ptr<DgtHandler> dgt_;
  std::unique_ptr<TestTier> tier_;
  std::unique_ptr<KvServer> server_;
  std::unique_ptr<KvWorker> kv_;
  std::unique_ptr<KvLink> link_;
};

std::vector<float> RoundValues(int64_t round) {
  std::vector<float> v(kElements);
  // Blocks of distinct magnitudes (so the ranking is not all ties) that change sign with the round.
  for (size_t i = 0; i < kElements; ++i) {
    v[i] = static_cast<float>((1 + i / kBlock) * (round % 2 == 0 ? 1 : -1)) * 0.1f + 0.001f * static_cast<float>(i);
  }
  return v;
}

TEST_F(DgtLinkTest, WithoutLossEveryAnswerIsExactAndNoRoundWaits) {
  Start(/*loss=*/0, /*deadline_s=*/30);  // a round that waited for its deadline would hang the test for 30 s
  for (int64_t r = 0; r < 5; ++r) {
    const std::vector<float> v = RoundValues(r);
    Result<std::vector<float>> got = PushPull(v, r);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, v) << "round " << r;
  }
  EXPECT_EQ(dgt_->missing_blocks(), 0u);
  const std::vector<DgtChannelCounters> c = link_->dgt()->counters();
  ASSERT_EQ(c.size(), 3u);
  // k = 0.25 of the 7 ranked blocks -> 2 reliable, + the last block; the other 5 in 2 bins (3 and 2).
  EXPECT_EQ(c[0].blocks, 5u * 3);
  EXPECT_EQ(c[1].blocks + c[2].blocks, 5u * 5);
  EXPECT_EQ(c[0].lost + c[1].lost + c[2].lost, 0u);
  for (float x : link_->dgt()->residual(WireKey(0, 0))) EXPECT_EQ(x, 0.0f);
}

TEST_F(DgtLinkTest, LostBlocksArriveAsZerosAndComeBackThroughTheResidual) {
  Start(/*loss=*/0.4, /*deadline_s=*/0.005);
  std::vector<double> pushed_total(kElements, 0), arrived_total(kElements, 0);
  std::vector<float> residual_before(kElements, 0);
  int zero_blocks = 0;
  for (int64_t r = 0; r < 30; ++r) {
    const std::vector<float> v = RoundValues(r);
    Result<std::vector<float>> got = PushPull(v, r);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    // Block by block: what this round carried (values + the residual before it) or zeros.
    for (size_t b = 0; b * kBlock < kElements; ++b) {
      bool zero = true, exact = true;
      for (size_t i = b * kBlock; i < std::min(kElements, (b + 1) * kBlock); ++i) {
        zero = zero && (*got)[i] == 0.0f;
        exact = exact && std::fabs((*got)[i] - (v[i] + residual_before[i])) <= 1e-6f;
      }
      EXPECT_TRUE(zero || exact) << "round " << r << " block " << b;
      if (zero) ++zero_blocks;
      if (b == (kElements - 1) / kBlock) {
        EXPECT_TRUE(exact) << "the last block is reliable, round " << r;
      }
    }
    for (size_t i = 0; i < kElements; ++i) {
      pushed_total[i] += v[i];
      arrived_total[i] += (*got)[i];
    }
    residual_before = link_->dgt()->residual(WireKey(0, 0));
  }
  // The invariant: arrived + residual = pushed.
  for (size_t i = 0; i < kElements; ++i) {
    EXPECT_NEAR(arrived_total[i] + residual_before[i], pushed_total[i], 1e-4) << i;
  }
  const std::vector<DgtChannelCounters> c = link_->dgt()->counters();
  EXPECT_EQ(c[0].lost, 0u);                       // the reliable channel loses nothing
  EXPECT_GT(c[1].lost + c[2].lost, 10u);          // 30 rounds x 5 datagrams at 40 %: about 60
  EXPECT_LT(c[1].lost + c[2].lost, 110u);
  EXPECT_EQ(static_cast<uint64_t>(zero_blocks), c[1].lost + c[2].lost);
  EXPECT_EQ(dgt_->missing_blocks(), c[1].lost + c[2].lost);
}

TEST_F(DgtLinkTest, MalformedPayloadsAreRefused) {
  Start(0, 1);
  RawRequest bad;
  bad.command = Command::kPushPull;
  bad.codec = kDgtCodec;
  bad.wire_keys = {WireKey(0, 0)};
  bad.payloads = {Bytes::CopyVector(std::vector<uint32_t>{30, 9, 0})};  // 9 blocks claimed, none there
  Result<std::vector<Bytes>> r = kv_->RequestRaw(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("dgt payload"), std::string::npos) << r.status().ToString();
  // A key length that is not the layout's.
  std::vector<float> other(12, 1.0f);
  const uint32_t blocks[] = {0, 1, 2};
  bad.payloads = {EncodeDgtBlocks(kBlock, blocks, {}, other)};
  r = kv_->RequestRaw(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a slice"), std::string::npos) << r.status().ToString();
  // A garbage datagram is counted and dropped; the tier goes on.
  Message m;
  m.meta.command = Command::kPush;
  m.meta.app_id = 0;
  m.meta.codec = kDgtBlockCodec;
  m.meta.keys = {WireKey(0, 0)};
  m.data = {Bytes::CopyVector(std::vector<uint32_t>{99, 30, 0})};
  m.meta.lens = {static_cast<uint32_t>(m.data[0].size())};
  ASSERT_TRUE(tier_->worker(0).SendDatagram(tier_->server(0).my_id(), m).ok());
  Result<std::vector<float>> ok = PushPull(RoundValues(0), 0);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(dgt_->refused_blocks(), 1u);
}

// The local server's ForwardSink hands each round's mean loss to its upward link's DGT sender: k = max(k0 * loss /
// first loss, k_min), k0 0.8 and k_min 0.2 (the defaults).
TEST_F(DgtLinkTest, TheForwardSinkFeedsTheLossToAdaptiveK) {
  t_ = std::make_unique<LossyTransport>(0);
  layout_ = KeyLayout::Build({{0, kElements, true}}, 1, 1 << 20).value();
  tier_ = std::make_unique<TestTier>(*t_, MakeSpec(*t_, "dc", 1, 1));
  kv_ = std::make_unique<KvWorker>(&tier_->worker(0), 0, layout_);
  SendPathOptions send;
  send.dgt = DgtLinkOptions{};
  link_ = KvLink::Create(kv_.get(), TierCodec{}, send).value();
  ForwardSink sink(link_.get());
  EXPECT_NEAR(link_->dgt()->k(), 0.8, 1e-6);
  sink.OnLoss(0, 2.0);
  EXPECT_NEAR(link_->dgt()->k(), 0.8, 1e-6);
  sink.OnLoss(1, 1.0);
  EXPECT_NEAR(link_->dgt()->k(), 0.4, 1e-6);
  sink.OnLoss(2, 0.1);
  EXPECT_NEAR(link_->dgt()->k(), 0.2, 1e-6);
  link_.reset();
  kv_.reset();
  tier_.reset();  // never started: nothing to finalize
}

TEST(DgtPayloadTest, RoundTripsAndRefusesWhatDoesNotAddUp) {
  std::vector<float> values(10);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) + 0.5f;
  const uint32_t blocks[] = {0, 2};  // blocks of 4: [0..3], [8..9]
  const uint32_t zeros[] = {1};
  const Bytes p = EncodeDgtBlocks(4, blocks, zeros, values);
  Result<DgtBlocksView> v = DecodeDgtBlocks(p, 4);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->elements, 10u);
  EXPECT_EQ(v->blocks, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(v->zeros, (std::vector<uint32_t>{1}));
  EXPECT_EQ(std::vector<float>(v->values.begin(), v->values.end()),
            (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 8.5f, 9.5f}));
  // Truncated, a block outside the key, indices not increasing.
  EXPECT_FALSE(DecodeDgtBlocks(Bytes::Copy(p.data(), p.size() - 4), 4).ok());
  EXPECT_FALSE(DecodeDgtBlocks(Bytes::CopyVector(std::vector<uint32_t>{10, 1, 0, 3}), 4).ok());
  EXPECT_FALSE(DecodeDgtBlocks(Bytes::CopyVector(std::vector<uint32_t>{10, 2, 0, 1, 0}), 4).ok());
  EXPECT_FALSE(DecodeDgtBlocks(Bytes::CopyVector(std::vector<uint32_t>{1u << 31, 0xFFFFFFFF, 0}), 4).ok());

  const float block[] = {1, 2, 3};
  Result<DgtBlockView> b = DecodeDgtBlock(EncodeDgtBlock(2, 11, block));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->block, 2u);
  EXPECT_EQ(b->elements, 11u);
  EXPECT_EQ(b->values.size(), 3u);
  EXPECT_FALSE(DecodeDgtBlock(Bytes(7)).ok());
  EXPECT_FALSE(DecodeDgtBlock(Bytes(10)).ok());

  const std::vector<bool> delivered = {true, false, true, true, false, false, false, true, true};
  EXPECT_EQ(DecodeDelivered(EncodeDelivered(delivered), 9).value(), delivered);
  EXPECT_FALSE(DecodeDelivered(EncodeDelivered(delivered), 17).ok());
}

// A block of the default 334 floats, its Meta with every integer at its widest and a sealed datagram's envelope
// fit one datagram.
TEST(DgtPayloadTest, TheDefaultBlockFitsOneDatagram) {
  Meta m;
  m.command = Command::kPush;
  m.sender = INT32_MIN;
  m.recipient = INT32_MIN;
  m.app_id = INT32_MIN;
  m.timestamp = -1;
  m.round = INT64_MAX;
  m.keys = {UINT64_MAX};
  m.lens = {UINT32_MAX};
  m.codec = kDgtBlockCodec;
  m.priority = -7;
  const std::vector<float> block(DgtLinkOptions{}.plan.block_elements, 1.0f);
  EXPECT_LE(EncodedMetaSize(m) + EncodeDgtBlock(0, 1000, block).size() + kDatagramEnvelopeBytes, kDatagramBytes);
  EXPECT_TRUE(ValidateDgtLinkOptions(DgtLinkOptions{}).ok());
  DgtLinkOptions too_big;
  too_big.plan.block_elements = 335;
  EXPECT_FALSE(ValidateDgtLinkOptions(too_big).ok());
}

}  // namespace
}  // namespace geomx::comm
