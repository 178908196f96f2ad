#include "comm/shaped_van.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/codec.h"
#include "comm/zmq_van.h"

namespace geomx::comm {
namespace {

using std::chrono::milliseconds;

// A clock the test moves by hand. While a message is not due, the sender thread re-reads it every millisecond of
// real time (the test never sleeps to make shaper time pass).
class FakeShaperClock : public ShaperClock {
 public:
  double Now() const override { return now_.load(); }
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, double /*t*/) const override {
    cv.wait_for(lock, milliseconds(1));
  }
  void Set(double t) { now_ = t; }

 private:
  std::atomic<double> now_{0};
};

// An inner Van that records what it is asked to send (with the shaper-clock time of the hand-over) and returns
// messages the test injects. Thread-safe.
class RecordingVan : public Van {
 public:
  struct Sent {
    int node_id;
    Message msg;
    double at;
  };
  explicit RecordingVan(const ShaperClock* clock) : clock_(clock) {}

  Result<std::string> Bind(const std::string& address) override { return address; }
  Status Connect(int, const std::string&, LinkClass, const std::string&) override { return Status::Ok(); }
  Result<size_t> Send(int node_id, const Message& msg) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back({node_id, msg, clock_->Now()});
    cv_.notify_all();
    return EncodedMetaSize(msg.meta) + msg.data_bytes();
  }
  Status Recv(Message* msg, int timeout_ms) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, milliseconds(timeout_ms), [&] { return !incoming_.empty() || stopped_; })) {
      return Status::DeadlineExceeded("nothing");
    }
    if (stopped_) return Status::Cancelled("stopped");
    *msg = std::move(incoming_.front());
    incoming_.pop_front();
    return Status::Ok();
  }
  void Stop() override {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }

  void Inject(Message msg) {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.push_back(std::move(msg));
    cv_.notify_all();
  }
  // Waits (real time) until at least `n` messages were handed over; returns how many there are.
  size_t WaitForSent(size_t n, int timeout_ms = 5000) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, milliseconds(timeout_ms), [&] { return sent_.size() >= n; });
    return sent_.size();
  }
  std::vector<Sent> sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }

 private:
  const ShaperClock* clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Sent> sent_;
  std::deque<Message> incoming_;
  bool stopped_ = false;
};

Message MakeMessage(int64_t ts, size_t data_bytes, int sender = 0) {
  Message m;
  m.meta.command = Command::kPush;
  m.meta.sender = sender;
  m.meta.timestamp = ts;
  if (data_bytes > 0) {
    m.meta.keys = {1};
    m.meta.lens = {static_cast<uint32_t>(data_bytes / 4)};
    m.data.push_back(Bytes(data_bytes));
  }
  return m;
}

size_t WireSize(const Message& m) { return EncodedMetaSize(m.meta) + m.data_bytes(); }

ShapedVanOptions Links(LinkOptions wan, LinkOptions lan) {
  ShapedVanOptions o;
  o.network.wan = wan;
  o.network.lan = lan;
  return o;
}

class ShapedVanTest : public ::testing::Test {
 protected:
  void Make(ShapedVanOptions options) {
    auto inner = std::make_unique<RecordingVan>(&clock_);
    inner_ = inner.get();
    van_ = std::make_unique<ShapedVan>(std::move(inner), options, &counters_, &clock_);
  }

  FakeShaperClock clock_;
  TrafficCounters counters_;
  RecordingVan* inner_ = nullptr;  // owned by van_
  std::unique_ptr<ShapedVan> van_;
};

TEST_F(ShapedVanTest, OneMegabyteOverTenMegabitIsAccountedAsAtLeast0_8Seconds) {
  Make(Links({.bandwidth_bps = 10e6, .latency_s = 0}, {}));
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  const Message m = MakeMessage(1, 1 << 20);
  Result<size_t> bytes = van_->Send(1, m);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, WireSize(m));

  const PeerAccounting acc = van_->Accounting(1);
  const double expected = static_cast<double>(WireSize(m)) * 8 / 10e6;  // 0.839 s
  EXPECT_GE(acc.transmit_seconds, 0.8);
  EXPECT_DOUBLE_EQ(acc.transmit_seconds, expected);
  EXPECT_DOUBLE_EQ(acc.last_due, expected);
  EXPECT_EQ(acc.messages, 1u);
  EXPECT_EQ(acc.bytes, WireSize(m));

  // Not delivered before its due time on the shaper clock ...
  clock_.Set(0.5);
  EXPECT_EQ(inner_->WaitForSent(1, 50), 0u);
  EXPECT_EQ(van_->queued(), 1u);
  // ... and delivered once the clock passes it.
  clock_.Set(0.85);
  ASSERT_EQ(inner_->WaitForSent(1), 1u);
  EXPECT_GE(inner_->sent()[0].at, 0.8);
  EXPECT_EQ(van_->queued(), 0u);
}

TEST_F(ShapedVanTest, BackToBackMessagesShareThePeersBandwidth) {
  Make(Links({.bandwidth_bps = 1e6, .latency_s = 0}, {}));
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  const Message m = MakeMessage(1, 125000);  // ~1 s each at 1 Mbit/s
  ASSERT_TRUE(van_->Send(1, m).ok());
  ASSERT_TRUE(van_->Send(1, m).ok());
  const double one = static_cast<double>(WireSize(m)) * 8 / 1e6;
  EXPECT_DOUBLE_EQ(van_->Accounting(1).last_due, 2 * one);
  clock_.Set(one + 0.01);
  EXPECT_EQ(inner_->WaitForSent(2, 50), 1u);
  clock_.Set(2 * one + 0.01);
  EXPECT_EQ(inner_->WaitForSent(2), 2u);
  // An idle link does not bank credit: a message sent later starts from the time it is sent.
  clock_.Set(10);
  ASSERT_TRUE(van_->Send(1, m).ok());
  EXPECT_DOUBLE_EQ(van_->Accounting(1).last_due, 10 + one);
}

TEST_F(ShapedVanTest, EachPeerHasItsOwnLink) {
  Make(Links({.bandwidth_bps = 1e6, .latency_s = 0}, {}));
  ASSERT_TRUE(van_->Connect(1, "a", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Connect(2, "b", LinkClass::kWan, "").ok());
  const Message m = MakeMessage(1, 125000);
  ASSERT_TRUE(van_->Send(1, m).ok());
  ASSERT_TRUE(van_->Send(2, m).ok());
  EXPECT_DOUBLE_EQ(van_->Accounting(1).last_due, van_->Accounting(2).last_due);
}

TEST_F(ShapedVanTest, LatencyIsAdded) {
  Make(Links({}, {.bandwidth_bps = 0, .latency_s = 0.05}));
  ASSERT_TRUE(van_->Connect(3, "peer", LinkClass::kLan, "").ok());
  clock_.Set(1.0);
  ASSERT_TRUE(van_->Send(3, MakeMessage(1, 100)).ok());
  EXPECT_DOUBLE_EQ(van_->Accounting(3).last_due, 1.05);
  EXPECT_DOUBLE_EQ(van_->Accounting(3).transmit_seconds, 0);
  clock_.Set(1.04);
  EXPECT_EQ(inner_->WaitForSent(1, 50), 0u);
  clock_.Set(1.06);
  ASSERT_EQ(inner_->WaitForSent(1), 1u);
  EXPECT_GE(inner_->sent()[0].at, 1.05);
}

TEST_F(ShapedVanTest, FifoPerPeerAndIndependentAcrossPeers) {
  Make(Links({.bandwidth_bps = 8e6, .latency_s = 0.1}, {.bandwidth_bps = 0, .latency_s = 0.01}));
  ASSERT_TRUE(van_->Connect(1, "far", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Connect(2, "near", LinkClass::kLan, "").ok());
  std::mt19937 rng(3);
  constexpr int kPerPeer = 50;
  for (int i = 0; i < kPerPeer; ++i) {
    ASSERT_TRUE(van_->Send(1, MakeMessage(i, rng() % 20000)).ok());
    ASSERT_TRUE(van_->Send(2, MakeMessage(i, rng() % 20000)).ok());
  }
  clock_.Set(1000);
  ASSERT_EQ(inner_->WaitForSent(2 * kPerPeer), 2u * kPerPeer);
  std::vector<int64_t> next(3, 0);
  int near_seen = 0;
  for (const auto& s : inner_->sent()) {
    EXPECT_EQ(s.msg.meta.timestamp, next[s.node_id]++) << "peer " << s.node_id;
    if (s.node_id == 2) ++near_seen;
    // Deliveries happen in due order: every LAN message (due by 0.01 s) before the first WAN one (>= 0.1 s).
    if (s.node_id == 1) {
      EXPECT_EQ(near_seen, kPerPeer);
    }
  }
}

TEST_F(ShapedVanTest, UnshapedLinksPassThroughImmediately) {
  Make({});
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  const Message m = MakeMessage(1, 1000);
  Result<size_t> bytes = van_->Send(1, m);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, WireSize(m));
  EXPECT_EQ(inner_->sent().size(), 1u);  // synchronously, no clock movement needed
  EXPECT_EQ(van_->queued(), 0u);
  EXPECT_EQ(counters_.Snapshot().wan_bytes_sent, WireSize(m));
}

TEST_F(ShapedVanTest, CountsTrafficByLinkClassAndDirection) {
  Make(Links({.bandwidth_bps = 1e9, .latency_s = 0.001}, {}));
  ASSERT_TRUE(van_->Connect(1, "far", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Connect(2, "near", LinkClass::kLan, "").ok());
  const Message to_far = MakeMessage(1, 5000);
  const Message to_near = MakeMessage(2, 300);
  ASSERT_TRUE(van_->Send(1, to_far).ok());
  ASSERT_TRUE(van_->Send(1, to_far).ok());
  ASSERT_TRUE(van_->Send(2, to_near).ok());

  const Message from_far = MakeMessage(3, 700, /*sender=*/1);
  const Message from_near = MakeMessage(4, 90, /*sender=*/2);
  const Message from_stranger = MakeMessage(5, 11, /*sender=*/77);  // never connected: counted as LAN
  inner_->Inject(from_far);
  inner_->Inject(from_near);
  inner_->Inject(from_stranger);
  Message got;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(van_->Recv(&got, 1000).ok());
  EXPECT_EQ(van_->Recv(&got, 10).code(), StatusCode::kDeadlineExceeded);

  const TrafficSnapshot s = counters_.Snapshot();
  EXPECT_EQ(s.wan_bytes_sent, 2 * WireSize(to_far));
  EXPECT_EQ(s.lan_bytes_sent, WireSize(to_near));
  EXPECT_EQ(s.wan_bytes_received, WireSize(from_far));
  EXPECT_EQ(s.lan_bytes_received, WireSize(from_near) + WireSize(from_stranger));
  EXPECT_EQ(s.wan_messages, 3u);
  EXPECT_EQ(s.lan_messages, 3u);
}

TEST_F(ShapedVanTest, ErrorsAndStop) {
  Make(Links({.bandwidth_bps = 1e3, .latency_s = 0}, {}));
  EXPECT_EQ(van_->Send(5, MakeMessage(1, 10)).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(van_->Connect(1, "far", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Send(1, MakeMessage(1, 100000)).ok());  // due in 800 s: still queued at Stop
  EXPECT_EQ(van_->queued(), 1u);
  std::thread receiver([&] {
    Message got;
    EXPECT_EQ(van_->Recv(&got, 10000).code(), StatusCode::kCancelled);
  });
  std::this_thread::sleep_for(milliseconds(20));
  van_->Stop();
  receiver.join();
  van_->Stop();  // idempotent
  EXPECT_EQ(van_->queued(), 0u);
  EXPECT_TRUE(inner_->sent().empty());
  EXPECT_EQ(van_->Send(1, MakeMessage(2, 10)).status().code(), StatusCode::kCancelled);
}

// Each data centre's uplink (comm/network_shape.h): a van in the central party reaches dc-c over dc-c's own slow,
// far link and dc-a over the default WAN; dc-a reaches dc-c through the central party (both links one after the
// other).
TEST_F(ShapedVanTest, PeersGetTheLinkOfTheirParty) {
  ShapedVanOptions o = Links({.bandwidth_bps = 50e6, .latency_s = 0.025}, {});
  o.network.uplinks["dc-c"] = {.bandwidth_bps = 10e6, .latency_s = 0.08};
  o.self_party = "central";
  Make(o);
  ASSERT_TRUE(van_->Connect(1, "a", LinkClass::kWan, "dc-a/server0@global").ok());
  ASSERT_TRUE(van_->Connect(2, "c", LinkClass::kWan, "dc-c/server0@global").ok());
  ASSERT_TRUE(van_->Connect(3, "n", LinkClass::kWan, "no-party").ok());  // no party in the name: the default WAN
  const Message m = MakeMessage(1, 125000);
  const double bits = static_cast<double>(WireSize(m)) * 8;  // about 1 Mbit
  for (int id : {1, 2, 3}) ASSERT_TRUE(van_->Send(id, m).ok());
  EXPECT_DOUBLE_EQ(van_->Accounting(1).last_due, bits / 50e6 + 0.025);
  EXPECT_DOUBLE_EQ(van_->Accounting(2).last_due, bits / 10e6 + 0.08);
  EXPECT_DOUBLE_EQ(van_->Accounting(3).last_due, bits / 50e6 + 0.025);

  o.self_party = "dc-a";
  Make(o);
  ASSERT_TRUE(van_->Connect(2, "c", LinkClass::kWan, "dc-c/worker0").ok());
  ASSERT_TRUE(van_->Connect(4, "g", LinkClass::kWan, "central/global-server0").ok());
  ASSERT_TRUE(van_->Send(2, m).ok());
  ASSERT_TRUE(van_->Send(4, m).ok());
  EXPECT_DOUBLE_EQ(van_->Accounting(2).last_due, bits / 10e6 + 0.105);
  EXPECT_DOUBLE_EQ(van_->Accounting(4).last_due, bits / 50e6 + 0.025);
}

// A lossy link with latency carries at most the Mathis et al. TCP rate: 2% loss at a 50 ms round trip is
// 1448 * 8 / 0.05 * sqrt(75) = 2.006 Mbit/s, below the link's 50 Mbit/s. Without latency the rate is the link's.
TEST_F(ShapedVanTest, LossLimitsTheRateOfALinkWithLatency) {
  Make(Links({.bandwidth_bps = 50e6, .latency_s = 0.025, .loss = 0.02}, {.bandwidth_bps = 50e6, .loss = 0.02}));
  ASSERT_TRUE(van_->Connect(1, "far", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Connect(2, "near", LinkClass::kLan, "").ok());
  const Message m = MakeMessage(1, 1 << 20);
  const double bits = static_cast<double>(WireSize(m)) * 8;
  ASSERT_TRUE(van_->Send(1, m).ok());
  ASSERT_TRUE(van_->Send(2, m).ok());
  EXPECT_NEAR(van_->Accounting(1).transmit_seconds, bits / 2.00641e6, 1e-3);  // about 4.2 s
  EXPECT_DOUBLE_EQ(van_->Accounting(2).transmit_seconds, bits / 50e6);
  EXPECT_NEAR(LossLimitedRate({.bandwidth_bps = 0, .latency_s = 0.025, .loss = 0.02}), 2.00641e6, 10);
  EXPECT_EQ(LossLimitedRate({.bandwidth_bps = 0, .latency_s = 0.025, .loss = 0}), 0);
}

// Tail losses: a segment lost with probability p waits 200 ms (no latency), then 400 ms, ... So a one-segment
// message waits 0.2 * p / (1 - 2p) seconds on average (0.0667 s at p = 0.2) over p / (1 - p) timeouts (0.25), and
// a message of 15 segments three times as long (only its last three segments cannot be fast-retransmitted).
TEST_F(ShapedVanTest, TailLossesWaitForRetransmissionTimeoutsOnAverageAsTheClosedForm) {
  Make(Links({.bandwidth_bps = 0, .latency_s = 0, .loss = 0.2}, {}));
  ASSERT_TRUE(van_->Connect(1, "small", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Connect(2, "large", LinkClass::kWan, "").ok());
  constexpr int kMessages = 4000;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(van_->Send(1, MakeMessage(i, 100)).ok());
    ASSERT_TRUE(van_->Send(2, MakeMessage(i, 20000)).ok());  // 15 segments of 1448 bytes
  }
  const PeerAccounting small = van_->Accounting(1), large = van_->Accounting(2);
  EXPECT_NEAR(small.timeout_seconds / kMessages, 0.0667, 0.0667 * 0.1);
  EXPECT_NEAR(static_cast<double>(small.timeouts) / kMessages, 0.25, 0.25 * 0.1);
  EXPECT_NEAR(large.timeout_seconds / kMessages, 0.2, 0.2 * 0.1);
  EXPECT_NEAR(static_cast<double>(large.timeouts) / kMessages, 0.75, 0.75 * 0.1);
  // The waits hold up the link: the last message is due after all of them.
  EXPECT_DOUBLE_EQ(small.last_due, small.timeout_seconds);
  // A round trip of 2 x 10 ms lengthens every timeout by 20 ms.
  EXPECT_DOUBLE_EQ(RetransmissionTimeout(0.01), 0.22);
}

// Datagrams (DGT's unimportant blocks): each is lost with the link's loss rate per fragment, with no
// retransmission; the ones that survive are delivered in order, latency after their turn on the link.
TEST_F(ShapedVanTest, DatagramsAreLostAtTheLinksRateAndNeverRetransmitted) {
  Make(Links({.bandwidth_bps = 0, .latency_s = 0.01, .loss = 0.1}, {}));
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  constexpr int kDatagrams = 5000;
  for (int i = 0; i < kDatagrams; ++i) ASSERT_TRUE(van_->SendDatagram(1, MakeMessage(i, 1400)).ok());
  const PeerAccounting a = van_->Accounting(1);
  EXPECT_EQ(a.datagrams, static_cast<uint64_t>(kDatagrams));
  // Binomial(5000, 0.1): mean 500, standard deviation 21.
  EXPECT_GT(a.datagrams_lost, 420u);
  EXPECT_LT(a.datagrams_lost, 580u);
  EXPECT_EQ(a.timeouts, 0u);  // no retransmission timeouts, whatever was lost
  clock_.Set(0.02);
  const size_t delivered = kDatagrams - a.datagrams_lost;
  ASSERT_EQ(inner_->WaitForSent(delivered), delivered);
  int64_t previous = -1;
  for (const auto& sent : inner_->sent()) {
    EXPECT_GT(sent.msg.meta.timestamp, previous);
    previous = sent.msg.meta.timestamp;
  }
  // A datagram of two fragments is lost when either is: 1 - 0.9^2 = 0.19.
  ASSERT_TRUE(van_->Connect(2, "large", LinkClass::kWan, "").ok());
  for (int i = 0; i < kDatagrams; ++i) ASSERT_TRUE(van_->SendDatagram(2, MakeMessage(i, 2000)).ok());
  EXPECT_NEAR(static_cast<double>(van_->Accounting(2).datagrams_lost) / kDatagrams, 0.19, 0.025);
}

// A TCP flow slowed by losses (Mathis: ~2 Mbit/s at 2 %, 25 ms) leaves the rest of a 50 Mbit/s link to datagrams,
// which go at the link's rate; both take their bytes from the same capacity.
TEST_F(ShapedVanTest, DatagramsUseTheCapacityALossyTcpFlowLeaves) {
  Make(Links({.bandwidth_bps = 50e6, .latency_s = 0.025, .loss = 0.02}, {}));
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  const Message tcp = MakeMessage(1, 250000);
  const Message dgram = MakeMessage(2, 1400);
  ASSERT_TRUE(van_->Send(1, tcp).ok());
  const PeerAccounting after_tcp = van_->Accounting(1);
  const double tcp_capacity = static_cast<double>(WireSize(tcp)) * 8 / 50e6;  // 40 ms of the link
  EXPECT_DOUBLE_EQ(after_tcp.capacity_free_at, tcp_capacity);
  EXPECT_GT(after_tcp.link_free_at, 0.9);  // ~1 s at the loss-limited rate
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(van_->SendDatagram(1, dgram).ok());
  const PeerAccounting a = van_->Accounting(1);
  EXPECT_NEAR(a.capacity_free_at, tcp_capacity + 100 * static_cast<double>(WireSize(dgram)) * 8 / 50e6, 1e-12);
  EXPECT_LT(a.capacity_free_at, 0.1);  // the datagrams are through long before the TCP message
  EXPECT_DOUBLE_EQ(a.link_free_at, after_tcp.link_free_at);
  // Without loss the TCP flow has the link's rate and waits for the capacity the datagrams took.
  Make(Links({.bandwidth_bps = 50e6, .latency_s = 0.025}, {}));
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(van_->SendDatagram(1, dgram).ok());
  ASSERT_TRUE(van_->Send(1, tcp).ok());
  const double bits = 100 * static_cast<double>(WireSize(dgram)) * 8 + static_cast<double>(WireSize(tcp)) * 8;
  EXPECT_NEAR(van_->Accounting(1).link_free_at, bits / 50e6, 1e-12);
  EXPECT_EQ(van_->Accounting(1).datagrams_lost, 0u);
}

// DGT's TCP-priority channels: each channel of a peer is a TCP flow of its own. On a lossy link (2 %, 25 ms: about
// 2 Mbit/s per flow, Mathis) two 250 kB messages on one flow take twice as long as on two flows, which share the
// 50 Mbit/s capacity in the order they were accepted.
TEST_F(ShapedVanTest, PriorityChannelsAreTcpFlowsOfTheirOwn) {
  const LinkOptions link{.bandwidth_bps = 50e6, .latency_s = 0.025, .loss = 0.02};
  const Message m = MakeMessage(1, 250000);
  const double one = static_cast<double>(WireSize(m)) * 8 / LossLimitedRate(link);  // about 1 s
  Make(Links(link, {}));
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Send(1, m).ok());
  ASSERT_TRUE(van_->SendOnChannel(1, m, 1).ok());
  EXPECT_DOUBLE_EQ(van_->Accounting(1).capacity_free_at, 2 * static_cast<double>(WireSize(m)) * 8 / 50e6);
  EXPECT_FALSE(van_->SendOnChannel(1, m, 0).ok());
  clock_.Set(1.7 * one);
  EXPECT_EQ(inner_->WaitForSent(2), 2u);  // both flows are through
  EXPECT_EQ(van_->queued(), 0u);

  clock_.Set(0);
  Make(Links(link, {}));
  ASSERT_TRUE(van_->Connect(1, "peer", LinkClass::kWan, "").ok());
  ASSERT_TRUE(van_->Send(1, m).ok());
  ASSERT_TRUE(van_->Send(1, m).ok());
  clock_.Set(1.7 * one);
  EXPECT_EQ(inner_->WaitForSent(1), 1u);
  EXPECT_EQ(van_->queued(), 1u);  // the second message waits for the first on the one flow
  EXPECT_GE(van_->Accounting(1).link_free_at, 2 * one);
}

// End to end over a real ZmqVan and the steady clock: a 30 ms LAN latency is felt in wall time.
TEST(ShapedVanZmqTest, LatencyOverInproc) {
  ZmqContext context;
  ZmqVan receiver(&context);
  Result<std::string> endpoint = receiver.Bind("inproc://shaped-van-test");
  ASSERT_TRUE(endpoint.ok());
  TrafficCounters counters;
  ShapedVan sender(std::make_unique<ZmqVan>(&context), Links({}, {.bandwidth_bps = 0, .latency_s = 0.03}), &counters);
  ASSERT_TRUE(sender.Connect(1, *endpoint, LinkClass::kLan, "").ok());
  const auto start = std::chrono::steady_clock::now();
  const Message m = MakeMessage(9, 4096);
  ASSERT_TRUE(sender.Send(1, m).ok());
  Message got;
  ASSERT_TRUE(receiver.Recv(&got, 5000).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(29));
  EXPECT_EQ(got.meta.timestamp, 9);
  ASSERT_EQ(got.data.size(), 1u);
  EXPECT_EQ(got.data[0].size(), 4096u);
  EXPECT_EQ(counters.Snapshot().lan_bytes_sent, WireSize(m));
}

}  // namespace
}  // namespace geomx::comm
