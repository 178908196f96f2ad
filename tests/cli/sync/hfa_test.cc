// sync.mode hfa and diloco (cli/sync/hfa.h): WAN synchronisations counted exactly, the K1 = K2 = 1 equivalences
// with single-process training (which check the averaging weights, the milestone and the outer step end to end),
// and the outer optimizer against a hand computation.
#include "cli/sync/hfa.h"

#include <gtest/gtest.h>

#include "cli/sync_rules.h"
#include "comm/key_layout.h"
#include "tests/cli/cluster_test_util.h"

namespace geomx::cli {
namespace {

using cluster_testing::AveragingRecipe;
using cluster_testing::InitialWeights;
using cluster_testing::MaxDiff;
using cluster_testing::Reference;
using cluster_testing::RunCluster;
using cluster_testing::Weights;

int64_t NumWireKeys(const Recipe& r) {
  auto setup = PrepareRun(r);
  EXPECT_TRUE(setup.ok());
  std::vector<comm::KeySpec> keys;
  uint64_t i = 0;
  for (nn::Parameter* p : setup->model->Parameters()) keys.push_back({i++, static_cast<uint64_t>(p->numel()), true});
  auto layout = comm::KeyLayout::Build(keys, r.topology.global_servers, r.topology.options.split_bytes);
  EXPECT_TRUE(layout.ok());
  int64_t n = 0;
  for (uint64_t k : layout->keys()) n += static_cast<int64_t>(layout->slices(k).size());
  return n;
}

struct Counts {
  int k1, k2, epochs;
};

class HfaSyncCountTest : public ::testing::TestWithParam<Counts> {};

// 16 iterations per epoch; a WAN sync every K1 * K2 iterations, the data-centre averages every K1.
TEST_P(HfaSyncCountTest, WanSyncsAreIterationsOverK1K2) {
  const Counts c = GetParam();
  Recipe r = AveragingRecipe("hfa", c.epochs);
  r.sync.k1 = c.k1;
  r.sync.k2 = c.k2;
  AveragingStatsForTesting().Reset();
  const auto finals = RunCluster(r);
  ASSERT_EQ(finals.size(), 4u);
  const int64_t iterations = 16 * c.epochs;
  const int64_t wan = iterations / (c.k1 * c.k2);
  EXPECT_EQ(AveragingStatsForTesting().wan_syncs.load(), wan);
  EXPECT_EQ(AveragingStatsForTesting().key_syncs.load(), wan * NumWireKeys(r));
  // Every wire key is averaged in both data centres every K1 iterations.
  EXPECT_EQ(AveragingStatsForTesting().local_averages.load(), 2 * (iterations / c.k1) * NumWireKeys(r));
  if (iterations % (c.k1 * c.k2) == 0) {
    // The run ended on a WAN sync: every replica holds the global model.
    const Weights& first = finals.begin()->second;
    for (const auto& [name, w] : finals) EXPECT_EQ(MaxDiff(w, first), 0.0f) << name;
  }
  EXPECT_GT(MaxDiff(finals.begin()->second, InitialWeights(r)), 1e-3f);  // training happened
}

INSTANTIATE_TEST_SUITE_P(K1K2, HfaSyncCountTest,
                         ::testing::Values(Counts{2, 4, 3}, Counts{5, 2, 3}, Counts{1, 1, 1}, Counts{3, 7, 2}),
                         [](const auto& info) {
                           return "k1_" + std::to_string(info.param.k1) + "_k2_" + std::to_string(info.param.k2);
                         });

// Compressed WAN links (accelerators.compression: bsc): the local servers send sparsified deltas with error
// feedback and the global server answers sparse updates; every data centre still ends on the same global model.
TEST(HfaTest, CompressedWanLinksKeepTheReplicasInStep) {
  for (const char* scheme : {"bsc", "fp16"}) {
    Recipe r = AveragingRecipe("hfa", 2);
    r.sync.k1 = 2;
    r.sync.k2 = 2;
    r.accelerators.local_to_global = scheme;
    r.accelerators.global_to_local = scheme;
    r.accelerators.bsc_ratio = 0.1f;
    r.accelerators.size_lower_bound = 16;  // sparsify the MLP's slices too
    AveragingStatsForTesting().Reset();
    const auto finals = RunCluster(r);
    ASSERT_EQ(finals.size(), 4u) << scheme;
    EXPECT_EQ(AveragingStatsForTesting().wan_syncs.load(), 32 / 4) << scheme;
    const Weights& first = finals.begin()->second;
    for (const auto& [name, w] : finals) EXPECT_EQ(MaxDiff(w, first), 0.0f) << scheme << " " << name;
    EXPECT_GT(MaxDiff(first, InitialWeights(r)), 1e-3f) << scheme;
  }
}

// K1 = K2 = 1 with plain SGD on the workers: averaging the models after one step each equals averaging the
// gradients, so HFA (w_g += mean delta over the 4 workers) must match one process on the combined batches.
TEST(HfaTest, OneStepRoundsMatchSingleProcessSgd) {
  Recipe r = AveragingRecipe("hfa", 2);
  r.sync.k1 = 1;
  r.sync.k2 = 1;
  const auto finals = RunCluster(r);
  ASSERT_EQ(finals.size(), 4u);
  const Weights ref = Reference(r, r.optimizer);
  for (const auto& [name, w] : finals) EXPECT_LE(MaxDiff(w, ref), 1e-4f) << name;
}

// DiLoCo with K1 = K2 = 1, inner SGD (lr eta) and outer Nesterov (lr alpha, momentum mu): the pseudo-gradient is
// eta x the mean gradient, so the run equals one process with Nesterov (lr alpha x eta, momentum mu).
TEST(DilocoTest, OneStepRoundsMatchSingleProcessNesterov) {
  Recipe r = AveragingRecipe("diloco", 2);
  r.sync.k1 = 1;
  r.sync.k2 = 1;
  r.sync.outer_lr = 0.7f;
  r.sync.outer_momentum = 0.9f;
  const auto finals = RunCluster(r);
  ASSERT_EQ(finals.size(), 4u);
  nn::OptimizerConfig nesterov = r.optimizer;
  nesterov.name = "nesterov";
  nesterov.lr = r.optimizer.lr * r.sync.outer_lr;
  nesterov.momentum = r.sync.outer_momentum;
  const Weights ref = Reference(r, nesterov);
  for (const auto& [name, w] : finals) EXPECT_LE(MaxDiff(w, ref), 1e-4f) << name;
  // And differs from HFA's plain averaging (the outer rule is applied).
  EXPECT_GT(MaxDiff(finals.begin()->second, Reference(r, r.optimizer)), 1e-3f);
}

// The outer step by hand: g = -mean_delta; v = mu v + g; w -= lr (g + mu v); the answer is new - old.
TEST(OuterOptimizerTest, NesterovStepsMatchAHandComputation) {
  auto outer = OuterOptimizer::Create(OuterRule{0.7f, 0.9f});
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  const std::vector<float> w0 = {1.0f, -2.0f, 0.5f};
  (*outer)->InitKey(3, w0);
  const std::vector<std::vector<float>> deltas = {{0.1f, 0.2f, -0.3f}, {-0.05f, 0.4f, 0.0f}, {0.2f, 0.0f, 0.1f}};
  std::vector<double> w(w0.begin(), w0.end()), v(3, 0.0);
  for (size_t t = 0; t < deltas.size(); ++t) {
    auto update = (*outer)->Apply(3, deltas[t], static_cast<int64_t>(t));
    ASSERT_TRUE(update.ok()) << update.status().ToString();
    for (size_t i = 0; i < 3; ++i) {
      const double g = -deltas[t][i];
      v[i] = 0.9 * v[i] + g;
      const double step = -0.7 * (g + 0.9 * v[i]);
      w[i] += step;
      EXPECT_NEAR((*update)[i], step, 1e-6) << "step " << t << " element " << i;
    }
  }
  auto weights = (*outer)->Weights(3);
  ASSERT_TRUE(weights.ok());
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR((*weights)[i], w[i], 1e-6);
}

// HFA's outer rule is plain averaging: w_g += mean delta.
TEST(OuterOptimizerTest, HfaAddsTheMeanDelta) {
  Recipe r;
  r.sync.mode = "hfa";
  auto outer = OuterOptimizer::Create(OuterRuleOf(r));
  ASSERT_TRUE(outer.ok());
  (*outer)->InitKey(0, std::vector<float>{1.0f, 2.0f});
  auto update = (*outer)->Apply(0, std::vector<float>{0.25f, -0.5f}, 0);
  ASSERT_TRUE(update.ok());
  EXPECT_FLOAT_EQ((*update)[0], 0.25f);
  EXPECT_FLOAT_EQ((*update)[1], -0.5f);
  EXPECT_FALSE((*outer)->Apply(1, std::vector<float>{0.0f}, 0).ok());  // a key without initial weights
  auto wrong = (*outer)->Apply(0, std::vector<float>{0.0f}, 1);        // a delta of the wrong length
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
}

// Accelerators the averaging modes cannot work with are refused with the key and the reason (exit 2 from the CLI).
TEST(AveragingRulesTest, AcceleratorsTheModesCannotUseAreRefused) {
  auto violations = [](Recipe r) {
    std::vector<std::string> out;
    for (const auto& v : CheckSyncRules(r, [](const std::string&) { return false; })) {
      out.push_back(v.path + ": " + v.message);
    }
    return out;
  };
  for (const char* mode : {"hfa", "diloco", "esync"}) {
    Recipe r = AveragingRecipe(mode, 1);
    EXPECT_TRUE(violations(r).empty()) << mode;
    Recipe lan = r;
    lan.accelerators.compression = "fp16";  // all four links, the data centres' too
    auto v = violations(lan);
    ASSERT_EQ(v.size(), 1u) << mode;
    EXPECT_EQ(v[0].rfind(std::string("accelerators.compression: sync.mode: ") + mode + " averages whole models", 0),
              0u)
        << v[0];
    Recipe wan = r;
    wan.accelerators.compression = "bsc";  // only the WAN links: the deltas are compressed at the local servers
    EXPECT_TRUE(violations(wan).empty()) << mode;
    Recipe p3 = r;
    p3.accelerators.p3 = true;
    v = violations(p3);
    ASSERT_EQ(v.size(), 1u) << mode;
    EXPECT_EQ(v[0].rfind("accelerators.p3.enabled: P3 schedules every iteration's gradient push", 0), 0u) << v[0];
  }
}

}  // namespace
}  // namespace geomx::cli
