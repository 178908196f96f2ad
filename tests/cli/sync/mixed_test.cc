// sync.mode mixed (cli/sync/mixed.h) and DC-ASGD (cli/sync/dcasgd.h): the recipe rules, the compensation with
// each data centre's own backup, and every role of a 2x2 topology as threads with one data centre slowed down:
// the global server applies updates without a barrier and never beyond sync.max_staleness.
#include "cli/sync/mixed.h"

#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cluster.h"
#include "cli/setup.h"
#include "cli/sync_rules.h"
#include "cli/trainer.h"
#include "comm/loopback_van.h"
#include "comm/postoffice.h"
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
  EXPECT_NE(First(ErrorLines(kTwoDcs + "sync: {mode: mixed}\naccelerators: {p3: {enabled: true}}\n"))
                .find("accelerators.p3.enabled: P3 schedules"),
            std::string::npos);
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

// ---- DC-ASGD ----

nn::OptimizerConfig Sgd(float lr) {
  nn::OptimizerConfig c;
  c.name = "sgd";
  c.lr = lr;
  return c;
}

TEST(DcAsgdTest, CompensatesWithThePushingDataCentresBackup) {
  DcAsgd d({.lambda = 0.5f}, 2);
  const std::vector<float> w0 = {1.0f, 2.0f};
  d.InitKey(7, w0);
  d.Record(1, 7, std::vector<float>{3.0f, 5.0f});  // dc 1 read newer weights; dc 0 still has w0
  std::vector<float> g = {2.0f, -1.0f};
  const std::vector<float> w_now = {4.0f, 4.0f};
  d.Compensate(0, 7, g, w_now);
  EXPECT_FLOAT_EQ(g[0], 2.0f + 0.5f * 4.0f * (4.0f - 1.0f));
  EXPECT_FLOAT_EQ(g[1], -1.0f + 0.5f * 1.0f * (4.0f - 2.0f));
  std::vector<float> g1 = {2.0f, -1.0f};
  d.Compensate(1, 7, g1, w_now);
  EXPECT_FLOAT_EQ(g1[0], 2.0f + 0.5f * 4.0f * (4.0f - 3.0f));
  EXPECT_FLOAT_EQ(g1[1], -1.0f + 0.5f * 1.0f * (4.0f - 5.0f));
}

TEST(DcAsgdTest, AdaptiveDividesLambdaByTheRootMeanSquare) {
  DcAsgd d({.lambda = 2.0f, .adaptive = true, .decay = 0.9f, .eps = 0.0f}, 1);
  d.InitKey(0, std::vector<float>{0.0f});
  std::vector<float> g = {2.0f};
  d.Compensate(0, 0, g, std::vector<float>{1.0f});
  const float ms = 0.1f * 4.0f;
  EXPECT_NEAR(g[0], 2.0f + 2.0f / std::sqrt(ms) * 4.0f * 1.0f, 1e-4f);
  std::vector<float> g2 = {1.0f};
  d.Compensate(0, 0, g2, std::vector<float>{1.0f});
  const float ms2 = 0.9f * ms + 0.1f * 1.0f;
  EXPECT_NEAR(g2[0], 1.0f + 2.0f / std::sqrt(ms2) * 1.0f * 1.0f, 1e-4f);
}

// Through the global server's sink: dc 0 read w0; dc 1 updates twice; dc 0's update is compensated with
// (w_now - w0), its own backup, not with the weights before the last update (GeoMX's one w_prev per key), and
// dc 1's second update with its backup w1 (no change since it read: no compensation).
TEST(DcAsgdTest, MixedSinkUsesTheRightBackupPerDataCentre) {
  ServerOptimizer opt(nn::LrScheduleConfig{}, 100, 1000);
  ASSERT_TRUE(opt.SetRule(Sgd(0.1f)).ok());
  const float lambda = 0.5f;
  MixedSink sink(&opt, std::make_unique<DcAsgd>(DcAsgdOptions{.lambda = lambda}, 2), nullptr);
  ASSERT_TRUE(sink.Init(3, std::vector<float>{1.0f}));
  ASSERT_TRUE(sink.Read(3, 0).ok());
  ASSERT_TRUE(sink.Read(3, 1).ok());
  auto value = [](const Result<Bytes>& b) { return b.ok() ? b->as<float>()[0] : NAN; };
  // num_merged 2: the mean gradient is sum / 2.
  const float w1 = value(sink.Apply(3, 1, 0, std::vector<float>{2.0f}, 2));  // g = 1, no delay: w0 - 0.1
  EXPECT_FLOAT_EQ(w1, 0.9f);
  const float w2 = value(sink.Apply(3, 1, 1, std::vector<float>{2.0f}, 2));  // backup w1 == w_now
  EXPECT_FLOAT_EQ(w2, 0.8f);
  const float g = 1.0f;
  const float compensated = g + lambda * g * g * (w2 - 1.0f);  // dc 0's backup: w0 = 1
  const float w3 = value(sink.Apply(3, 0, 0, std::vector<float>{2.0f}, 2));
  EXPECT_NEAR(w3, w2 - 0.1f * compensated, 1e-6f);
  const float geomx = g + lambda * g * g * (w2 - w1);  // what one w_prev per key would give
  EXPECT_GT(std::fabs(w3 - (w2 - 0.1f * geomx)), 1e-4f);
  EXPECT_FLOAT_EQ(sink.dcasgd()->BackupForTesting(0, 3).value()[0], w3);
  EXPECT_FLOAT_EQ(sink.dcasgd()->BackupForTesting(1, 3).value()[0], w2);
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

// The global server role as RunGlobalServer runs it (cli/cluster.cc), keeping the policy to read its counters.
Status RunObservedGlobalServer(const Recipe& r, const ClusterEnv& env, comm::AsyncAggregatorStats* stats) {
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(r));
  ClusterContext ctx;
  ctx.recipe = &r;
  ctx.setup = &setup;
  const int world = r.topology.total_workers();
  ctx.iterations_per_epoch = std::max<int64_t>(1, (setup.data.train->size() / world) / r.data.batch_size);
  ctx.links = ResolveLinks(r.accelerators);
  comm::TierSpec tier;
  tier.name = "global";
  tier.scheduler_endpoint = env.scheduler_endpoint("global", r.topology.central_host, r.topology.global_scheduler_port);
  tier.num_servers = 1;
  tier.num_workers = 1;
  for (const auto& dc : r.topology.datacentres) tier.num_workers += dc.servers;
  tier.options = r.topology.options;
  tier.scheduler_party = "central";
  const std::string name = "central/global-server0";
  auto van = env.make_van(name);
  comm::Postoffice po(tier, comm::NodeInfo{-1, comm::NodeRole::kServer, 0, name, "central", ""}, van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, r.topology.central_host)));
  std::vector<comm::KeySpec> keys;
  for (nn::Parameter* p : setup.model->Parameters()) {
    keys.push_back(comm::KeySpec{keys.size(), static_cast<uint64_t>(p->numel()), true});
  }
  GEOMX_ASSIGN_OR_RETURN(comm::KeyLayout layout, comm::KeyLayout::Build(keys, 1, r.topology.options.split_bytes));
  GEOMX_ASSIGN_OR_RETURN(auto policy, MakeGlobalServerPolicy(ctx, layout));
  auto* agg = dynamic_cast<comm::AsyncAggregator*>(policy->handler());
  if (agg == nullptr) return Status::Internal("sync.mode mixed did not make an AsyncAggregator");
  comm::KvServer server(&po, 0, agg);
  GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
  Status s;
  for (;;) {
    s = po.Finalize();
    if (s.ok() || s.code() != StatusCode::kDeadlineExceeded || !po.health().ok()) break;
  }
  *stats = agg->stats();
  return s;
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
    const EvalResult ev = Evaluate(model, *setup->data.test, Device::Cpu(), 64, 0);
    std::lock_guard<std::mutex> lock(mu);
    out.accuracy[name] = ev.accuracy;
  };
  cluster_testing::RunRoles(r, env, [&](int) { return RunObservedGlobalServer(r, env, &out.stats); });
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
