// sync.mode hfa and diloco (algorithms/sync/hfa.cc, averaging.h) through recipes: WAN synchronisations counted
// exactly, the K1 = K2 = 1 equivalences with single-process training (which check the averaging weights, the
// milestone and the outer step end to end), P3 composed with hfa, and the recipe rules. (The outer optimizer
// alone: tests/algorithms/sync/averaging_test.cc.)
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
  cluster_testing::AveragingCounter stats;
  const auto finals = RunCluster(r, &stats);
  ASSERT_EQ(finals.size(), 4u);
  const int64_t iterations = 16 * c.epochs;
  const int64_t wan = iterations / (c.k1 * c.k2);
  EXPECT_EQ(stats.wan_syncs.load(), wan);
  EXPECT_EQ(stats.key_syncs.load(), wan * NumWireKeys(r));
  // Every wire key is averaged in both data centres every K1 iterations.
  EXPECT_EQ(stats.local_averages.load(), 2 * (iterations / c.k1) * NumWireKeys(r));
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
    cluster_testing::AveragingCounter stats;
    const auto finals = RunCluster(r, &stats);
    ASSERT_EQ(finals.size(), 4u) << scheme;
    EXPECT_EQ(stats.wan_syncs.load(), 32 / 4) << scheme;
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

// P3 composes with hfa (its slicing and priority queue live in the workers' KvLink, its layer-by-layer writes in
// the shared ParamExchange): same weights as hfa without it, and every replica ends on the global model.
TEST(HfaTest, P3ComposesWithHfa) {
  Recipe r = AveragingRecipe("hfa", 2);
  r.sync.k1 = 2;
  r.sync.k2 = 2;
  r.model.hidden = {16, 12};
  Recipe p3 = r;
  p3.accelerators.p3 = true;
  p3.accelerators.p3_slice_elements = 24;  // the 16x16 and 16x12 weights travel as 11 and 8 slices
  const auto with_p3 = RunCluster(p3);
  const auto without = RunCluster(r);
  ASSERT_EQ(with_p3.size(), 4u);
  ASSERT_EQ(without.size(), 4u);
  const Weights& ref = without.begin()->second;
  for (const auto& [name, w] : with_p3) EXPECT_LE(MaxDiff(w, ref), 1e-5f) << name << ": hfa+P3 vs hfa";
  EXPECT_GT(MaxDiff(ref, InitialWeights(r)), 1e-3f);  // training happened
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
    // P3 lives in the workers' send path and composes with every mode (issue 12; it used to be refused here).
    Recipe p3 = r;
    p3.accelerators.p3 = true;
    EXPECT_TRUE(violations(p3).empty()) << mode;
  }
}

}  // namespace
}  // namespace geomx::cli
