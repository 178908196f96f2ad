// sync.mode mixed (algorithms/sync/mixed.h) through recipes: the recipe rules, and every role of a 2x2 topology as
// threads with one data centre slowed down: the global server applies updates without a barrier and never beyond
// sync.max_staleness. (DC-ASGD and MixedSink alone: tests/algorithms/sync/mixed_test.cc.)

#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/sync/sync_mode.h"
#include "algorithms/train/trainer.h"
#include "cli/cluster.h"
#include "cli/setup.h"
#include "comm/handlers/async_aggregator.h"
#include "comm/key_layout.h"
#include "comm/loopback_van.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/cli/recipe_test_util.h"

namespace geomx::cli {
namespace {

using recipe_testing::ErrorLines;
using recipe_testing::MustParse;

const std::string kTopology =
    "topology:\n"
    "  datacentres:\n"
    "    - {name: dc-a, workers: 2, servers: 1}\n"
    "    - {name: dc-b, workers: 2, servers: 1}\n";
const std::string kTwoDcs = kTopology + "optimizer: {where: global-server}\n";

std::string First(const std::vector<std::string>& lines) { return lines.empty() ? std::string() : lines[0]; }

TEST(MixedRecipeTest, BadInputNamesTheKeyAndTheReason) {
  EXPECT_NE(First(ErrorLines(kTwoDcs + "sync: {mode: mixed, max_staleness: -1}\n")).find("sync.max_staleness"),
            std::string::npos);
  // The yaml list continues kTwoDcs' datacentres: a third data centre.
  std::string three = kTwoDcs;
  three.insert(three.find("optimizer:"), "    - {name: dc-c, workers: 1, servers: 1}\n");
  EXPECT_NE(First(ErrorLines(three + "sync: {mode: mixed, max_staleness: 1}\n"))
                .find("sync.max_staleness: 1 cannot be kept with 3 data centres"),
            std::string::npos);
  EXPECT_EQ(MustParse(three + "sync: {mode: mixed, max_staleness: 2}\n").sync.max_staleness, 2);
  EXPECT_NE(First(ErrorLines(kTwoDcs + "sync: {mode: mixed, dcasgd: {adaptive: true}}\n"))
                .find("sync.dcasgd.adaptive: adaptive DC-ASGD scales sync.dcasgd.lambda"),
            std::string::npos);
  EXPECT_NE(First(ErrorLines(kTwoDcs + "sync: {dcasgd: {lambda: 0.04}}\n")).find("sync.dcasgd.lambda: DC-ASGD"),
            std::string::npos);
  EXPECT_NE(First(ErrorLines(kTwoDcs + "sync: {mode: fsa, max_staleness: 2}\n")).find("needs sync.mode: mixed"),
            std::string::npos);
  // Accelerators: bsc's preset sends a sparse aggregate down, but mixed answers with weights.
  EXPECT_NE(First(ErrorLines(kTwoDcs + "sync: {mode: mixed}\naccelerators: {compression: bsc}\n"))
                .find("accelerators.links.global_to_local: 'bsc'"),
            std::string::npos);
  EXPECT_NE(First(ErrorLines(kTwoDcs + "sync: {mode: mixed}\naccelerators: {compression: mpq}\n"))
                .find("accelerators.links.global_to_local: 'mpq'"),
            std::string::npos);
  // P3 composes with every sync mode (issue 12: it lives in the workers' send path); it used to need fsa.
  EXPECT_TRUE(ParseRecipe(kTwoDcs + "sync: {mode: mixed}\naccelerators: {p3: {enabled: true}}\n", "r.yaml").ok());
  EXPECT_NE(First(ErrorLines(kTopology + "sync: {mode: mixed}\noptimizer: {name: momentum, momentum: 0.9}\n"
                                       "accelerators: {compression: bsc, links: {global_to_local: none}, "
                                       "bsc: {momentum: 0.9}}\n"))
                .find("would apply momentum twice"),
            std::string::npos);
  // What works: bsc pushes with dense (or fp16) weights down, fp16 everywhere, DC-ASGD adaptive.
  MustParse(kTwoDcs + "sync: {mode: mixed}\naccelerators: {compression: bsc, links: {global_to_local: none}}\n");
  MustParse(kTwoDcs + "sync: {mode: mixed}\naccelerators: {compression: fp16}\n");
  const Recipe r = MustParse(kTwoDcs + "sync: {mode: mixed, max_staleness: 1, dcasgd: {lambda: 2, adaptive: true, "
                                       "decay: 0.9}}\n");
  EXPECT_TRUE(r.sync.dcasgd_adaptive);
  EXPECT_FLOAT_EQ(r.sync.dcasgd_decay, 0.9f);
}

// ---- every role as threads ----

Recipe ClusterRecipe(int max_staleness, float lambda, float slowdown_b, const std::string& compression,
                     const std::string& global_to_local) {
  Recipe r = cluster_testing::TwoByTwoRecipe("mixed", 3);
  r.optimizer_where = "global-server";
  r.sync.mode = "mixed";
  r.sync.max_staleness = max_staleness;
  r.sync.dcasgd_lambda = lambda;
  r.topology.datacentres[1].slowdown = slowdown_b;
  r.accelerators.compression = compression;
  r.accelerators.global_to_local = global_to_local;
  r.accelerators.bsc_ratio = 0.1f;
  r.accelerators.size_lower_bound = 64;  // the 16x16 and 16x4 weights are sparsified
  r.topology.options.split_bytes = 256;
  return r;
}

struct ClusterResult {
  comm::AsyncAggregatorStats stats;
  std::map<std::string, double> accuracy;  // per worker, on the test set
  int64_t rounds = 0;                      // per data centre
  size_t wire_keys = 0;
};

ClusterResult RunMixedCluster(const Recipe& r) {
  comm::LoopbackNetwork net;
  ClusterEnv env = cluster_testing::LoopbackEnv(&net);
  ClusterResult out;
  std::mutex mu;
  auto setup = PrepareRun(r);
  EXPECT_TRUE(setup.ok());
  env.on_worker_done = [&](const std::string& name, nn::Module& model) {
    const train::EvalResult ev = train::Evaluate(model, *setup->data.test, Device::Cpu(), 64, 0);
    std::lock_guard<std::mutex> lock(mu);
    out.accuracy[name] = ev.accuracy;
  };
  // The global server's policy, read after the job ended: its AsyncAggregator's counters.
  env.on_server_done = [&](const std::string& node, sync::ServerPolicy& policy) {
    if (node.find("global-server") == std::string::npos) return;
    auto* agg = dynamic_cast<comm::AsyncAggregator*>(policy.handler());
    ASSERT_NE(agg, nullptr) << "sync.mode mixed did not make an AsyncAggregator";
    std::lock_guard<std::mutex> lock(mu);
    out.stats = agg->stats();
  };
  cluster_testing::RunRoles(r, env);
  out.rounds = (512 / 4 / 8) * r.training.epochs;
  comm::KeyLayout layout = comm::KeyLayout::Build(
      [&] {
        std::vector<comm::KeySpec> keys;
        for (nn::Parameter* p : setup->model->Parameters()) {
          keys.push_back(comm::KeySpec{keys.size(), static_cast<uint64_t>(p->numel()), true});
        }
        return keys;
      }(),
      1, r.topology.options.split_bytes).value();
  for (const auto& k : layout.keys()) out.wire_keys += layout.slices(k).size();
  return out;
}

struct ClusterCase {
  std::string name;
  int max_staleness;
  float lambda;
  std::string compression = "none";
  std::string global_to_local = "auto";
};

class MixedClusterTest : public ::testing::TestWithParam<ClusterCase> {};

TEST_P(MixedClusterTest, SlowDataCentreDoesNotHoldTheOtherBackAndTrainingConverges) {
  const ClusterCase c = GetParam();
  const Recipe r = ClusterRecipe(c.max_staleness, c.lambda, /*slowdown_b=*/3.0f, c.compression, c.global_to_local);
  const ClusterResult res = RunMixedCluster(r);
  ASSERT_EQ(res.accuracy.size(), 4u);
  // Every update of every data centre was applied once per round and wire key; nothing was lost or repeated.
  EXPECT_EQ(res.stats.applied, 2 * res.rounds * static_cast<int64_t>(res.wire_keys));
  EXPECT_EQ(res.stats.applied_by_sender,
            (std::vector<int64_t>{res.rounds * static_cast<int64_t>(res.wire_keys),
                                  res.rounds * static_cast<int64_t>(res.wire_keys)}));
  // No barrier: dc-a's updates were applied before dc-b had pushed the same round.
  EXPECT_GT(res.stats.ahead_of_others, 0);
  if (c.max_staleness > 0) {
    EXPECT_LE(res.stats.max_staleness, c.max_staleness);
    for (const auto& [staleness, n] : res.stats.staleness_histogram) EXPECT_LE(staleness, c.max_staleness);
  } else {
    EXPECT_GT(res.stats.max_staleness, 1);  // unbounded: the slowed data centre's updates were stale
  }
  for (const auto& [name, acc] : res.accuracy) EXPECT_GT(acc, 0.6) << name;  // 4 classes: chance is 0.25
}

INSTANTIATE_TEST_SUITE_P(Modes, MixedClusterTest,
                         ::testing::Values(ClusterCase{"unbounded", 0, 0.0f}, ClusterCase{"bound1", 1, 0.0f},
                                           ClusterCase{"dcasgd_bound2", 2, 0.04f},
                                           // The global tier in frames: FP16 both ways; bsc pushes, dense weights.
                                           ClusterCase{"fp16", 0, 0.0f, "fp16"},
                                           ClusterCase{"bsc_push_dcasgd", 1, 0.04f, "bsc", "none"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace geomx::cli
