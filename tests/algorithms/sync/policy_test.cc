// Sync policies without a recipe: each test builds a mode from its typed settings (sync::SyncSettings) and a key
// schema, puts its global and local server policies on two tiers over inproc ZeroMQ (2 data centres x 2 workers,
// one local server each, one global server; policy_harness.h), and drives the workers' side by hand through
// KvLinks. The values the workers get back are compared with hand computations of the algorithm.
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/ps/job.h"
#include "algorithms/sync/sync_mode.h"
#include "tests/algorithms/sync/policy_harness.h"

namespace geomx::sync {
namespace {

using testing::kDcs;
using testing::kWorkersPerDc;

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

// The harness with the two keys above; each worker's values and answers as one vector (a's 5, then b's 2).
class TwoKeyHarness {
 public:
  TwoKeyHarness(const SyncSettings& settings, SyncJob job, comm::LinkPlan links)
      : h_(settings, std::move(job), links, /*split_bytes=*/12) {}
  void PushInitial(const std::vector<float>& a, const std::vector<float>& b, const comm::TierCodec&) {
    h_.PushInitial({a, b});
  }
  std::vector<std::vector<float>> Round(const std::vector<std::vector<float>>& a,
                                        const std::vector<std::vector<float>>& b, int64_t round) {
    std::vector<testing::KeyValues> in;
    for (size_t w = 0; w < a.size(); ++w) in.push_back({a[w], b[w]});
    return Joined(h_.Round(in, round));
  }
  std::vector<std::vector<float>> PullInitial() { return Joined(h_.PullInitial()); }
  ServerPolicy& global_policy() { return h_.global_policy(); }
  void DropWorker(int w) { h_.DropWorker(w); }

 private:
  static std::vector<std::vector<float>> Joined(const std::vector<testing::KeyValues>& per_worker) {
    std::vector<std::vector<float>> out;
    for (const testing::KeyValues& kv : per_worker) {
      std::vector<float> joined = kv[0];
      joined.insert(joined.end(), kv[1].begin(), kv[1].end());
      out.push_back(std::move(joined));
    }
    return out;
  }
  testing::PolicyHarness h_;
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
  TwoKeyHarness h(settings, Job("sgd", 0.5f, OptimizerPlacement::kGlobalServer), comm::LinkPlan{});
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

// topology.failure_policy: continue: once worker 3 (dc-b's second) is dropped, a round averages the other three
// workers' gradients and the learning rate shrinks by 3/4 (the batch did): SGD steps by lr * (sum of 3) / 4.
TEST(SyncPolicyTest, FsaScalesTheLearningRateByTheShareOfWorkersThatContributed) {
  SyncSettings settings;  // mode fsa
  TwoKeyHarness h(settings, Job("sgd", 0.5f, OptimizerPlacement::kGlobalServer), comm::LinkPlan{});
  std::vector<float> wa = {1, 2, 3, 4, 5}, wb = {-1, 1};
  h.PushInitial(wa, wb, comm::TierCodec{});
  (void)h.PullInitial();
  auto step = [&](int round, int workers) {
    const auto ga = Values(5, round, 1.0f), gb = Values(2, round, -2.0f);
    const auto got = h.Round(ga, gb, round);
    for (size_t i = 0; i < 5; ++i) {
      float sum = 0;
      for (int w = 0; w < workers; ++w) sum += ga[w][i];
      wa[i] -= 0.5f * sum / 4.0f;
    }
    for (size_t i = 0; i < 2; ++i) {
      float sum = 0;
      for (int w = 0; w < workers; ++w) sum += gb[w][i];
      wb[i] -= 0.5f * sum / 4.0f;
    }
    for (int w = 0; w < workers; ++w) {
      for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(got[w][i], wa[i], 1e-5f) << "round " << round << " worker " << w;
      for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(got[w][5 + i], wb[i], 1e-5f) << "round " << round << " worker " << w;
    }
  };
  step(0, 4);
  h.DropWorker(3);
  step(1, 3);
  step(2, 3);
}

// optimizer.where: worker: the servers answer the mean gradient itself, through FP16 links on both tiers.
TEST(SyncPolicyTest, FsaAnswersTheMeanGradientThroughCompressedLinks) {
  comm::LinkSchemes schemes;
  schemes.worker_to_local = schemes.local_to_global = schemes.global_to_local = schemes.local_to_worker =
      comm::LinkScheme::kFp16;
  const comm::LinkPlan links = comm::MakeLinkPlan(schemes, comm::LinkParams{});
  TwoKeyHarness h(SyncSettings{}, Job("sgd", 0.5f, OptimizerPlacement::kWorker), links);
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
  TwoKeyHarness h(settings, Job("sgd", 0.1f, OptimizerPlacement::kWorker), comm::LinkPlan{});
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
