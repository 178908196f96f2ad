// DGT on a real tier (comm/dgt/dgt_link.h): a worker's KvLink with DGT pushes to a server whose DgtHandler
// assembles the blocks, over loopback vans that drop datagrams at a given rate (the reliable messages always
// arrive). Checked against values built by hand: what the server assembled is, block by block, either what was
// pushed or zeros; the reliable blocks always arrive; over the rounds, what arrived + the residual = what was
// pushed; without loss every answer is exact and no round waits for its deadline. Malformed payloads are refused.
#include "comm/dgt/dgt_link.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

DgtLinkOptions Options(double deadline_s, DgtTransport transport = DgtTransport::kDatagrams) {
  DgtLinkOptions o;
  o.transport = transport;
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
  void Start(double loss, double deadline_s, DgtTransport transport = DgtTransport::kDatagrams) {
    t_ = std::make_unique<LossyTransport>(loss);
    layout_ = KeyLayout::Build({{0, kElements, true}}, 1, 1 << 20).value();
    dgt_ = std::make_unique<DgtHandler>(&echo_, layout_, Options(deadline_s, transport));
    tier_ = std::make_unique<TestTier>(*t_, MakeSpec(*t_, "dc", 1, 1));
    server_ = std::make_unique<KvServer>(&tier_->server(0), 0, dgt_.get());
    kv_ = std::make_unique<KvWorker>(&tier_->worker(0), 0, layout_);
    SendPathOptions send;
    send.dgt = Options(deadline_s, transport);
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
  // `rounds` rounds of RoundValues, each answer exactly what was pushed, no block missing; the sender's counters.
  std::vector<DgtChannelCounters> ExactRounds(int rounds);

  std::unique_ptr<LossyTransport> t_;
  KeyLayout layout_;
  EchoHandler echo_;
  std::unique_ptr<DgtHandler> dgt_;
  std::unique_ptr<TestTier> tier_;
  std::unique_ptr<KvServer> server_;
  std::unique_ptr<KvWorker> kv_;
  std::unique_ptr<KvLink> link_;
};

// The 4-bit code of one block, the naive way: the scale is the largest magnitude / 7, each value rounded to the
// nearest multiple of it.
std::vector<float> Quantised4(const float* x, size_t n) {
  float largest = 0;
  for (size_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(x[i]));
  const float scale = largest / 7.0f;
  std::vector<float> out(n, 0.0f);
  for (size_t i = 0; i < n && scale > 0; ++i) out[i] = std::round(x[i] / scale) * scale;
  return out;
}

std::vector<float> RoundValues(int64_t round) {
  std::vector<float> v(kElements);
  // Blocks of distinct magnitudes (so the ranking is not all ties) that change sign with the round.
  for (size_t i = 0; i < kElements; ++i) {
    // (The sign is applied to a float: 1 + i / kBlock is unsigned, and times -1 it was 1.8e19, not negative.)
    const float sign = round % 2 == 0 ? 1.0f : -1.0f;
    v[i] = static_cast<float>(1 + i / kBlock) * sign * 0.1f + 0.001f * static_cast<float>(i);
  }
  return v;
}

std::vector<DgtChannelCounters> DgtLinkTest::ExactRounds(int rounds) {
  for (int64_t r = 0; r < rounds; ++r) {
    const std::vector<float> v = RoundValues(r);
    Result<std::vector<float>> got = PushPull(v, r);
    if (!got.ok()) {
      ADD_FAILURE() << got.status().ToString();
      break;
    }
    EXPECT_EQ(*got, v) << "round " << r;
  }
  EXPECT_EQ(dgt_->missing_blocks(), 0u);
  return link_->dgt()->counters();
}

TEST_F(DgtLinkTest, WithoutLossEveryAnswerIsExactAndNoRoundWaits) {
  Start(/*loss=*/0, /*deadline_s=*/30);  // a round that waited for its deadline would hang the test for 30 s
  const std::vector<DgtChannelCounters> c = ExactRounds(5);
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

// TCP-priority: the channel messages are reliable (the van's datagram loss does not touch them), so with a deadline
// they all meet every answer is exact and nothing stays behind.
TEST_F(DgtLinkTest, TcpPriorityChannelsAreNotDatagramsAndKeepNoResidual) {
  Start(/*loss=*/0.4, /*deadline_s=*/30, DgtTransport::kTcpPriority);
  const std::vector<DgtChannelCounters> c = ExactRounds(5);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].blocks, 5u * 3);
  EXPECT_EQ(c[1].blocks + c[2].blocks, 5u * 5);
  EXPECT_GT(c[1].bytes, 0u);
  EXPECT_EQ(c[1].lost + c[2].lost, 0u);
  for (float x : link_->dgt()->residual(WireKey(0, 0))) EXPECT_EQ(x, 0.0f);
}

// tcp-priority-4bit: a block of a lower-priority channel arrives as its 4-bit code (checked against a naive
// quantiser), a reliable one exactly; what the code left out is the residual, so over the rounds arrived + residual
// = pushed.
TEST_F(DgtLinkTest, FourBitBlocksArriveQuantisedAndTheirErrorComesBack) {
  Start(/*loss=*/0, /*deadline_s=*/30, DgtTransport::kTcpPriority4Bit);
  std::vector<double> pushed_total(kElements, 0), arrived_total(kElements, 0);
  std::vector<float> residual_before(kElements, 0);
  int quantised = 0, exact = 0;
  for (int64_t r = 0; r < 12; ++r) {
    const std::vector<float> v = RoundValues(r);
    Result<std::vector<float>> got = PushPull(v, r);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (size_t b = 0; b * kBlock < kElements; ++b) {
      const size_t begin = b * kBlock, n = std::min(kBlock, kElements - begin);
      std::vector<float> carried(n);
      for (size_t i = 0; i < n; ++i) carried[i] = v[begin + i] + residual_before[begin + i];
      const std::vector<float> code = Quantised4(carried.data(), n);
      bool is_exact = true, is_code = true;
      for (size_t i = 0; i < n; ++i) {
        is_exact = is_exact && std::fabs((*got)[begin + i] - carried[i]) <= 1e-6f;
        is_code = is_code && std::fabs((*got)[begin + i] - code[i]) <= 1e-6f;
      }
      EXPECT_TRUE(is_exact || is_code) << "round " << r << " block " << b;
      exact += is_exact ? 1 : 0;
      quantised += is_code && !is_exact ? 1 : 0;
    }
    for (size_t i = 0; i < kElements; ++i) {
      pushed_total[i] += v[i];
      arrived_total[i] += (*got)[i];
    }
    residual_before = link_->dgt()->residual(WireKey(0, 0));
  }
  EXPECT_EQ(exact, 12 * 3);       // 2 ranked + the last block, reliable
  EXPECT_EQ(quantised, 12 * 5);   // the other 5 as 4-bit codes
  for (size_t i = 0; i < kElements; ++i) {
    EXPECT_NEAR(arrived_total[i] + residual_before[i], pushed_total[i], 1e-4) << i;
  }
  EXPECT_EQ(dgt_->missing_blocks(), 0u);
}

// With a deadline of 0 a round closes when its reliable request arrives, before the channel messages sent after
// it: their blocks are late and go into the sender's next round at the receiver (nothing is lost, nothing stays
// in the sender's residual). A last round of zeros collects the blocks of the one before it.
TEST_F(DgtLinkTest, TcpPriorityBlocksLateForTheirRoundAreAddedIntoTheNext) {
  Start(/*loss=*/0, /*deadline_s=*/0, DgtTransport::kTcpPriority);
  std::vector<double> pushed_total(kElements, 0), arrived_total(kElements, 0);
  for (int64_t r = 0; r < 7; ++r) {
    const std::vector<float> v = r < 6 ? RoundValues(r) : std::vector<float>(kElements, 0.0f);
    Result<std::vector<float>> got = PushPull(v, r);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (r == 0) {
      EXPECT_NE(*got, v);  // round 0's channel blocks had not arrived: zeros there
    }
    for (size_t i = 0; i < kElements; ++i) {
      pushed_total[i] += v[i];
      arrived_total[i] += (*got)[i];
    }
    for (float x : link_->dgt()->residual(WireKey(0, 0))) EXPECT_EQ(x, 0.0f);
  }
  for (size_t i = 0; i < kElements; ++i) EXPECT_NEAR(arrived_total[i], pushed_total[i], 1e-4) << i;
  EXPECT_GE(dgt_->late_blocks(), 6u * 5);  // every round's 5 channel blocks (the zero round's too, or not yet)
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
  // Channel messages: a 4-bit payload that says more blocks than it holds, a plain one with zero blocks in it.
  m.meta.codec = kDgtPart4Codec;
  m.data = {Bytes::CopyVector(std::vector<uint32_t>{30, 2, 0, 1})};
  m.meta.lens = {static_cast<uint32_t>(m.data[0].size())};
  ASSERT_TRUE(tier_->worker(0).SendOnChannel(tier_->server(0).my_id(), m, 1).ok());
  m.meta.codec = kDgtPartCodec;
  const uint32_t one[] = {0}, zero[] = {1};
  m.data = {EncodeDgtBlocks(kBlock, one, zero, RoundValues(0))};
  m.meta.lens = {static_cast<uint32_t>(m.data[0].size())};
  ASSERT_TRUE(tier_->worker(0).SendOnChannel(tier_->server(0).my_id(), m, 2).ok());
  Result<std::vector<float>> ok = PushPull(RoundValues(0), 0);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, RoundValues(0));
  EXPECT_EQ(dgt_->refused_blocks(), 3u);
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

// The 4-bit payload by hand: blocks of 4, a key of 6; block 0 = {0.7, -0.3, 0.12, 0} has scale 0.1 and codes
// 7, -3, 1, 0 (+8: 15, 5, 9, 8); block 1 = {1.4, -1.4} has scale 0.2 and codes 7, -7 (15, 1).
TEST(DgtPayloadTest, FourBitBlocksByHand) {
  const std::vector<float> values = {0.7f, -0.3f, 0.12f, 0.0f, 1.4f, -1.4f};
  const uint32_t blocks[] = {0, 1};
  std::vector<float> decoded(values.size(), -1.0f);
  const Bytes p = EncodeDgtBlocks4(4, blocks, values, &decoded);
  ASSERT_EQ(p.size(), 8u + 2 * 4 + (4 + 2) + (4 + 1));
  const uint8_t* codes0 = p.data() + 16 + 4;
  EXPECT_EQ(codes0[0], 0x5F);
  EXPECT_EQ(codes0[1], 0x89);
  EXPECT_EQ(p.data()[16 + 6 + 4], 0x1F);
  float scale0, scale1;
  std::memcpy(&scale0, p.data() + 16, 4);
  std::memcpy(&scale1, p.data() + 16 + 6, 4);
  EXPECT_FLOAT_EQ(scale0, 0.1f);
  EXPECT_FLOAT_EQ(scale1, 0.2f);
  const std::vector<float> expect = {0.7f, -0.3f, 0.1f, 0.0f, 1.4f, -1.4f};
  Result<DgtBlocks4View> v = DecodeDgtBlocks4(p, 4);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->elements, 6u);
  EXPECT_EQ(v->blocks, (std::vector<uint32_t>{0, 1}));
  ASSERT_EQ(v->values.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(v->values[i], expect[i], 1e-6) << i;
    EXPECT_EQ(decoded[i], v->values[i]) << i;  // what the sender keeps is what the receiver decodes
  }
  // Only block 1: block 0's elements are left alone.
  std::vector<float> partial(values.size(), -1.0f);
  const uint32_t second[] = {1};
  EncodeDgtBlocks4(4, second, values, &partial);
  EXPECT_EQ(partial[0], -1.0f);
  // Truncated, too long, a block outside the key, indices not increasing, more blocks than the key has.
  EXPECT_FALSE(DecodeDgtBlocks4(Bytes::Copy(p.data(), p.size() - 1), 4).ok());
  Bytes longer(p.size() + 1);
  std::memcpy(longer.mutable_data(), p.data(), p.size());
  EXPECT_FALSE(DecodeDgtBlocks4(longer, 4).ok());
  EXPECT_FALSE(DecodeDgtBlocks4(Bytes::CopyVector(std::vector<uint32_t>{6, 1, 2}), 4).ok());
  EXPECT_FALSE(DecodeDgtBlocks4(Bytes::CopyVector(std::vector<uint32_t>{6, 2, 1, 0}), 4).ok());
  EXPECT_FALSE(DecodeDgtBlocks4(Bytes::CopyVector(std::vector<uint32_t>{6, 0xFFFFFFFF}), 4).ok());
  EXPECT_FALSE(DecodeDgtBlocks4(Bytes(5), 4).ok());
  // An all-zero block: scale 0, every code 8.
  const std::vector<float> zeros(4, 0.0f);
  const uint32_t first[] = {0};
  Result<DgtBlocks4View> z = DecodeDgtBlocks4(EncodeDgtBlocks4(4, first, zeros, nullptr), 4);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->values, zeros);
  EXPECT_EQ(ParseDgtTransport("tcp-priority-4bit").value(), DgtTransport::kTcpPriority4Bit);
  EXPECT_FALSE(ParseDgtTransport("tcp").ok());
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
