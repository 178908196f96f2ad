// The recipe rules that tie keys together (cli/sync_rules.cc and the topology's): accelerators that need a mode,
// a topology or dense links, snapshots, failure policies. Every refusal names the key it is reported under.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cli/recipe.h"
#include "tests/cli/recipe_test_util.h"

namespace geomx::cli {
namespace {

using recipe_testing::ErrorLines;
using recipe_testing::ExpectRefused;
using recipe_testing::kTopologyBase;
using recipe_testing::Lines;
using recipe_testing::MustParse;

// accelerators.dgt: its values and where it applies; every refusal names the key.
TEST(RecipeTest, DgtKeysAndTheirRules) {
  const std::string base = std::string(kTopologyBase) + "accelerators:\n  dgt: {enabled: true";
  Recipe ok = MustParse(base + ", k: 0.5, k_min: 0.25, channels: 2, deadline: 5ms}\n");
  EXPECT_TRUE(ok.accelerators.dgt);
  EXPECT_FLOAT_EQ(ok.accelerators.dgt_k, 0.5f);
  EXPECT_DOUBLE_EQ(ok.accelerators.dgt_deadline_s, 0.005);
  EXPECT_EQ(ok.accelerators.dgt_mode, "unreliable");
  EXPECT_EQ(MustParse(base + ", mode: tcp-priority}\n").accelerators.dgt_mode, "tcp-priority");
  MustParse(std::string(kTopologyBase) + "sync: {mode: mixed}\naccelerators:\n  dgt: {enabled: true}\n");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {base + ", k: 1.5}\n", "accelerators.dgt.k"},
      {base + ", k: 0.3, k_min: 0.5}\n", "accelerators.dgt.k_min"},
      {base + ", block_bytes: 1001}\n", "accelerators.dgt.block_bytes"},
      {base + ", block_bytes: 1340}\n", "accelerators.dgt.block_bytes"},
      {base + ", channels: 8}\n", "accelerators.dgt.channels"},
      {base + ", deadline: 2min}\n", "accelerators.dgt.deadline"},
      {base + ", mode: tcp}\n", "accelerators.dgt.mode"},
      {base + "}\nsync: {mode: hfa}\n", "accelerators.dgt.enabled"},
      {base + "}\n  compression: bsc\n", "accelerators.dgt.enabled"},
      {base + "}\n  links: {global_to_local: fp16}\n", "accelerators.links.global_to_local"},
      {"accelerators: {dgt: {enabled: true}}\n", "accelerators.dgt.enabled"},
  };
  ExpectRefused(bad);
}

// sync.overlap: hfa and diloco, at most sync.k2.
TEST(RecipeTest, OverlapNeedsAWanSyncToOverlap) {
  const std::string base = std::string(kTopologyBase) + "sync: {k1: 2, k2: 5, ";
  EXPECT_EQ(MustParse(base + "mode: hfa, overlap: 5}\n").sync.overlap, 5);
  EXPECT_EQ(MustParse(base + "mode: diloco, overlap: 1}\n").sync.overlap, 1);
  EXPECT_EQ(MustParse(base + "mode: fsa}\n").sync.overlap, 0);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {base + "mode: hfa, overlap: 6}\n", "sync.overlap: a global synchronisation may overlap at most"},
      {base + "mode: hfa, overlap: -1}\n", "sync.overlap"},
      {base + "mode: fsa, overlap: 1}\n", "sync.overlap: sync.mode: fsa has no global synchronisations"},
      {base + "mode: esync, overlap: 1}\n", "sync.overlap: sync.mode: esync"},
  };
  ExpectRefused(bad);
}

// sync.initial_weights: seed only where local servers keep the models' starting point.
TEST(RecipeTest, SeedInitialWeightsNeedAModelAveragingMode) {
  const std::string base = std::string(kTopologyBase) + "sync: {initial_weights: seed, mode: ";
  EXPECT_EQ(MustParse(base + "hfa}\n").sync.initial_weights, "seed");
  MustParse(base + "diloco}\n");
  MustParse(base + "esync}\n");
  EXPECT_EQ(MustParse(std::string(kTopologyBase)).sync.initial_weights, "transfer");
  for (const std::string mode : {"fsa", "mixed"}) {
    Result<Recipe> r = ParseRecipe(base + mode + "}\n", "r.yaml");
    ASSERT_FALSE(r.ok()) << mode;
    EXPECT_NE(r.status().message().find("sync.initial_weights: seed lets the local servers"), std::string::npos)
        << r.status().ToString();
  }
  Result<Recipe> bad = ParseRecipe(std::string(kTopologyBase) + "sync: {initial_weights: copy}\n", "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sync.initial_weights"), std::string::npos) << bad.status().ToString();
}

// accelerators.tsengine: its values and where it applies; every refusal names the key.
TEST(RecipeTest, TsEngineKeysAndTheirRules) {
  const std::string base = std::string(kTopologyBase) + "    - {name: dc-b}\naccelerators:\n  tsengine: {enabled: true";
  Recipe ok = MustParse(base + ", max_greedy: 0.5, expiry: 3, ewma: 0.2}\n");
  EXPECT_TRUE(ok.accelerators.tsengine);
  EXPECT_FLOAT_EQ(ok.accelerators.tsengine_max_greedy, 0.5f);
  EXPECT_EQ(ok.accelerators.tsengine_expiry, 3);
  EXPECT_FLOAT_EQ(ok.accelerators.tsengine_ewma, 0.2f);
  EXPECT_EQ(ok.accelerators.tsengine_tier, "global");
  // Inside data centres only: the WAN may be compressed or carry DGT, and a data centre may have two servers.
  const std::string two_servers = "    - {name: dc-b, servers: 2}\n";
  for (const std::string& text :
       {base + ", tier: datacentre}\n  links: {local_to_global: fp16}\n", base + ", tier: datacentre}\n  dgt: {enabled: true}\n",
        std::string(kTopologyBase) + two_servers + "accelerators: {tsengine: {enabled: true, tier: datacentre}}\n"}) {
    EXPECT_EQ(MustParse(text).accelerators.tsengine_tier, "datacentre") << text;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {base + ", tier: workers}\n", "accelerators.tsengine.tier"},
      {base + ", tier: datacentre}\n  p3: {enabled: true}\n", "accelerators.tsengine.tier"},
      {base + ", tier: both}\n  links: {worker_to_local: fp16}\n", "accelerators.tsengine.tier"},
      {base + ", tier: both}\n  compression: bsc\n", "accelerators.tsengine.enabled"},
      {base + ", max_greedy: 1.5}\n", "accelerators.tsengine.max_greedy"},
      {base + ", expiry: 0}\n", "accelerators.tsengine.expiry"},
      {base + ", ewma: 0}\n", "accelerators.tsengine.ewma"},
      {base + "}\nsync: {mode: mixed}\n", "accelerators.tsengine.enabled"},
      {base + "}\nsync: {mode: hfa}\n", "accelerators.tsengine.enabled"},
      {base + "}\n  compression: bsc\n", "accelerators.tsengine.enabled"},
      {base + "}\n  dgt: {enabled: true}\n", "accelerators.tsengine.enabled"},
      {"topology:\n  datacentres:\n    - {name: dc-a, servers: 2}\n    - {name: dc-b}\n"
       "accelerators: {tsengine: {enabled: true}}\n", "accelerators.tsengine.enabled"},
      {"accelerators: {tsengine: {enabled: true}}\n", "accelerators.tsengine.enabled"},
  };
  ExpectRefused(bad);
}

TEST(RecipeTest, SnapshotsNeedFsaWithTheOptimizerAtTheServers) {
  Recipe fsa = MustParse(std::string(kTopologyBase) + "  snapshot_every: 50\n");
  EXPECT_EQ(fsa.topology.snapshot_every, 50);
  for (const char* extra : {"sync: {mode: hfa}\n", "optimizer: {where: worker}\n"}) {
    Result<Recipe> r = ParseRecipe(std::string(kTopologyBase) + "  snapshot_every: 50\n" + extra, "r.yaml");
    ASSERT_FALSE(r.ok()) << extra;
    EXPECT_NE(r.status().message().find("topology.snapshot_every"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("global-server"), std::string::npos) << r.status().ToString();
  }
  EXPECT_FALSE(ParseRecipe(std::string(kTopologyBase) + "  snapshot_every: -1\n", "r.yaml").ok());
  // Restarts continue from the snapshots.
  Recipe both = MustParse(std::string(kTopologyBase) + "  snapshot_every: 5\n  max_restarts: 3\n");
  EXPECT_EQ(both.topology.max_restarts, 3);
  Result<Recipe> restarts = ParseRecipe(std::string(kTopologyBase) + "  max_restarts: 3\n", "r.yaml");
  ASSERT_FALSE(restarts.ok());
  EXPECT_NE(restarts.status().message().find("topology.snapshot_every"), std::string::npos)
      << restarts.status().ToString();
}

TEST(RecipeTest, FailurePolicyContinueNeedsFsa) {
  Recipe fsa = MustParse(std::string(kTopologyBase) + "  failure_policy: continue\n");
  EXPECT_EQ(fsa.topology.failure_policy, "continue");
  Result<Recipe> hfa = ParseRecipe(std::string(kTopologyBase) + "  failure_policy: continue\nsync: {mode: hfa}\n",
                                   "r.yaml");
  ASSERT_FALSE(hfa.ok());
  EXPECT_NE(hfa.status().message().find("topology.failure_policy"), std::string::npos) << hfa.status().ToString();
  EXPECT_NE(hfa.status().message().find("fsa"), std::string::npos) << hfa.status().ToString();
  Result<Recipe> bad = ParseRecipe(std::string(kTopologyBase) + "  failure_policy: pause\n", "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("failure policy"), std::string::npos) << bad.status().ToString();
}

// failure_policy: wait takes a restarted worker back from the servers' weights (fsa, optimizer at the global
// servers); worker_restarts need continue or wait; under wait the other workers' requests must outlast the wait.
TEST(RecipeTest, WaitAndWorkerRestartsRules) {
  Recipe wait = MustParse(std::string(kTopologyBase) + "  failure_policy: wait\n  worker_restarts: 2\n");
  EXPECT_EQ(wait.topology.failure_policy, "wait");
  EXPECT_EQ(wait.topology.worker_restarts, 2);
  EXPECT_EQ(wait.topology.options.rejoin_timeout_ms, 60000);
  auto refused = [](const std::string& yaml, const std::string& key, const std::string& words) {
    Result<Recipe> r = ParseRecipe(std::string(kTopologyBase) + yaml, "r.yaml");
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(key), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().ToString();
  };
  refused("  failure_policy: wait\noptimizer: {where: worker}\n", "topology.failure_policy", "optimizer.where: worker");
  refused("  failure_policy: wait\nsync: {mode: hfa}\n", "topology.failure_policy", "sync.mode: hfa");
  refused("  worker_restarts: 1\n", "topology.worker_restarts", "continue or wait");
  refused("  failure_policy: wait\n  timeouts: {heartbeat_timeout: 30s, rejoin: 90s, request: 2min}\n",
          "topology.timeouts.rejoin", "must be below topology.timeouts.request (120s)");
  // Not under continue: the others do not wait for the lost worker.
  MustParse(std::string(kTopologyBase) +
            "  failure_policy: continue\n  timeouts: {heartbeat_timeout: 30s, rejoin: 90s, request: 2min}\n");
}

TEST(RecipeTest, CrossKeyRules) {
  EXPECT_EQ(
      ErrorLines("training:\n  stop_at_target: true\n"),
      Lines{"r.yaml:2:19: training.stop_at_target: needs training.target_accuracy > 0 (the accuracy to stop at)"});
  EXPECT_EQ(ErrorLines("data:\n  name: csv\n"),
            Lines{"r.yaml:2:9: data.path: csv reads a file you name: set data.path to the training file (auto only "
                  "finds the built-in datasets)"});
  EXPECT_EQ(ErrorLines("optimizer: {lr: 0.01, schedule: {name: cosine, min_lr: 0.1}}"),
            Lines{"r.yaml:1:56: optimizer.schedule.min_lr: must be <= optimizer.lr (0.01) for the cosine schedule, "
                  "got 0.1"});
  // A key that already has an error does not also fail the rules that use it.
  EXPECT_EQ(ErrorLines("training: {stop_at_target: true, target_accuracy: 2}"),
            Lines{"r.yaml:1:51: training.target_accuracy: must be in [0, 1], got 2"});
  // --set can complete a rule.
  EXPECT_TRUE(ParseRecipe("training:\n  stop_at_target: true\n", "r.yaml", {"training.target_accuracy=0.9"}).ok());
}

}  // namespace
}  // namespace geomx::cli
