// Sync policies without a recipe: each test builds a mode from its typed settings (sync::SyncSettings) and a key
// schema, puts its global and local server policies on two tiers over inproc ZeroMQ (2 data centres x 2 workers,
// one local server each, one global server), and drives the workers' side by hand through KvLinks. The values
// the workers get back are compared with hand computations of the algorithm.
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/ps/job.h"
#include "algorithms/sync/sync_mode.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::sync {
namespace {

using comm::testing::FastOptions;
using comm::testing::MakeSpec;
using comm::testing::TestTier;

constexpr int kDcs = 2;
constexpr int kWorkersPerDc = 2;
constexpr uint64_t kKeyA = 0;  // 5 floats: two slices of 3 + 2 with split_bytes 12
constexpr uint64_t kKeyB = 1;  // 2 floats

ps::KeySchema Schema() {
  ps::KeyDef a;
  a.key = kKeyA;
  a.name = "a";
  a.elems = 5;
  ps::KeyDef b;
  b.key = kKeyB;
  b.name = "b";
  b.elems = 2;
  return ps::KeySchema({a, b});
}

// The two tiers of a 2 x 2 job with the mode's policies on every server, and a KvLink per worker.
class PolicyHarness {
 public:
  PolicyHarness(const SyncSettings& settings, SyncJob job, comm::LinkPlan links)
      : transport_(comm::testing::MakeTransport("zmq")), job_(std::move(job)) {
    mode_ = std::move(CreateSyncMode(settings)).value();
    comm::CommOptions o = FastOptions();
    o.split_bytes = 12;
    const ps::KeySchema schema = Schema();
    global_layout_ = schema.Layout(1, o.split_bytes).value();
    comm::TierSpec gspec = MakeSpec(*transport_, "global", 1, kDcs + 1, o);  // + the master
    gspec.scheduler_party = "central";
    global_ = std::make_unique<TestTier>(*transport_, gspec, std::vector<std::string>{"dc-a", "dc-b", "central"});
    ServerArgs gargs{&job_, global_layout_, links.global, nullptr};
    global_policy_ = std::move(mode_->MakeGlobalServer(gargs)).value();
    global_server_ = std::make_unique<comm::KvServer>(&global_->server(0), 0, global_policy_->handler());
    master_ = std::make_unique<comm::KvWorker>(&global_->worker(kDcs), 0, global_layout_);
    for (int d = 0; d < kDcs; ++d) {
      const std::string name = d == 0 ? "dc-a" : "dc-b";
      dcs_.push_back(std::make_unique<TestTier>(*transport_, MakeSpec(*transport_, name, 1, kWorkersPerDc, o)));
      const comm::KeyLayout local = schema.Layout(1, o.split_bytes).value();
      uppers_.push_back(std::make_unique<comm::KvWorker>(&global_->worker(d), 0, global_layout_));
      upper_links_.push_back(comm::KvLink::Create(uppers_.back().get(), links.global).value());
      LocalServerArgs largs;
      largs.job = &job_;
      largs.layout = local;
      largs.codec = links.local;
      largs.dc_index = d;
      largs.workers = kWorkersPerDc;
      largs.upper = upper_links_.back().get();
      local_policies_.push_back(std::move(mode_->MakeLocalServer(largs)).value());
      local_servers_.push_back(
          std::make_unique<comm::KvServer>(&dcs_.back()->server(0), 0, local_policies_.back()->handler()));
      for (int w = 0; w < kWorkersPerDc; ++w) {
        kvs_.push_back(std::make_unique<comm::KvWorker>(&dcs_.back()->worker(w), 0, local));
        links_.push_back(comm::KvLink::Create(kvs_.back().get(), links.local).value());
      }
    }
    std::vector<std::function<Status()>> start = {[this] { return global_->Start(); }};
    for (auto& dc : dcs_) start.push_back([&dc] { return dc->Start(); });
    for (const Status& s : comm::testing::RunConcurrently(start)) EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<std::function<Status()>> barrier = {[this] { return BarrierAll(*global_); }};
    for (auto& dc : dcs_) barrier.push_back([&dc] { return BarrierAll(*dc); });
    for (const Status& s : comm::testing::RunConcurrently(barrier)) EXPECT_TRUE(s.ok()) << s.ToString();
  }

  ~PolicyHarness() {
    std::vector<std::function<Status()>> fin = {[this] { return global_->Finalize(); }};
    for (auto& dc : dcs_) fin.push_back([&dc] { return dc->Finalize(); });
    for (const Status& s : comm::testing::RunConcurrently(fin)) EXPECT_TRUE(s.ok()) << s.ToString();
    links_.clear();
    kvs_.clear();
    local_servers_.clear();
    upper_links_.clear();
    uppers_.clear();
    local_policies_.clear();
    global_server_.reset();
    master_.reset();
    global_policy_.reset();
  }

  // The master worker's initial weights of both keys (round kInitRound), losslessly.
  void PushInitial(const std::vector<float>& a, const std::vector<float>& b, const comm::TierCodec& global) {
    auto link = comm::KvLink::Create(master_.get(), comm::LosslessSender(global)).value();
    const uint64_t keys[] = {kKeyA, kKeyB};
    const float* values[] = {a.data(), b.data()};
    ASSERT_TRUE(link->Push(keys, values, comm::kInitRound).ok());
  }

  // Every worker PushPulls its (a, b) at `round` concurrently; returns what each got back.
  std::vector<std::vector<float>> Round(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                                        int64_t round) {
    std::vector<std::vector<float>> out(links_.size(), std::vector<float>(7));
    std::vector<std::function<Status()>> calls;
    for (size_t w = 0; w < links_.size(); ++w) {
      calls.push_back([&, w] {
        const uint64_t keys[] = {kKeyA, kKeyB};
        const float* values[] = {a[w].data(), b[w].data()};
        float* outs[] = {out[w].data(), out[w].data() + 5};
        return links_[w]->PushPull(keys, values, outs, round);
      });
    }
    for (const Status& s : comm::testing::RunConcurrently(calls)) EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  // Every worker pulls round kInitRound.
  std::vector<std::vector<float>> PullInitial() {
    std::vector<std::vector<float>> out(links_.size(), std::vector<float>(7));
    std::vector<std::function<Status()>> calls;
    for (size_t w = 0; w < links_.size(); ++w) {
      calls.push_back([&, w] {
        const uint64_t keys[] = {kKeyA, kKeyB};
        float* outs[] = {out[w].data(), out[w].data() + 5};
        return links_[w]->Pull(keys, outs, comm::kInitRound);
      });
    }
    for (const Status& s : comm::testing::RunConcurrently(calls)) EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  ServerPolicy& global_policy() { return *global_policy_; }

 private:
  static Status BarrierAll(TestTier& tier) {
    std::vector<std::function<Status()>> fns;
    for (comm::Postoffice* po : tier.all()) fns.push_back([po] { return po->Barrier("all"); });
    for (const Status& s : comm::testing::RunConcurrently(fns)) GEOMX_RETURN_IF_ERROR(s);
    return Status::Ok();
  }

  std::unique_ptr<comm::testing::Transport> transport_;
  SyncJob job_;
  std::unique_ptr<SyncMode> mode_;
  comm::KeyLayout global_layout_;
  std::unique_ptr<TestTier> global_;
  std::vector<std::unique_ptr<TestTier>> dcs_;
  std::unique_ptr<ServerPolicy> global_policy_;
  std::unique_ptr<comm::KvServer> global_server_;
  std::unique_ptr<comm::KvWorker> master_;
  std::vector<std::unique_ptr<comm::KvWorker>> uppers_;
  std::vector<std::unique_ptr<comm::KvLink>> upper_links_;
  std::vector<std::unique_ptr<ServerPolicy>> local_policies_;
  std::vector<std::unique_ptr<comm::KvServer>> local_servers_;
  std::vector<std::unique_ptr<comm::KvWorker>> kvs_;
  std::vector<std::unique_ptr<comm::KvLink>> links_;
};

SyncJob Job(const std::string& optimizer, float lr, OptimizerPlacement where) {
  SyncJob job;
  job.job.schema = Schema();
  job.job.plan.iterations_per_epoch = 10;
  job.job.plan.epochs = 1;
  job.job.optimizer.name = optimizer;
  job.job.optimizer.lr = lr;
  job.job.optimizer.weight_decay = 0;
  job.optimizer_where = where;
  job.datacentres = {"dc-a", "dc-b"};
  job.total_workers = kDcs * kWorkersPerDc;
  return job;
}

// Worker w's gradient (or model) at round r: distinct per worker, element and round.
std::vector<std::vector<float>> Values(size_t elems, int round, float scale) {
  std::vector<std::vector<float>> v(kDcs * kWorkersPerDc, std::vector<float>(elems));
  for (size_t w = 0; w < v.size(); ++w) {
    for (size_t i = 0; i < elems; ++i) v[w][i] = scale * (0.5f * static_cast<float>(w) - 0.3f * i + 0.1f * round);
  }
  return v;
}

std::vector<float> MeanOf(const std::vector<std::vector<float>>& v) {
  std::vector<float> m(v[0].size(), 0.0f);
  for (const auto& x : v) {
    for (size_t i = 0; i < m.size(); ++i) m[i] += x[i];
  }
  for (float& x : m) x /= static_cast<float>(v.size());
  return m;
}

// FSA with plain SGD on the global server: after each round every worker holds w - lr * mean(g).
TEST(SyncPolicyTest, FsaServersApplySgdToTheMeanOfEveryWorkersGradient) {
  SyncSettings settings;  // mode fsa
  PolicyHarness h(settings, Job("sgd", 0.5f, OptimizerPlacement::kGlobalServer), comm::LinkPlan{});
  std::vector<float> wa = {1, 2, 3, 4, 5}, wb = {-1, 1};
  h.PushInitial(wa, wb, comm::TierCodec{});
  for (const auto& got : h.PullInitial()) EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4, 5, -1, 1}));
  for (int round = 0; round < 3; ++round) {
    const auto ga = Values(5, round, 1.0f), gb = Values(2, round, -2.0f);
    const auto got = h.Round(ga, gb, round);
    const std::vector<float> ma = MeanOf(ga), mb = MeanOf(gb);
    for (size_t i = 0; i < 5; ++i) wa[i] -= 0.5f * ma[i];
    for (size_t i = 0; i < 2; ++i) wb[i] -= 0.5f * mb[i];
    for (size_t w = 0; w < got.size(); ++w) {
      for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(got[w][i], wa[i], 1e-5f) << "round " << round << " worker " << w;
      for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(got[w][5 + i], wb[i], 1e-5f) << "round " << round << " worker " << w;
    }
  }
  // The global server's state holds the same weights (ps/server_state.h), slice by slice.
  ps::StateTensors state;
  ASSERT_NE(h.global_policy().state(), nullptr);
  ASSERT_TRUE(h.global_policy().state()->SaveState("", &state).ok());
  EXPECT_EQ(state.count("w/" + std::to_string(comm::WireKey(kKeyB, 0))), 1u);
}

// optimizer.where: worker: the servers answer the mean gradient itself, through FP16 links on both tiers.
TEST(SyncPolicyTest, FsaAnswersTheMeanGradientThroughCompressedLinks) {
  comm::LinkSchemes schemes;
  schemes.worker_to_local = schemes.local_to_global = schemes.global_to_local = schemes.local_to_worker =
      comm::LinkScheme::kFp16;
  const comm::LinkPlan links = comm::MakeLinkPlan(schemes, comm::LinkParams{});
  PolicyHarness h(SyncSettings{}, Job("sgd", 0.5f, OptimizerPlacement::kWorker), links);
  h.PushInitial({1, 2, 3, 4, 5}, {-1, 1}, links.global);
  const auto ga = Values(5, 0, 1.0f), gb = Values(2, 0, 1.0f);
  const auto got = h.Round(ga, gb, 0);
  const std::vector<float> ma = MeanOf(ga), mb = MeanOf(gb);
  for (const auto& w : got) {
    for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(w[i], ma[i], 4e-3f);  // FP16 on four hops
    for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(w[5 + i], mb[i], 4e-3f);
  }
}

// hfa with K2 = 1: every round is a WAN sync; the global model moves by the mean of the workers' model deltas
// from the milestone (the initial weights), and every worker gets the new global model.
TEST(SyncPolicyTest, HfaAveragesTheWorkersModelsOverBothTiers) {
  SyncSettings settings;
  settings.mode = "hfa";
  settings.k1 = 1;
  settings.k2 = 1;
  PolicyHarness h(settings, Job("sgd", 0.1f, OptimizerPlacement::kWorker), comm::LinkPlan{});
  std::vector<float> wa = {1, 2, 3, 4, 5}, wb = {-1, 1};
  h.PushInitial(wa, wb, comm::TierCodec{});
  (void)h.PullInitial();  // the local servers fetch the milestone
  for (int round = 0; round < 2; ++round) {
    auto ma = Values(5, round, 1.0f), mb = Values(2, round, 1.0f);  // the workers' models after local steps
    const auto got = h.Round(ma, mb, round);
    wa = MeanOf(ma);  // outer SGD with lr 1: w_g + mean(model - w_g) = mean(model)
    wb = MeanOf(mb);
    for (const auto& w : got) {
      for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(w[i], wa[i], 1e-5f) << "round " << round;
      for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(w[5 + i], wb[i], 1e-5f) << "round " << round;
    }
  }
}

// Unknown modes and bad settings are refused with the recipe key.
TEST(SyncPolicyTest, TheRegistryKnowsEveryModeAndRefusesUnknownOnes) {
  EXPECT_EQ(SyncModeRegistry::Names(), (std::vector<std::string>{"diloco", "esync", "fsa", "hfa", "mixed"}));
  SyncSettings s;
  s.mode = "nope";
  Result<std::unique_ptr<SyncMode>> m = CreateSyncMode(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("sync.mode: 'nope'"), std::string::npos);
  s.mode = "hfa";
  s.k1 = 0;
  m = CreateSyncMode(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("sync.k1"), std::string::npos);
  EXPECT_TRUE(TraitsOf("esync").state_server);
  EXPECT_TRUE(TraitsOf("hfa").averages_models);
  EXPECT_FALSE(TraitsOf("fsa").needs_topology);
  EXPECT_TRUE(TraitsOf("mixed").update_per_datacentre);
}

}  // namespace
}  // namespace geomx::sync
