// TSEngine's relays (comm/tsengine/ts_relay.h) on a loopback tier: one server with the coordinator (TsRoot in front
// of a mean-computing sink), three members (TsMember over a dense KvLink). Every member ends each round with the
// mean of the three sums (checked against the hand-computed mean), the round's overlay accounts for every slice's
// transfers, relayed pushes are counted once per covered sender by the SyncAggregator (and refused where they must
// be), and malformed or unexpected TSEngine messages are dropped and counted without breaking the next round.
#include "comm/tsengine/ts_relay.h"

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "comm/codec.h"
#include "comm/handlers/request_checks.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::MakeSpec;
using testing::MakeTransport;
using testing::TestTier;

constexpr int kMembers = 3;

// The value member m (0-based) contributes to element i of round r.
float Contribution(int m, int64_t r, uint64_t i) { return static_cast<float>((m + 1) * 10 + r) + 0.5f * i; }

class TsRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    transport_ = MakeTransport("loopback");
    tier_ = std::make_unique<TestTier>(*transport_, MakeSpec(*transport_, "global", 1, kMembers),
                                       std::vector<std::string>{"dc-a", "dc-b", "dc-c"});
    // Key 1: 40 floats in slices of 16 (three slices); key 2: 3 floats.
    auto layout = KeyLayout::Build({{1, 40}, {2, 3}}, 1, 64);
    ASSERT_TRUE(layout.ok());
    layout_ = *layout;
    ASSERT_TRUE(tier_->Start().ok());
    for (int m = 0; m < kMembers; ++m) members_.push_back(tier_->worker(m).my_id());
    Postoffice& spo = tier_->server(0);
    root_ = std::make_unique<TsRoot>(&spo, layout_, members_, 4, OverlayOptions{.seed = 3},
                                     [this](const RoundOverlay& o) {
                                       std::lock_guard<std::mutex> lock(mu_);
                                       overlays_.push_back(o);
                                     });
    spo.RegisterCustomer(kTsAppId, [this](Message&& m) { root_->OnMessage(std::move(m)); });
    root_->SetSink(&mean_sink_);
    SyncAggregatorOptions opts;
    opts.expected_senders = kMembers;
    opts.relayed_pushes = true;
    auto agg = SyncAggregator::Create(layout_, opts, root_.get());
    ASSERT_TRUE(agg.ok());
    aggregator_ = std::move(*agg);
    server_ = std::make_unique<KvServer>(&spo, 0, aggregator_.get());
    for (int m = 0; m < kMembers; ++m) {
      kv_.push_back(std::make_unique<KvWorker>(&tier_->worker(m), 0, layout_));
      auto link = KvLink::Create(kv_.back().get(), TierCodec{});
      ASSERT_TRUE(link.ok());
      links_.push_back(std::move(*link));
      relays_.push_back(std::make_unique<TsMember>(links_.back().get(), members_));
    }
  }
  void TearDown() override {
    relays_.clear();
    links_.clear();
    kv_.clear();
    server_.reset();
    if (tier_) tier_->server(0).UnregisterCustomer(kTsAppId);
    EXPECT_TRUE(tier_->Finalize().ok());
  }

  // One round of every slice: each member hands its sum in; returns what each member was answered, by slice.
  std::vector<std::map<uint64_t, std::vector<float>>> Round(int64_t r) {
    std::vector<std::map<uint64_t, std::promise<std::vector<float>>>> answers(kMembers);
    for (int m = 0; m < kMembers; ++m) {
      for (uint64_t key : layout_.keys()) {
        for (const KeySlice& s : layout_.slices(key)) {
          std::vector<float> v(s.length);
          for (uint64_t i = 0; i < s.length; ++i) v[i] = Contribution(m, r, s.offset + i);
          auto* promise = &answers[m][s.wire_key];
          relays_[m]->OnComplete(s.wire_key, r, Bytes::CopyVector(v), 2, [promise](Status st, Bytes value) {
            EXPECT_TRUE(st.ok()) << st.ToString();
            promise->set_value(std::vector<float>(value.as<float>(), value.as<float>() + value.count<float>()));
          });
        }
      }
    }
    std::vector<std::map<uint64_t, std::vector<float>>> out(kMembers);
    for (int m = 0; m < kMembers; ++m) {
      for (auto& [wk, p] : answers[m]) {
        auto f = p.get_future();
        EXPECT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "member " << m << " slice " << wk;
        out[m][wk] = f.get();
      }
    }
    return out;
  }

  // The mean of the three members' contributions, by hand: sum over m of Contribution / (3 members x 2 each).
  std::vector<float> ExpectedMean(int64_t r, const KeySlice& s) const {
    std::vector<float> mean(s.length);
    for (uint64_t i = 0; i < s.length; ++i) {
      float sum = 0;
      for (int m = 0; m < kMembers; ++m) sum += Contribution(m, r, s.offset + i);
      mean[i] = sum / 6.0f;
    }
    return mean;
  }

  std::unique_ptr<testing::Transport> transport_;
  std::unique_ptr<TestTier> tier_;
  KeyLayout layout_;
  std::vector<int> members_;
  FunctionSink mean_sink_{[](uint64_t, int64_t, Bytes sum, int n, AggregateDone done) {
    std::vector<float> mean(sum.as<float>(), sum.as<float>() + sum.count<float>());
    for (float& x : mean) x /= static_cast<float>(n);
    done(Status::Ok(), Bytes::CopyVector(mean));
  }};
  std::unique_ptr<TsRoot> root_;
  std::unique_ptr<SyncAggregator> aggregator_;
  std::unique_ptr<KvServer> server_;
  std::vector<std::unique_ptr<KvWorker>> kv_;
  std::vector<std::unique_ptr<KvLink>> links_;
  std::vector<std::unique_ptr<TsMember>> relays_;
  std::mutex mu_;
  std::vector<RoundOverlay> overlays_;
};

TEST_F(TsRelayTest, EveryMemberGetsTheMeanAndTheOverlayAccountsForEverySlice) {
  constexpr int kRounds = 8;
  for (int64_t r = 0; r < kRounds; ++r) {
    const auto answers = Round(r);
    for (int m = 0; m < kMembers; ++m) {
      for (uint64_t key : layout_.keys()) {
        for (const KeySlice& s : layout_.slices(key)) {
          const std::vector<float> want = ExpectedMean(r, s);
          const std::vector<float>& got = answers[m].at(s.wire_key);
          ASSERT_EQ(got.size(), want.size());
          for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "round " << r << " m " << m;
        }
      }
    }
  }
  // Each round's overlay is reported once, after its last slice: every member's sum left it once per slice (to a
  // member or the server) and every member received the value once per slice.
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (overlays_.size() == kRounds) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(overlays_.size(), static_cast<size_t>(kRounds));
  std::set<int64_t> rounds;
  for (const RoundOverlay& o : overlays_) {
    rounds.insert(o.round);
    int pushed = 0, pulled = 0;
    std::map<int, int> received;
    for (const auto& [edge, n] : o.push) pushed += n;
    for (const auto& [edge, n] : o.pull) {
      pulled += n;
      received[edge.second] += n;
    }
    EXPECT_EQ(pushed, 4 * kMembers) << "round " << o.round;
    EXPECT_EQ(pulled, 4 * kMembers) << "round " << o.round;
    for (int m : members_) EXPECT_EQ(received[m], 4) << "round " << o.round << " member " << m;
  }
  EXPECT_EQ(rounds.size(), static_cast<size_t>(kRounds));
  EXPECT_EQ(root_->refused(), 0u);
  for (const auto& relay : relays_) EXPECT_EQ(relay->refused(), 0u);
}

// What peers may send that the protocol never would: each is dropped and counted, and the next round works.
TEST_F(TsRelayTest, MalformedAndUnexpectedMessagesAreDropped) {
  const KeySlice& slice = layout_.slices(1)[0];
  const uint64_t wk = slice.wire_key;
  const std::vector<float> right_length(slice.length, 1.0f), wrong_length(slice.length + 1, 1.0f);
  auto op = [&](std::map<std::string, std::string> fields, std::vector<Bytes> data = {}, uint64_t key = 0,
                int64_t round = 0) {
    Message m;
    m.meta.command = Command::kControl;
    m.meta.app_id = kTsAppId;
    m.meta.keys = {key == 0 ? wk : key};
    m.meta.round = round;
    m.meta.body = EncodeFields(fields);
    m.data = std::move(data);
    return m;
  };
  Postoffice& m0 = tier_->worker(0);
  const int m1 = members_[1], server = tier_->server(0).my_id();
  std::vector<Message> to_member = {
      op({{"op", "partial"}, {"covers", std::to_string(members_[0])}, {"num_merged", "1"}},
         {Bytes::CopyVector(right_length)}),                                       // no sum waiting for it
      op({{"op", "model"}}, {Bytes::CopyVector(wrong_length)}),                    // wrong length
      op({{"op", "push_to"}, {"to", std::to_string(server)}}),                     // not from the server
      op({{"op", "zzz"}}),                                                         // unknown op
      op({{"op", "partial"}, {"covers", "x,"}, {"num_merged", "1"}}, {Bytes::CopyVector(right_length)}),
  };
  Message no_fields = op({});
  no_fields.meta.body = "not msgpack";
  to_member.push_back(no_fields);
  for (Message& m : to_member) ASSERT_TRUE(m0.Send(m1, std::move(m)).ok());
  std::vector<Message> to_root = {
      op({{"op", "ask_push"}}, {}, WireKey(9, 0)),            // not in the layout
      op({{"op", "ask_pull"}, {"last", "nope"}}),              // malformed
      op({{"op", "model_ack"}}),                               // nothing was sent
      op({{"op", "ask_push"}}, {}, 0, -3),                     // bad round
  };
  for (Message& m : to_root) ASSERT_TRUE(m0.Send(server, std::move(m)).ok());
  for (int i = 0; i < 200 && (relays_[1]->refused() < to_member.size() || root_->refused() < to_root.size()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(relays_[1]->refused(), to_member.size());
  EXPECT_EQ(root_->refused(), to_root.size());
  const auto answers = Round(0);
  const KeySlice& s = layout_.slices(1)[0];
  EXPECT_FLOAT_EQ(answers[2].at(s.wire_key)[3], ExpectedMean(0, s)[3]);
}

// The aggregator's side of relayed pushes: a push that covers other senders counts as theirs; covering a sender
// that already pushed, or a node that is not a worker, or covering anything without relayed_pushes, is refused.
TEST_F(TsRelayTest, RelayedPushesCountOncePerCoveredSender) {
  const KeySlice& s = layout_.slices(2)[0];
  auto push = [&](int m, std::string covers, int merged) {
    RawRequest req;
    req.command = Command::kPush;
    req.round = 0;
    req.num_merged = merged;
    req.wire_keys = {s.wire_key};
    req.payloads = {Bytes::CopyVector(std::vector<float>{1.0f * merged, 2.0f, 3.0f})};
    req.fields[kCoversField] = covers;
    auto done = std::make_shared<std::promise<Status>>();  // may be answered after the wait gave up
    links_[m]->SendRaw(std::move(req), [done](Status st, std::vector<Bytes>) { done->set_value(st); });
    auto f = done->get_future();
    return f.wait_for(std::chrono::milliseconds(300)) == std::future_status::ready ? f.get()
                                                                                  : Status::DeadlineExceeded("open");
  };
  const int server = tier_->server(0).my_id();
  EXPECT_EQ(push(0, std::to_string(server), 1).code(), StatusCode::kInvalidArgument);  // a server is no sender
  // Member 0 relays member 1's contribution: the round waits for member 2 only (still open after 300 ms).
  EXPECT_EQ(push(0, std::to_string(members_[1]), 2).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(push(1, "", 1).code(), StatusCode::kInvalidArgument);  // member 1 already counted in this round
  std::optional<std::vector<float>> before = aggregator_->StoredValues(s.wire_key);
  EXPECT_FALSE(before.has_value());

  SyncAggregatorOptions plain;
  plain.expected_senders = kMembers;
  auto strict = SyncAggregator::Create(layout_, plain, &mean_sink_);
  ASSERT_TRUE(strict.ok());
  server_.reset();
  server_ = std::make_unique<KvServer>(&tier_->server(0), 0, strict->get());
  const Status refused = push(2, std::to_string(members_[0]), 2);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("relayed"), std::string::npos) << refused.ToString();
  server_.reset();
}

// A round whose value never comes (here the coordinator is gone: its messages are dropped) fails after the tier's
// request timeout, naming the slice and its server, instead of leaving its caller waiting for ever.
TEST_F(TsRelayTest, ARoundWhoseValueNeverComesFailsAfterTheRequestTimeout) {
  tier_->server(0).UnregisterCustomer(kTsAppId);
  const KeySlice& s = layout_.slices(2)[0];
  std::promise<Status> answered;
  relays_[0]->OnComplete(s.wire_key, 0, Bytes::CopyVector(std::vector<float>{1, 2, 3}), 1,
                         [&answered](Status st, Bytes) { answered.set_value(st); });
  auto f = answered.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(15)), std::future_status::ready);  // request timeout: 3 s
  const Status st = f.get();
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_NE(st.message().find("tsengine overlay"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find(KeyText(s.wire_key)), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace geomx::comm
