// sync.initial_weights: seed on a 2 x 2 hfa job run as threads: the local servers build the initial weights from
// the recipe's seed instead of fetching them over the WAN. The run must be the same run (the same final weights,
// bit for bit) with at least the model's bytes per data centre fewer on the WAN; a local server whose weights differ
// from the master worker's (another seed) must notice and fetch them.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cluster.h"
#include "comm/loopback_van.h"
#include "comm/shaped_van.h"
#include "comm/traffic.h"
#include "tests/cli/cluster_test_util.h"

namespace geomx::cli {
namespace {

using cluster_testing::Weights;

struct Outcome {
  std::map<std::string, Weights> finals;
  uint64_t wan_bytes = 0;  // sent over WAN links by every node
};

Outcome RunCounting(const Recipe& r, const Recipe* server_recipe = nullptr) {
  comm::LoopbackNetwork net;
  std::mutex mu;
  std::vector<std::unique_ptr<comm::TrafficCounters>> counters;
  const ClusterEnv env = cluster_testing::InProcessEnv("loop", [&](const std::string&) -> std::unique_ptr<comm::Van> {
    std::lock_guard<std::mutex> lock(mu);
    counters.push_back(std::make_unique<comm::TrafficCounters>());
    return std::make_unique<comm::ShapedVan>(std::make_unique<comm::LoopbackVan>(&net), comm::ShapedVanOptions{},
                                             counters.back().get());
  });
  Outcome out;
  out.finals = cluster_testing::RunCluster(r, env, server_recipe);
  for (const auto& c : counters) out.wan_bytes += c->Snapshot().wan_bytes_sent;
  return out;
}

// 16 -> 64 -> 4: 1,348 parameters, 5,392 bytes.
Recipe HfaRecipe(const std::string& initial_weights) {
  Recipe r = cluster_testing::AveragingRecipe("hfa", 1);
  r.model.hidden = {64};
  r.sync.k1 = 2;
  r.sync.k2 = 2;
  r.sync.initial_weights = initial_weights;
  r.topology.options.heartbeat_interval_ms = 0;  // heartbeats cross the WAN as often as a run lasts: none here
  return r;
}
constexpr uint64_t kModelBytes = (16 * 64 + 64 + 64 * 4 + 4) * sizeof(float);

TEST(SeedStartTest, TheSameRunWithoutTheInitialWeightsOnTheWan) {
  const Outcome transfer = RunCounting(HfaRecipe("transfer"));
  const Outcome seed = RunCounting(HfaRecipe("seed"));
  ASSERT_EQ(transfer.finals.size(), 4u);
  ASSERT_EQ(seed.finals.size(), 4u);
  for (const auto& [name, w] : transfer.finals) EXPECT_EQ(seed.finals.at(name), w) << name;
  // Each data centre's local server no longer pulls the whole model across the WAN.
  EXPECT_GE(transfer.wan_bytes, seed.wan_bytes + 2 * kModelBytes)
      << "transfer " << transfer.wan_bytes << " bytes, seed " << seed.wan_bytes;
}

TEST(SeedStartTest, ALocalServerWithOtherWeightsFetchesThem) {
  const Outcome transfer = RunCounting(HfaRecipe("transfer"));
  Recipe other = HfaRecipe("seed");
  other.seed += 1;  // the local servers build other initial weights: their digest differs from the master's
  const Outcome fallback = RunCounting(HfaRecipe("seed"), &other);
  ASSERT_EQ(fallback.finals.size(), 4u);
  for (const auto& [name, w] : transfer.finals) EXPECT_EQ(fallback.finals.at(name), w) << name;
  EXPECT_EQ(fallback.wan_bytes, transfer.wan_bytes);
}

}  // namespace
}  // namespace geomx::cli
