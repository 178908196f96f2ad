// sync.mode hfa and diloco (algorithms/sync/hfa.cc, averaging.h) through recipes: WAN synchronisations counted
// exactly, the K1 = K2 = 1 equivalences with single-process training (which check the averaging weights, the
// milestone and the outer step end to end), compressed WAN links (replicas in step after every sync, sparse
// answers, the loss against a dense run), P3 composed with hfa, and the recipe rules. (The outer optimizer alone:
// tests/algorithms/sync/averaging_test.cc; K1, K2 > 1 against a replay of every worker: hfa_exact_test.cc.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/sync_rules.h"
#include "comm/key_layout.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/cli/recipe_test_util.h"
#include "tests/cli/sync/sync_test_util.h"

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

// The largest number of coordinates of one slice of at least `bound` elements that differ between two weight
// sets, against the k = max(1, floor(ratio x length)) of that slice: the worst ratio changed / k over the slices.
double WorstChangedOverK(const Recipe& r, const Weights& a, const Weights& b, uint64_t bound, float ratio) {
  std::vector<comm::KeySpec> keys;
  for (size_t i = 0; i < a.size(); ++i) keys.push_back({i, static_cast<uint64_t>(a[i].size()), true});
  auto layout = comm::KeyLayout::Build(keys, r.topology.global_servers, r.topology.options.split_bytes);
  EXPECT_TRUE(layout.ok());
  double worst = 0;
  for (uint64_t k : layout->keys()) {
    for (const comm::KeySlice& s : layout->slices(k)) {
      if (s.length < bound) continue;
      uint64_t changed = 0;
      for (uint64_t j = s.offset; j < s.offset + s.length; ++j) changed += a[k][j] != b[k][j] ? 1 : 0;
      const double kept = std::max(1.0, std::floor(static_cast<double>(ratio) * static_cast<double>(s.length)));
      worst = std::max(worst, static_cast<double>(changed) / kept);
    }
  }
  return worst;
}

// Compressed WAN links (K1 = K2 = 2, 2 epochs: 16 syncs, every second one over the WAN). After every sync the
// workers of a data centre hold the same model bit for bit, and after every WAN sync all four do. With a bsc
// answer link, consecutive global models differ in at most the answer's non-zeros per sparsified slice: hfa's
// answer is the union of the 2 data centres' top-k (<= 2k), diloco's the global server's own top-k after its
// outer step (<= k; an answer of the whole Nesterov update would change every coordinate), and diloco with a bsc
// push (SparseLoCo: outer SGD on the sparse pushes) the union again (<= 2k). The final test loss
// is below the initial one by at least a share of what the same job gains dense (measured, deterministic runs:
// fp16 ends on the dense loss, hfa+bsc within 1 % of its decrease, diloco with a sparse answer within 4 %).
struct WanCase {
  const char* mode;
  const char* up;
  const char* down;
  double max_changed_over_k;  // per sparsified slice and WAN sync; 0: not sparse
  double share;               // of the dense run's loss decrease
};

void PrintTo(const WanCase& c, std::ostream* os) { *os << c.mode << " " << c.up << "/" << c.down; }

class CompressedWanTest : public ::testing::TestWithParam<WanCase> {};

TEST_P(CompressedWanTest, ReplicasStayInStepAndTheAnswersStaySparse) {
  const WanCase c = GetParam();
  Recipe dense = AveragingRecipe(c.mode, 2);
  dense.sync.k1 = 2;
  dense.sync.k2 = 2;
  Recipe r = dense;
  r.accelerators.local_to_global = c.up;
  r.accelerators.global_to_local = c.down;
  r.accelerators.bsc_ratio = 0.1f;
  r.accelerators.size_lower_bound = 16;  // sparsify the MLP's slices too
  if (std::string(c.mode) == "diloco" && std::string(c.up) == "bsc") {  // SparseLoCo's recipe defaults
    r.sync.outer_lr = 1.0f;
    r.sync.outer_momentum = 0.95f;
  }
  sync_testing::ModelRecorder rec;
  const auto finals = RunCluster(r, &rec);
  ASSERT_EQ(finals.size(), 4u);
  EXPECT_EQ(rec.wan_syncs.load(), 32 / 4);
  ASSERT_EQ(rec.models.size(), 16u);
  Weights global = InitialWeights(r);
  for (const auto& [sync, models] : rec.models) {
    ASSERT_EQ(models.size(), 4u) << "sync " << sync;
    EXPECT_EQ(models.at(1), models.at(0)) << "sync " << sync << ": dc-a's workers differ";
    EXPECT_EQ(models.at(3), models.at(2)) << "sync " << sync << ": dc-b's workers differ";
    if ((sync + 1) % r.sync.k2 != 0) continue;
    EXPECT_EQ(models.at(2), models.at(0)) << "WAN sync " << sync << ": the data centres differ";
    if (c.max_changed_over_k > 0) {
      EXPECT_LE(WorstChangedOverK(r, models.at(0), global, 16, 0.1f), c.max_changed_over_k) << "WAN sync " << sync;
    }
    global = models.at(0);
  }
  EXPECT_EQ(finals.begin()->second, global);  // the run ended on a WAN sync
  const double initial = sync_testing::TestLoss(r, nullptr);
  const double dense_loss = sync_testing::TestLoss(r, &RunCluster(dense).begin()->second);
  const double loss = sync_testing::TestLoss(r, &global);
  std::printf("[ loss     ] %s %s/%s: initial %.4f, dense %.4f, compressed %.4f\n", c.mode, c.up, c.down, initial,
              dense_loss, loss);
  ASSERT_LT(dense_loss, initial - 0.05);
  EXPECT_LE(loss, initial - c.share * (initial - dense_loss));
}

INSTANTIATE_TEST_SUITE_P(Links, CompressedWanTest,
                         ::testing::Values(WanCase{"hfa", "bsc", "bsc", 2.0, 0.8},
                                           WanCase{"hfa", "fp16", "fp16", 0, 0.95},
                                           WanCase{"diloco", "fp16", "bsc", 1.0, 0.8},
                                           WanCase{"diloco", "none", "mpq", 1.0, 0.8},
                                           WanCase{"diloco", "bsc", "bsc", 2.0, 0.8}),
                         [](const auto& info) {
                           return std::string(info.param.mode) + "_" + info.param.up + "_" + info.param.down;
                         });

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
    EXPECT_TRUE(violations(wan).empty()) << mode;  // diloco: SparseLoCo (the momentum moves into the push)
    Recipe sign = r;
    sign.accelerators.compression = "sign";
    v = violations(sign);
    if (std::string(mode) == "diloco") {
      // Plain error feedback before the outer momentum: the held-back residual would come back amplified.
      ASSERT_EQ(v.size(), 1u);
      EXPECT_EQ(v[0].rfind("accelerators.links.local_to_global: sync.mode: diloco steps its outer momentum", 0), 0u)
          << v[0];
      EXPECT_NE(v[0].find("{local_to_global: fp16, global_to_local: sign}"), std::string::npos) << v[0];
      Recipe answer_only = r;
      answer_only.accelerators.local_to_global = "fp16";
      answer_only.accelerators.global_to_local = "sign";
      EXPECT_TRUE(violations(answer_only).empty());
    } else {
      EXPECT_TRUE(v.empty()) << mode;
    }
    // P3 lives in the workers' send path and composes with every mode (issue 12; it used to be refused here).
    Recipe p3 = r;
    p3.accelerators.p3 = true;
    EXPECT_TRUE(violations(p3).empty()) << mode;
  }
}

// accelerators.bsc.momentum (DGC's momentum correction) with a bsc push of model deltas: refused for every
// averaging mode, at the key's file:line:column, with why (each delta would count 1 / (1 - m) = 10 times).
TEST(AveragingRulesTest, BscMomentumCorrectionOfModelDeltasIsRefused) {
  for (const char* mode : {"hfa", "diloco", "esync"}) {
    const std::string yaml = std::string("topology:\n") +
                             "  datacentres:\n"
                             "    - {name: dc-a, workers: 2, servers: 1}\n"
                             "    - {name: dc-b, workers: 2, servers: 1}\n"
                             "sync: {mode: " + mode + "}\n"
                             "accelerators:\n"
                             "  links: {local_to_global: bsc, global_to_local: bsc}\n"
                             "  bsc:\n"
                             "    momentum: 0.9\n";
    const std::string momentum_error =
        std::string("r.yaml:9:15: accelerators.bsc.momentum: momentum correction accumulates gradients (DGC), but "
                    "sync.mode: ") +
        mode +
        " sends model deltas over the WAN, which already hold the workers' optimizer steps: a velocity over them "
        "would count each delta about 1 / (1 - momentum) = 10 times; set accelerators.bsc.momentum to 0 (the "
        "workers' optimizer keeps its momentum)";
    const std::vector<std::string> lines = recipe_testing::ErrorLines(yaml);
    ASSERT_EQ(lines.size(), 1u) << mode;
    EXPECT_EQ(lines[0], momentum_error) << mode;
    (void)recipe_testing::MustParse(yaml, {"accelerators.bsc.momentum=0"});  // without the correction: fine
  }
}

// diloco with a sparsifying WAN push runs SparseLoCo, whose outer lr and momentum (the error feedback's decay)
// default to 1 and 0.95 instead of DiLoCo's 0.7 and 0.9; keys the recipe or a flag set are kept; other links
// keep DiLoCo's defaults.
TEST(AveragingRulesTest, DilocoWithASparsePushDefaultsToSparseLoCoSettings) {
  const std::string yaml = "topology:\n"
                           "  datacentres:\n"
                           "    - {name: dc-a, workers: 2, servers: 1}\n"
                           "    - {name: dc-b, workers: 2, servers: 1}\n"
                           "sync: {mode: diloco}\n";
  Recipe dense = recipe_testing::MustParse(yaml);
  EXPECT_EQ(dense.sync.outer_lr, 0.7f);
  EXPECT_EQ(dense.sync.outer_momentum, 0.9f);
  for (const char* push : {"bsc", "mpq"}) {
    Recipe sparse = recipe_testing::MustParse(yaml, {std::string("accelerators.links.local_to_global=") + push});
    EXPECT_EQ(sparse.sync.outer_lr, 1.0f) << push;
    EXPECT_EQ(sparse.sync.outer_momentum, 0.95f) << push;
  }
  Recipe preset = recipe_testing::MustParse(yaml, {"accelerators.compression=bsc"});
  EXPECT_EQ(preset.sync.outer_lr, 1.0f);
  Recipe answer_only = recipe_testing::MustParse(
      yaml, {"accelerators.links.local_to_global=fp16", "accelerators.links.global_to_local=bsc"});
  EXPECT_EQ(answer_only.sync.outer_lr, 0.7f);
  EXPECT_EQ(answer_only.sync.outer_momentum, 0.9f);
  Recipe given = recipe_testing::MustParse(yaml + "accelerators: {compression: bsc}\n",
                                           {"sync.outer.momentum=0.8"});
  EXPECT_EQ(given.sync.outer_lr, 1.0f);
  EXPECT_EQ(given.sync.outer_momentum, 0.8f);
  Recipe given_lr = recipe_testing::MustParse(
      "topology:\n  datacentres:\n    - {name: dc-a, workers: 1, servers: 1}\n"
      "    - {name: dc-b, workers: 1, servers: 1}\n"
      "sync: {mode: diloco, outer: {lr: 0.5}}\naccelerators: {compression: bsc}\n");
  EXPECT_EQ(given_lr.sync.outer_lr, 0.5f);
  EXPECT_EQ(given_lr.sync.outer_momentum, 0.95f);
  Recipe hfa = recipe_testing::MustParse(yaml, {"sync.mode=hfa", "accelerators.compression=bsc"});
  EXPECT_EQ(hfa.sync.outer_lr, 0.7f);  // not hfa's key
}

}  // namespace
}  // namespace geomx::cli
