// DGT end to end (comm/dgt/dgt_link.h, recipe accelerators.dgt): every role of a 2x2 topology as threads over
// loopback vans, the local servers pushing to two global servers with DGT in blocks of 4 floats. Without loss DGT
// changes nothing: the workers end with the weights of the single-process run. With 30 % of the datagrams dropped
// the job still completes with every worker holding the same weights, and the run's traffic counters show blocks
// lost on the low-priority channels and none on the reliable one.
#include <atomic>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cli/recipe.h"
#include "comm/loopback_van.h"
#include "comm/traffic.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/comm/dropping_van.h"

namespace geomx::cli {
namespace {

using cluster_testing::InitialWeights;
using cluster_testing::MaxDiff;
using cluster_testing::Reference;
using cluster_testing::RunCluster;
using cluster_testing::Weights;

Recipe DgtRecipe() {
  Recipe r = cluster_testing::TwoByTwoRecipe("dgt", 1);  // 16 iterations
  r.topology.global_servers = 2;
  r.topology.options.split_bytes = 256;  // the 16x16 weight in slices on both global servers
  r.accelerators.dgt = true;
  r.accelerators.dgt_block_bytes = 16;   // 4 floats: the 16x16 weight is 64 blocks
  r.accelerators.dgt_k = 0.25f;
  r.accelerators.dgt_k_min = 0.1f;       // adaptive: the workers' losses move k
  r.accelerators.dgt_channels = 2;
  r.accelerators.dgt_deadline_s = 0.002;
  return r;
}

// Every role over loopback vans (datagrams never lost); the workers' final weights and the run's traffic.
std::map<std::string, Weights> RunOnLoopback(const Recipe& r, comm::TrafficSnapshot* traffic_out) {
  comm::LoopbackNetwork net;
  comm::TrafficCounters traffic;
  ClusterEnv env = cluster_testing::LoopbackEnv(&net);
  env.traffic = &traffic;
  auto finals = RunCluster(r, env);
  *traffic_out = traffic.Snapshot();
  return finals;
}

TEST(DgtClusterTest, WithoutLossDgtChangesNothing) {
  const Recipe r = DgtRecipe();
  comm::TrafficSnapshot t;
  const auto finals = RunOnLoopback(r, &t);
  ASSERT_EQ(finals.size(), 4u);
  const Weights ref = Reference(r, r.optimizer);
  for (const auto& [name, w] : finals) EXPECT_LE(MaxDiff(w, ref), 1e-5f) << name;
  for (int c = 0; c <= 2; ++c) {
    EXPECT_GT(t.dgt[c].blocks, 0u) << "channel " << c;
    EXPECT_EQ(t.dgt[c].lost, 0u) << "channel " << c;
  }
  EXPECT_EQ(t.dgt[3].blocks, 0u);
}

TEST(DgtClusterTest, LostBlocksDoNotStopTheJob) {
  const Recipe r = DgtRecipe();
  comm::LoopbackNetwork net;
  comm::TrafficCounters traffic;
  std::atomic<uint64_t> seed{1};  // roles make their vans concurrently
  ClusterEnv env = cluster_testing::InProcessEnv("loop", [&net, &seed](const std::string&) {
    return std::make_unique<comm::testing::DatagramDroppingVan>(std::make_unique<comm::LoopbackVan>(&net), 0.3,
                                                                seed++);
  });
  env.traffic = &traffic;
  const auto finals = RunCluster(r, env);
  ASSERT_EQ(finals.size(), 4u);
  const Weights& first = finals.begin()->second;
  for (const auto& [name, w] : finals) EXPECT_EQ(MaxDiff(w, first), 0.0f) << name;  // fsa: one model
  EXPECT_GT(MaxDiff(first, Reference(r, r.optimizer)), 1e-5f);  // what was lost arrived rounds later
  const comm::TrafficSnapshot t = traffic.Snapshot();
  EXPECT_EQ(t.dgt[0].lost, 0u);
  EXPECT_GT(t.dgt[1].lost + t.dgt[2].lost, 0u);
  EXPECT_LT(t.dgt[1].lost + t.dgt[2].lost, t.dgt[1].blocks + t.dgt[2].blocks);
}

// tcp-priority: the channels' blocks go as one message per channel after the reliable part; with a deadline they
// all meet, the run is the single-process run. Lost datagrams would not matter: there are none.
TEST(DgtClusterTest, TcpPriorityWithTimeForEveryBlockChangesNothing) {
  Recipe r = DgtRecipe();
  r.accelerators.dgt_mode = "tcp-priority";
  r.accelerators.dgt_deadline_s = 30;  // a round that waited for it would time the test out
  comm::TrafficSnapshot t;
  const auto finals = RunOnLoopback(r, &t);
  ASSERT_EQ(finals.size(), 4u);
  const Weights ref = Reference(r, r.optimizer);
  for (const auto& [name, w] : finals) EXPECT_LE(MaxDiff(w, ref), 1e-5f) << name;
  EXPECT_GT(t.dgt[1].blocks + t.dgt[2].blocks, 0u);
  EXPECT_EQ(t.dgt[1].lost + t.dgt[2].lost, 0u);
}

// tcp-priority-4bit: the unimportant blocks arrive as 4-bit codes and what the codes leave out comes back through
// the local servers' residuals: the job ends near the single-process run (much nearer than where it started) but
// not on it, every worker with the same weights.
TEST(DgtClusterTest, FourBitChannelsEndNearTheDenseRun) {
  Recipe r = DgtRecipe();
  r.accelerators.dgt_mode = "tcp-priority-4bit";
  r.accelerators.dgt_deadline_s = 30;
  comm::TrafficSnapshot t;
  const auto finals = RunOnLoopback(r, &t);
  ASSERT_EQ(finals.size(), 4u);
  const Weights ref = Reference(r, r.optimizer);
  const Weights& first = finals.begin()->second;
  for (const auto& [name, w] : finals) EXPECT_EQ(MaxDiff(w, first), 0.0f) << name;
  EXPECT_GT(MaxDiff(first, ref), 1e-6f);
  EXPECT_LT(MaxDiff(first, ref), 0.1f * MaxDiff(InitialWeights(r), ref));
  // A block of 4 floats is its index, a scale and 2 bytes of codes (10 bytes) instead of its index and 16 bytes.
  EXPECT_GT(t.dgt[1].blocks, 0u);
  EXPECT_LT(t.dgt[1].bytes, t.dgt[1].blocks * 12);
}

// mixed: the global servers apply each data centre's sum as it arrives (AsyncAggregator) and answer at once; the
// DGT rounds assemble there the same way and the delivery notes reach the local servers.
TEST(DgtClusterTest, MixedRunsWithDgt) {
  Recipe r = DgtRecipe();
  r.sync.mode = "mixed";
  comm::TrafficSnapshot t;
  ASSERT_EQ(RunOnLoopback(r, &t).size(), 4u);
  EXPECT_GT(t.dgt[0].blocks, 0u);
  EXPECT_GT(t.dgt[1].blocks + t.dgt[2].blocks, 0u);
  EXPECT_EQ(t.dgt[1].lost + t.dgt[2].lost, 0u);
}

}  // namespace
}  // namespace geomx::cli
