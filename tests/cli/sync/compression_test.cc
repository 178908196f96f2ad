// Compression on a 2 x 2 topology run as threads (loopback vans wrapped in unshaped ShapedVans that count the
// bytes each node sends): FSA with bsc / fp16 / mpq trains, and the bytes on each link direction shrink as the
// scheme says; MultiGPS (2 global servers, a tensor split across them) with bsc. Also the recipe rules.
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/train/trainer.h"
#include "cli/cluster.h"
#include "cli/setup.h"
#include "comm/loopback_van.h"
#include "comm/shaped_van.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/cli/sync/sync_test_util.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using cluster_testing::Weights;
using sync_testing::TestLoss;

// 64 -> 256 -> 4 MLP: fc1.weight (16384 elements) and fc2.weight (1024) are above size_lower_bound (1000), the
// biases below. 512 synthetic examples, 4 workers of batch 8: 16 iterations per epoch.
Recipe MakeRecipe(const std::string& compression, int global_servers = 1) {
  Recipe r = cluster_testing::TwoByTwoRecipe("compression", 1);
  r.model.hidden = {256};
  r.data.synthetic_test = 256;
  r.data.synthetic_shape = {64};
  r.optimizer_where = "worker";
  r.accelerators.compression = compression;
  r.accelerators.bsc_ratio = 0.01f;
  r.topology.global_servers = global_servers;
  r.topology.options.split_bytes = global_servers > 1 ? 16384 : (1 << 20);  // 2 GS: fc1.weight in 4 slices
  return r;
}

// Bytes sent per link direction (all nodes of that role summed).
struct Bytes4 {
  uint64_t worker_to_local = 0, local_to_global = 0, global_to_local = 0, local_to_worker = 0;
};

struct Outcome {
  std::map<std::string, Weights> finals;
  Bytes4 bytes;
};

Outcome RunCluster(const Recipe& r) {
  comm::LoopbackNetwork net;
  std::mutex mu;
  std::map<std::string, std::unique_ptr<comm::TrafficCounters>> counters;  // per node
  const ClusterEnv env =
      cluster_testing::InProcessEnv("loop", [&](const std::string& node) -> std::unique_ptr<comm::Van> {
        std::lock_guard<std::mutex> lock(mu);
        auto& c = counters[node];
        c = std::make_unique<comm::TrafficCounters>();
        return std::make_unique<comm::ShapedVan>(std::make_unique<comm::LoopbackVan>(&net), comm::ShapedVanOptions{},
                                                 c.get());
      });
  Outcome out;
  out.finals = cluster_testing::RunCluster(r, env);
  for (const auto& [node, c] : counters) {
    const comm::TrafficSnapshot t = c->Snapshot();
    if (node.find("/global-server") != std::string::npos) {
      out.bytes.global_to_local += t.wan_bytes_sent;
    } else if (node.find("@global") != std::string::npos) {
      out.bytes.local_to_global += t.wan_bytes_sent;
    } else if (node.find("/worker") != std::string::npos) {
      out.bytes.worker_to_local += t.lan_bytes_sent;
    } else if (node.find("/server") != std::string::npos) {
      out.bytes.local_to_worker += t.lan_bytes_sent;
    }
  }
  std::printf("[ bytes    ] %s: worker->local %llu, local->global %llu, global->local %llu, local->worker %llu\n",
              r.accelerators.compression.c_str(), static_cast<unsigned long long>(out.bytes.worker_to_local),
              static_cast<unsigned long long>(out.bytes.local_to_global),
              static_cast<unsigned long long>(out.bytes.global_to_local),
              static_cast<unsigned long long>(out.bytes.local_to_worker));
  return out;
}

// The shares of the dense run's loss decrease a compressed run must reach: FP16 rounds every value by at most
// 2^-11 relative, so it tracks the dense run closely; Bi-Sparse at 1 % sends a hundredth of the large tensors per
// round and the rest later (error feedback), so it may trail the dense run a little. (Measured, the runs being
// deterministic: fp16 ends on the dense loss, bsc and mpq a little below it.)
constexpr double kFp16Share = 0.95;
constexpr double kSparseShare = 0.8;

// The dense run every compressed run is measured against: the same job without compression (SGD, so the
// optimizer's placement and the number of global servers do not change the math).
const Outcome& Dense() {
  static const Outcome* dense = new Outcome(RunCluster(MakeRecipe("none")));
  return *dense;
}

// Every worker holds the same weights bit for bit, and the test loss went down by at least `share` of what the
// dense run gained (initial loss L0, dense final loss Ld: loss <= L0 - share * (L0 - Ld)).
void ExpectTrainedAndInSync(const Recipe& r, const Outcome& o, double share) {
  ASSERT_EQ(o.finals.size(), 4u);
  const Weights& first = o.finals.begin()->second;
  for (const auto& [name, w] : o.finals) EXPECT_EQ(w, first) << name << " differs from the other workers";
  const double initial = TestLoss(r, nullptr);
  const double dense = TestLoss(r, &Dense().finals.begin()->second);
  ASSERT_LT(dense, initial - 0.05) << "the dense run did not learn: no margin to measure against";
  const double loss = TestLoss(r, &first);
  std::printf("[ loss     ] %s: initial %.4f, dense %.4f, compressed %.4f\n", r.accelerators.compression.c_str(),
              initial, dense, loss);
  EXPECT_LE(loss, initial - share * (initial - dense)) << "the compressed run gained less than " << share
                                                       << " of the dense run's loss decrease";
}

class CompressionCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dense_ = &Dense(); }
  static const Outcome* dense_;
};
const Outcome* CompressionCluster::dense_ = nullptr;

TEST_F(CompressionCluster, BscSparsifiesBothWanDirectionsOnly) {
  const Recipe r = MakeRecipe("bsc");
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, kSparseShare);
  const Bytes4& d = dense_->bytes;
  // 1%: the push carries ~1% of the large tensors as (u32, f32) pairs; the pull their union over 2 data centres.
  EXPECT_GT(d.local_to_global, 10 * o.bytes.local_to_global);
  EXPECT_GT(d.global_to_local, 5 * o.bytes.global_to_local);
  // The pull is the union of the 2 data centres' selections: at most twice the pushes, plus the one-off dense
  // initial weights that each local server fetches.
  EXPECT_LT(o.bytes.global_to_local, o.bytes.local_to_global * 2 + 2 * (d.global_to_local / 16));
  // The LAN stays dense f32 (bsc's default covers only the WAN).
  EXPECT_EQ(o.bytes.worker_to_local, d.worker_to_local);
  EXPECT_EQ(o.bytes.local_to_worker, d.local_to_worker);
}

TEST_F(CompressionCluster, Fp16HalvesEveryLink) {
  const Recipe r = MakeRecipe("fp16");
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, kFp16Share);
  const Bytes4& d = dense_->bytes;
  for (auto [c, dn, name] : {std::tuple{o.bytes.worker_to_local, d.worker_to_local, "worker_to_local"},
                             std::tuple{o.bytes.local_to_global, d.local_to_global, "local_to_global"},
                             std::tuple{o.bytes.global_to_local, d.global_to_local, "global_to_local"},
                             std::tuple{o.bytes.local_to_worker, d.local_to_worker, "local_to_worker"}}) {
    EXPECT_LT(c, dn * 0.56) << name;  // half the values plus per-message headers
    EXPECT_GT(c, dn * 0.45) << name;
  }
}

TEST_F(CompressionCluster, MpqLiesBetweenFp16AndBscOnTheWan) {
  const Recipe r = MakeRecipe("mpq");
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, kSparseShare);
  const Bytes4& d = dense_->bytes;
  EXPECT_GT(d.local_to_global, 10 * o.bytes.local_to_global);  // large tensors sparse, small ones FP16
  EXPECT_GT(d.global_to_local, 5 * o.bytes.global_to_local);
  // LAN: large tensors f32, small FP16: a little below dense.
  EXPECT_LT(o.bytes.worker_to_local, d.worker_to_local);
  EXPECT_GT(o.bytes.worker_to_local, d.worker_to_local * 9 / 10);
}

TEST(CompressionServerOptimizer, Fp16WithTheOptimizerOnTheGlobalServer) {
  // The weights go down in FP16; the master copy stays f32 on the global server (initial weights as kRaw frames).
  Recipe r = MakeRecipe("fp16", /*global_servers=*/2);
  r.optimizer_where = "global-server";
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, kFp16Share);
}

TEST(CompressionMultiGps, BscWithATensorSplitAcrossTwoGlobalServers) {
  const Recipe r = MakeRecipe("bsc", /*global_servers=*/2);
  auto setup = PrepareRun(r);
  ASSERT_TRUE(setup.ok());
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, kSparseShare);
  EXPECT_GT(o.bytes.local_to_global, 0u);
}

TEST(CompressionRules, BadRatiosAndCombinationsNameTheKey) {
  testing::ScratchDir dir;
  const std::string base = (testing::SourceDir() / "recipes" / "quickstart_2dc.yaml").string();
  struct Case {
    std::string sets, key;
  };
  const Case cases[] = {
      {"--set accelerators.compression=bsc --set accelerators.bsc.ratio=0", "accelerators.bsc.ratio"},
      {"--set accelerators.compression=bsc --set accelerators.bsc.ratio=1.5", "accelerators.bsc.ratio"},
      {"--set accelerators.compression=zip", "accelerators.compression"},
      {"--set accelerators.compression=bsc --set optimizer.where=global-server",
       "accelerators.links.global_to_local"},
      {"--set accelerators.compression=bsc --set optimizer.where=worker --set accelerators.bsc.momentum=0.9",
       "accelerators.bsc.momentum"},  // the recipe's optimizer has momentum too
  };
  for (const Case& c : cases) {
    const testing::CommandResult res = testing::RunGeomx("train " + base + " --dry-run " + c.sets, dir.path());
    EXPECT_EQ(res.exit_code, 2) << c.sets << "\n" << res.output;
    EXPECT_NE(res.output.find(c.key), std::string::npos) << c.sets << "\n" << res.output;
  }
}

// The recipe's accelerators become the typed compression plan every role shares (cli/cluster.h ClusterConfigOf,
// comm/compression/link_plan.h): schemes, directions and bsc parameters per link, compressed tiers.
TEST(LinkPlan, ConfigFollowsTheRecipe) {
  Recipe r = MakeRecipe("mpq");
  r.accelerators.bsc_ratio = 0.05f;
  r.accelerators.bsc_selection = "sampled";
  Result<cluster::ClusterConfig> c = ClusterConfigOf(r);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const comm::LinkCodecConfig up = c->links.global.push;  // local_to_global
  EXPECT_EQ(up.scheme, comm::LinkScheme::kMpq);
  EXPECT_TRUE(up.push && up.wan && up.bsc.sampled);
  EXPECT_FLOAT_EQ(up.bsc.ratio, 0.05f);
  const comm::LinkCodecConfig down = c->links.local.answer;  // local_to_worker
  EXPECT_FALSE(down.push || down.wan);
  EXPECT_TRUE(c->links.global.compressed);
  Result<cluster::ClusterConfig> dense = ClusterConfigOf(MakeRecipe("none"));
  ASSERT_TRUE(dense.ok());
  EXPECT_FALSE(dense->links.global.compressed);  // dense tier: no encoder, f32 as without compression
  EXPECT_FALSE(dense->links.local.compressed);
}

// sign, int8 and powersgd (comm/compression/sign.h, int8.h, powersgd.h): the WAN push per round shrinks by the
// factor the frame formulas give for this model's slices, computed here from the documented layout
// (docs/wire_format.md).
// fc1.weight 16384 and fc2.weight 1024 elements are compressed; the biases (256, 4) travel as kRaw frames.
double ExpectedWanFactor(const std::string& scheme) {
  const uint64_t large[] = {16384, 1024}, small[] = {256, 4};
  uint64_t dense = 0, packed = 0;
  for (uint64_t n : large) {
    dense += 4 * n;
    if (scheme == "powersgd") {  // rank 4 factors of a square matrix: 128 x 128 and 32 x 32
      const uint64_t side = n == 16384 ? 128 : 32;
      packed += 16 + 16 + 4 * 4 * (side + side);
      continue;
    }
    const uint64_t block = scheme == "sign" ? 4096 : 256;
    const uint64_t blocks = (n + block - 1) / block;
    packed += 16 + 8 + 4 * blocks + (scheme == "sign" ? (n + 7) / 8 : n);
  }
  for (uint64_t n : small) {
    dense += 4 * n;
    packed += 16 + 4 * n;
  }
  return static_cast<double>(dense) / static_cast<double>(packed);
}

void ExpectWanFactor(const Outcome& o, const Outcome& d, const std::string& scheme) {
  const double expected = ExpectedWanFactor(scheme);
  const double measured = static_cast<double>(d.bytes.local_to_global) / static_cast<double>(o.bytes.local_to_global);
  std::printf("[ factor   ] %s: local->global %.2fx less than dense, formula %.2fx\n", scheme.c_str(), measured,
              expected);
  // Message headers (the same count in both runs) pull the measured factor a little below the payload formula.
  EXPECT_GT(measured, 0.85 * expected);
  EXPECT_LT(measured, 1.02 * expected);
  // The answers carry the same frames (plus the one-off dense initial weights each local server fetches).
  EXPECT_LT(o.bytes.global_to_local, d.bytes.global_to_local / expected * 1.2 + 2 * (d.bytes.global_to_local / 16));
  EXPECT_EQ(o.bytes.worker_to_local, d.bytes.worker_to_local);  // the LAN stays dense
}

TEST_F(CompressionCluster, SignSendsOneBitPerElementWithErrorFeedback) {
  const Recipe r = MakeRecipe("sign");
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, 0.5);
  ExpectWanFactor(o, *dense_, "sign");
}

TEST_F(CompressionCluster, Int8SendsOneBytePerElementWithErrorFeedback) {
  Recipe r = MakeRecipe("int8");
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, kFp16Share);
  ExpectWanFactor(o, *dense_, "int8");
  r.accelerators.int8_stochastic = true;
  const Outcome s = RunCluster(r);
  ExpectTrainedAndInSync(r, s, kSparseShare);
  EXPECT_EQ(s.bytes.local_to_global, o.bytes.local_to_global);  // the same frame sizes
}

TEST_F(CompressionCluster, PowerSgdSendsRankFourFactorsWithErrorFeedback) {
  const Recipe r = MakeRecipe("powersgd");
  EXPECT_EQ(r.accelerators.powersgd_rank, 4);
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o, 0.5);
  ExpectWanFactor(o, *dense_, "powersgd");
}

TEST(CompressionRules, SignAndInt8NeedIncrementsOnTheirLinks) {
  testing::ScratchDir dir;
  const std::string base = (testing::SourceDir() / "recipes" / "quickstart_2dc.yaml").string();
  struct Case {
    std::string sets, key;
  };
  const Case cases[] = {
      {"--set accelerators.compression=sign --set optimizer.where=global-server", "accelerators.links.global_to_local"},
      {"--set accelerators.links.local_to_worker=int8 --set optimizer.where=global-server",
       "accelerators.links.local_to_worker"},
      {"--set accelerators.compression=int8 --set accelerators.int8.block=0", "accelerators.int8.block"},
      {"--set sync.mode=diloco --set accelerators.links.local_to_global=sign", "accelerators.links.local_to_global"},
  };
  for (const Case& c : cases) {
    const testing::CommandResult res = testing::RunGeomx("train " + base + " --dry-run " + c.sets, dir.path());
    EXPECT_EQ(res.exit_code, 2) << c.sets << "\n" << res.output;
    EXPECT_NE(res.output.find(c.key), std::string::npos) << c.sets << "\n" << res.output;
  }
  for (const char* ok : {"--set accelerators.compression=int8 --set optimizer.where=worker",
                         "--set accelerators.compression=sign --set optimizer.where=worker",
                         "--set sync.mode=hfa --set accelerators.compression=sign --set optimizer.where=worker"}) {
    const testing::CommandResult res = testing::RunGeomx("train " + base + " --dry-run " + ok, dir.path());
    EXPECT_EQ(res.exit_code, 0) << ok << "\n" << res.output;
  }
}

}  // namespace
}  // namespace geomx::cli
