// Compressed WAN links under the averaging modes, through their policies on both tiers (policy_harness.h):
//   * diloco with exact deltas up and bsc answers: the global server compresses its answer after the outer
//     Nesterov step with its own error feedback, so the answer stays top-k sparse over many syncs, and what was
//     sent plus the global server's residual equals the sum of the dense outer updates (computed independently
//     here, in double);
//   * hfa + bsc: the local servers' error feedback on a hand-built case (what the data centres hold plus the
//     residuals over the workers equals the sum of the workers' mean deltas).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/ps/job.h"
#include "algorithms/ps/server_state.h"
#include "algorithms/sync/sync_mode.h"
#include "comm/compression/link_plan.h"
#include "comm/key_layout.h"
#include "tests/algorithms/sync/policy_harness.h"

namespace geomx::sync {
namespace {

using testing::KeyValues;
using testing::kWorkers;
using testing::PolicyHarness;

ps::KeyDef Key(uint64_t key, const std::string& name, uint64_t elems) {
  ps::KeyDef d;
  d.key = key;
  d.name = name;
  d.elems = elems;
  return d;
}

SyncJob AveragingJob(std::vector<ps::KeyDef> keys) {
  SyncJob job;
  job.job.schema = ps::KeySchema(std::move(keys));
  job.job.plan.iterations_per_epoch = 10;
  job.job.plan.epochs = 1;
  job.job.optimizer.name = "sgd";  // the workers' optimizer; the servers run the outer rule
  job.job.optimizer.lr = 0.1f;
  job.optimizer_where = OptimizerPlacement::kWorker;
  job.datacentres = {"dc-a", "dc-b"};
  job.total_workers = kWorkers;
  return job;
}

// A deterministic, dense, sign-mixed model delta of worker w, element i, sync t.
float Delta(int w, size_t i, int t) {
  const double x = std::sin(0.37 * static_cast<double>(i + 1) * (w + 1) + 1.3 * t) +
                   0.25 * std::cos(2.1 * static_cast<double>(i) - 0.7 * w + t);
  return static_cast<float>(0.01 * x);
}

// diloco with K1 = K2 = 1, outer Nesterov (lr 0.7, momentum 0.9), deltas up dense (f32) and the answers bsc at
// ratio 0.05 over a 200-element key (one slice, k = 10) and a 8-element key below the size bound (answered whole).
// Over 8 syncs: every answer changes at most k coordinates of the large key (the momentum moves all 200 every
// sync, so an answer of the whole update would change all of them and grow denser), the small key gets the dense
// update, and sent + residual == the sum of the dense outer updates.
TEST(DilocoCompressionTest, AnswersStayTopKSparseAndSentPlusResidualIsTheOuterUpdates) {
  constexpr size_t kLarge = 200, kSmall = 8;
  constexpr uint64_t kK = 10;  // max(1, floor(0.05 * 200))
  constexpr int kSyncs = 8;
  constexpr double kLr = 0.7, kMu = 0.9;
  SyncSettings settings;
  settings.mode = "diloco";
  settings.k1 = 1;
  settings.k2 = 1;
  settings.outer_lr = static_cast<float>(kLr);
  settings.outer_momentum = static_cast<float>(kMu);
  comm::LinkSchemes schemes;
  schemes.local_to_global = comm::LinkScheme::kNone;  // exact deltas up (a bsc push would run SparseLoCo)
  schemes.global_to_local = comm::LinkScheme::kBsc;
  comm::LinkParams params;
  params.size_lower_bound = 100;
  params.bsc.ratio = 0.05f;
  const comm::LinkPlan links = comm::MakeLinkPlan(schemes, params);
  PolicyHarness h(settings, AveragingJob({Key(0, "w", kLarge), Key(1, "b", kSmall)}), links, /*split_bytes=*/4096);

  KeyValues init = {std::vector<float>(kLarge), std::vector<float>(kSmall)};
  for (size_t i = 0; i < kLarge; ++i) init[0][i] = 0.5f - 0.003f * static_cast<float>(i);
  for (size_t i = 0; i < kSmall; ++i) init[1][i] = 0.1f * static_cast<float>(i);
  h.PushInitial(init);
  const std::vector<KeyValues> first = h.PullInitial();
  for (const KeyValues& got : first) EXPECT_EQ(got, init);

  // The independent dense computation: the mean delta over the 4 workers, Nesterov on g = -mean.
  std::vector<std::vector<double>> velocity = {std::vector<double>(kLarge), std::vector<double>(kSmall)};
  std::vector<std::vector<double>> dense_sum = velocity;
  KeyValues milestone = init;
  for (int t = 0; t < kSyncs; ++t) {
    std::vector<KeyValues> models(kWorkers, milestone);
    std::vector<std::vector<double>> update(2);
    for (size_t k = 0; k < 2; ++k) {
      update[k].assign(milestone[k].size(), 0.0);
      for (size_t i = 0; i < milestone[k].size(); ++i) {
        double mean = 0;
        for (int w = 0; w < kWorkers; ++w) {
          const float d = Delta(w, i + 1000 * k, t);
          models[w][k][i] = milestone[k][i] + d;
          mean += d;
        }
        const double g = -mean / kWorkers;
        velocity[k][i] = kMu * velocity[k][i] + g;
        update[k][i] = -kLr * (g + kMu * velocity[k][i]);
        dense_sum[k][i] += update[k][i];
      }
    }
    const std::vector<KeyValues> got = h.Round(models, t);
    for (int w = 1; w < kWorkers; ++w) EXPECT_EQ(got[w], got[0]) << "sync " << t << ": every worker gets one model";
    size_t changed = 0;
    for (size_t i = 0; i < kLarge; ++i) changed += got[0][0][i] != milestone[0][i] ? 1 : 0;
    EXPECT_LE(changed, kK) << "sync " << t << ": the answer of the 200-element key is not top-" << kK;
    EXPECT_GT(changed, 0u) << "sync " << t;
    for (size_t i = 0; i < kSmall; ++i) {  // below the size bound: the dense update, nothing held back
      EXPECT_NEAR(got[0][1][i] - milestone[1][i], update[1][i], 2e-6) << "sync " << t << " element " << i;
    }
    milestone = got[0];
  }

  // Error feedback at the global server: sent (milestone - init) + residual == sum of the dense outer updates.
  ps::StateTensors state;
  ASSERT_NE(h.global_policy().state(), nullptr);
  ASSERT_TRUE(h.global_policy().state()->SaveState("", &state).ok());
  const std::string name = "residual/" + std::to_string(comm::WireKey(0, 0));
  ASSERT_EQ(state.count(name), 1u) << "the global server keeps no residual of the sparsified key";
  const std::vector<float> residual = state.at(name).ToFloatVector();
  ASSERT_EQ(residual.size(), kLarge);
  double held_back = 0;
  for (size_t i = 0; i < kLarge; ++i) {
    const double sent = static_cast<double>(milestone[0][i]) - init[0][i];
    EXPECT_NEAR(sent + residual[i], dense_sum[0][i], 1e-5) << "element " << i;
    held_back += std::fabs(residual[i]);
  }
  EXPECT_GT(held_back, 1e-3);  // the residual really holds what the answers left out
  EXPECT_EQ(state.count("residual/" + std::to_string(comm::WireKey(1, 0))), 0u);  // answered whole: no residual
}

// hfa with K1 = K2 = 1 and bsc on both WAN links at ratio 0.25 over a 4-element key (k = 1), by hand:
//   sync 0  dc-a's workers hold (3,1,0,0) and (5,1,0,0): mean (4,1,0,0), weighted delta (8,2,0,0); top-1 sends
//           (8,0,0,0) and keeps (0,2,0,0). dc-b: (0,0,1,1), (0,0,3,1) -> (0,0,4,2), sends (0,0,4,0), keeps
//           (0,0,0,2). The global server: (8,0,4,0) / 4 workers = (2,0,1,0): the new global model.
//   sync 1  the workers hold the global model (deltas 0): each local server sends its residual, (0,2,0,0) and
//           (0,0,0,2); the global model moves by (0,0.5,0,0.5) to (2,0.5,1,0.5).
// Invariant after every sync: global model - init + (residual_a + residual_b) / 4 == sum of the mean deltas
// (2,0.5,1,0.5).
TEST(HfaCompressionTest, LocalErrorFeedbackOnAHandBuiltCase) {
  SyncSettings settings;
  settings.mode = "hfa";
  settings.k1 = 1;
  settings.k2 = 1;
  comm::LinkSchemes schemes;
  schemes.local_to_global = schemes.global_to_local = comm::LinkScheme::kBsc;
  comm::LinkParams params;
  params.size_lower_bound = 4;
  params.bsc.ratio = 0.25f;
  PolicyHarness h(settings, AveragingJob({Key(0, "w", 4)}), comm::MakeLinkPlan(schemes, params), /*split_bytes=*/64);
  h.PushInitial({{0, 0, 0, 0}});
  (void)h.PullInitial();
  const std::vector<KeyValues> sync0 =
      h.Round({{{3, 1, 0, 0}}, {{5, 1, 0, 0}}, {{0, 0, 1, 1}}, {{0, 0, 3, 1}}}, 0);
  const std::vector<float> global0 = {2, 0, 1, 0};
  for (const KeyValues& got : sync0) EXPECT_EQ(got[0], global0);
  const std::vector<float> held0 = {0, 2, 0, 2};  // residual_a + residual_b
  const std::vector<float> mean_deltas = {2, 0.5f, 1, 0.5f};
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(global0[i] + held0[i] / kWorkers, mean_deltas[i]) << i;
  const std::vector<KeyValues> sync1 = h.Round(std::vector<KeyValues>(kWorkers, KeyValues{global0}), 1);
  for (const KeyValues& got : sync1) EXPECT_EQ(got[0], mean_deltas);  // residuals sent: nothing held back
}

}  // namespace
}  // namespace geomx::sync
