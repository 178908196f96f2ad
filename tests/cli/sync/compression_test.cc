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
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using cluster_testing::Weights;

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

// Test loss of `w` loaded into the recipe's model.
double TestLoss(const Recipe& r, const Weights* w) {
  auto setup = PrepareRun(r);
  EXPECT_TRUE(setup.ok()) << setup.status().ToString();
  if (w != nullptr) {
    auto params = setup->model->Parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor t = Tensor::FromVector((*w)[i], params[i]->data().shape());
      Tensor(params[i]->data()).CopyFrom(t);
    }
  }
  return train::Evaluate(*setup->model, *setup->data.test, Device::Cpu(), 64, 0).loss;
}

void ExpectTrainedAndInSync(const Recipe& r, const Outcome& o) {
  ASSERT_EQ(o.finals.size(), 4u);
  const Weights& first = o.finals.begin()->second;
  for (const auto& [name, w] : o.finals) EXPECT_EQ(w, first) << name << " differs from the other workers";
  EXPECT_LT(TestLoss(r, &first), TestLoss(r, nullptr) * 0.9) << "the test loss did not go down";
}

class CompressionCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dense_ = new Outcome(RunCluster(MakeRecipe("none"))); }
  static void TearDownTestSuite() { delete dense_; }
  static Outcome* dense_;
};
Outcome* CompressionCluster::dense_ = nullptr;

TEST_F(CompressionCluster, BscSparsifiesBothWanDirectionsOnly) {
  const Recipe r = MakeRecipe("bsc");
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o);
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
  ExpectTrainedAndInSync(r, o);
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
  ExpectTrainedAndInSync(r, o);
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
  ExpectTrainedAndInSync(r, o);
}

TEST(CompressionMultiGps, BscWithATensorSplitAcrossTwoGlobalServers) {
  const Recipe r = MakeRecipe("bsc", /*global_servers=*/2);
  auto setup = PrepareRun(r);
  ASSERT_TRUE(setup.ok());
  const Outcome o = RunCluster(r);
  ExpectTrainedAndInSync(r, o);
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

}  // namespace
}  // namespace geomx::cli
