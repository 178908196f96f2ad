// TSEngine end to end (comm/tsengine/ts_relay.h, recipe accelerators.tsengine): every role of a three-data-centre
// topology as threads. Relaying sums and values changes no number beyond float rounding: the workers end with the
// weights of the single-process run. Over emulated links where dc-c's own uplink is slow and far but dc-c is next
// to dc-b, the global servers' overlays soon carry dc-c's sums through dc-b and dc-b passes the value to dc-c.
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/recipe.h"
#include "comm/loopback_van.h"
#include "comm/network_shape.h"
#include "comm/shaped_van.h"
#include "comm/traffic.h"
#include "tests/cli/cluster_test_util.h"

namespace geomx::cli {
namespace {

using cluster_testing::MaxDiff;
using cluster_testing::Reference;
using cluster_testing::RunCluster;

Recipe ThreeDataCentres(int epochs) {
  Recipe r = cluster_testing::TwoByTwoRecipe("tsengine", epochs);  // 16 iterations per epoch over 4 workers
  comm::DataCentre c;
  c.name = "dc-c";
  c.workers = 1;
  c.servers = 1;
  r.topology.datacentres.push_back(c);   // 5 workers: 12 iterations per epoch
  r.topology.global_servers = 2;
  r.topology.options.split_bytes = 256;  // the 16x16 weight in slices on both global servers
  r.accelerators.tsengine = true;
  return r;
}

// Runs every role of `r` with `env`, checks that every worker ends with the single-process weights (up to float
// rounding: relayed sums add the senders in another order), and returns the overlay lines.
std::vector<std::string> RunAndCollectOverlays(const Recipe& r, ClusterEnv env) {
  std::mutex mu;
  std::vector<std::string> lines;
  env.on_overlay = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(line);
  };
  const auto finals = RunCluster(r, env);
  EXPECT_EQ(finals.size(), static_cast<size_t>(r.topology.total_workers()));
  const cluster_testing::Weights ref = Reference(r, r.optimizer);
  for (const auto& [name, w] : finals) EXPECT_LE(MaxDiff(w, ref), 1e-5f) << name;
  std::lock_guard<std::mutex> lock(mu);  // every role has ended: nothing appends any more
  return lines;
}

TEST(TsEngineClusterTest, RelayingChangesNoNumber) {
  comm::LoopbackNetwork net;
  const std::vector<std::string> lines = RunAndCollectOverlays(ThreeDataCentres(1), cluster_testing::LoopbackEnv(&net));
  // One line per global server and round (12 rounds), each naming its server.
  EXPECT_EQ(lines.size(), 24u);
  const std::regex head("^\\{\"round\":[0-9]+,\"server\":\"central/global-server[01]\"");
  for (const std::string& line : lines) EXPECT_TRUE(std::regex_search(line, head)) << line;
}

TEST(TsEngineClusterTest, TheSlowDataCentreIsRelayedThroughItsNeighbour) {
  Recipe r = ThreeDataCentres(2);  // 24 rounds
  r.topology.global_servers = 1;
  comm::NetworkShape network;
  network.wan = {.bandwidth_bps = 20e6, .latency_s = 0.004};
  network.uplinks["dc-c"] = {.bandwidth_bps = 0.5e6, .latency_s = 0.03};  // ~45 ms for the 1.4 KB model
  network.direct[comm::NetworkShape::Pair("dc-b", "dc-c")] = {.bandwidth_bps = 1e9, .latency_s = 0.0005};
  comm::LoopbackNetwork net;
  comm::TrafficCounters traffic;
  ClusterEnv env = cluster_testing::InProcessEnv("loop", [&](const std::string& node) {
    comm::ShapedVanOptions shaping{.network = network, .self_party = comm::PartyOfNode(node), .seed = 7};
    return std::make_unique<comm::ShapedVan>(std::make_unique<comm::LoopbackVan>(&net), shaping, &traffic);
  });
  const std::vector<std::string> lines = RunAndCollectOverlays(r, env);
  ASSERT_EQ(lines.size(), 24u);
  // From the measured links on, most rounds push dc-c's sum to dc-b and pass the value from dc-b to dc-c (the
  // planner still explores now and then, and re-measures a link every 5 rounds).
  const std::regex push_c_to_b("\"push\":\\[[^\\]]*\\{\"from\":\"dc-c/server0\",\"to\":\"dc-b/server0\"");
  const std::regex pull_b_to_c("\"pull\":\\[[^\\]]*\\{\"from\":\"dc-b/server0\",\"to\":\"dc-c/server0\"");
  int pushed = 0, pulled = 0;
  for (const std::string& line : lines) {
    pushed += std::regex_search(line, push_c_to_b) ? 1 : 0;
    pulled += std::regex_search(line, pull_b_to_c) ? 1 : 0;
  }
  EXPECT_GE(pushed, 12) << lines.back();
  EXPECT_GE(pulled, 12) << lines.back();
}

// The lines of `lines` whose server is `server`.
int LinesOf(const std::vector<std::string>& lines, const std::string& server) {
  int n = 0;
  for (const std::string& line : lines) n += line.find("\"server\":\"" + server + "\"") != std::string::npos;
  return n;
}

// Inside each data centre (accelerators.tsengine.tier: datacentre): the workers relay their gradients and the new
// weights among themselves and the local server coordinates; the numbers are the single-process run's, and each
// local server logs one overlay per round in which each of its two workers received the value once per slice.
TEST(TsEngineClusterTest, TheWorkersOfADataCentreRelayAmongThemselves) {
  Recipe r = cluster_testing::TwoByTwoRecipe("tsengine", 1);  // 16 rounds
  r.topology.options.split_bytes = 256;                       // the 16x16 weight in two slices
  r.accelerators.tsengine = true;
  r.accelerators.tsengine_tier = "datacentre";
  comm::LoopbackNetwork net;
  const std::vector<std::string> lines = RunAndCollectOverlays(r, cluster_testing::LoopbackEnv(&net));
  EXPECT_EQ(LinesOf(lines, "dc-a/server0"), 16);
  EXPECT_EQ(LinesOf(lines, "dc-b/server0"), 16);
  EXPECT_EQ(LinesOf(lines, "central/global-server0"), 0);  // the global tier is not relayed
  const std::regex worker0("\"pull\":\\[[^\\]]*\"to\":\"dc-a/worker0\"");
  for (const std::string& line : lines) {
    if (line.find("dc-a/server0") != std::string::npos) {
      EXPECT_TRUE(std::regex_search(line, worker0)) << line;
    }
  }
}

// Both tiers at once: the workers relay inside their data centres and the local servers between them; still the
// single-process numbers, and overlays from the global servers and from every local server.
TEST(TsEngineClusterTest, BothTiersCompose) {
  Recipe r = ThreeDataCentres(1);  // 12 rounds
  r.accelerators.tsengine_tier = "both";
  comm::LoopbackNetwork net;
  const std::vector<std::string> lines = RunAndCollectOverlays(r, cluster_testing::LoopbackEnv(&net));
  EXPECT_EQ(LinesOf(lines, "central/global-server0"), 12);
  EXPECT_EQ(LinesOf(lines, "central/global-server1"), 12);
  for (const char* server : {"dc-a/server0", "dc-b/server0", "dc-c/server0"}) {
    EXPECT_EQ(LinesOf(lines, server), 12) << server;
  }
}

}  // namespace
}  // namespace geomx::cli
