// sync.mode esync (algorithms/sync/esync.h) through recipes: a 2 x 2 run with one data centre slowed down in which
// every round's steps follow the rule and every worker takes them, the same with emulated speeds (dc-b 3x slower)
// whose plan is derived by hand, and the state server as a role. (The rule, the planner and the protocol alone:
// tests/algorithms/sync/esync_test.cc.)
#include "algorithms/sync/esync.h"

#include <map>
#include <memory>
#include <vector>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "algorithms/sync/averaging.h"
#include "cli/local_topology.h"
#include "cli/role_command.h"
#include "comm/loopback_van.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using cluster_testing::AveragingRecipe;
using cluster_testing::MaxDiff;
using cluster_testing::RunCluster;
using cluster_testing::Weights;

TEST(EsyncStateServerTest, RefusesOtherModes) {
  Recipe r = AveragingRecipe("hfa", 1);
  comm::LoopbackNetwork net;
  Status s = RunStateServer(r, cluster_testing::LoopbackEnv(&net));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sync.mode"), std::string::npos);
}

// Records the planner's rounds and each worker's rounds (called from the cluster's threads).
struct EsyncTraces : sync::SyncObserver {
  std::mutex mu;
  std::vector<sync::EsyncRoundTrace> rounds;
  std::map<int, std::vector<sync::EsyncWorkerTrace>> workers;
  void OnEsyncRound(const sync::EsyncRoundTrace& t) override {
    std::lock_guard<std::mutex> lock(mu);
    rounds.push_back(t);
  }
  void OnEsyncWorkerRound(const sync::EsyncWorkerTrace& t) override {
    std::lock_guard<std::mutex> lock(mu);
    workers[t.rank].push_back(t);
  }
};

// 2 x 2 with dc-b slowed down 4x: every round is planned by the rule from what the workers reported, each worker
// takes exactly the steps it was told, all take part in every round, and all end with the global model.
TEST(EsyncClusterTest, StepsFollowTheRuleWithASlowDataCentre) {
  Recipe r = AveragingRecipe("esync", 1);
  r.topology.datacentres[1].slowdown = 4.0f;
  r.sync.esync_max_local_steps = 6;
  EsyncTraces traces;
  const auto finals = RunCluster(r, &traces);
  const std::vector<sync::EsyncRoundTrace>& rounds = traces.rounds;
  const std::map<int, std::vector<sync::EsyncWorkerTrace>>& workers = traces.workers;
  ASSERT_EQ(finals.size(), 4u);

  const int64_t expected_rounds = 16;  // iterations_per_epoch x epochs: the slowest worker's FSA steps
  ASSERT_EQ(static_cast<int64_t>(rounds.size()), expected_rounds);
  for (size_t i = 0; i < rounds.size(); ++i) {
    const sync::EsyncRoundTrace& t = rounds[i];
    EXPECT_EQ(t.round, static_cast<int64_t>(i));
    ASSERT_EQ(t.seconds.size(), 4u);
    EXPECT_EQ(t.steps, sync::EsyncLocalSteps(t.seconds, 6)) << "round " << i;
    if (i == 0) {
      EXPECT_EQ(t.steps, (std::vector<int>{1, 1, 1, 1}));  // nothing measured yet
    }
    // The slowest worker takes one step.
    size_t slowest = 0;
    for (size_t w = 1; w < 4; ++w) slowest = t.seconds[w] > t.seconds[slowest] ? w : slowest;
    EXPECT_EQ(t.steps[slowest], 1) << "round " << i;
  }
  ASSERT_EQ(workers.size(), 4u);
  for (const auto& [rank, trace] : workers) {
    ASSERT_EQ(static_cast<int64_t>(trace.size()), expected_rounds) << "worker " << rank;
    for (size_t i = 0; i < trace.size(); ++i) {
      EXPECT_EQ(trace[i].round, static_cast<int64_t>(i));
      EXPECT_EQ(trace[i].told, rounds[i].steps[rank]) << "worker " << rank << " round " << i;
      EXPECT_EQ(trace[i].taken, trace[i].told) << "worker " << rank << " round " << i;
    }
  }
  const Weights& first = finals.begin()->second;
  for (const auto& [name, w] : finals) EXPECT_EQ(MaxDiff(w, first), 0.0f) << name;
}

// esync with emulated machine speeds instead of measured ones, so the state server's plan is known in advance: the
// workers of dc-a report 0.1 s per local step, those of dc-b 0.3 s (dc-b 3x slower). Everything else is esync's
// own code: the averaging policies, the state server, its client and the worker (sync::MakeEsyncWorker).
constexpr int kFixedMaxSteps = 6;

class FixedSpeedEsync final : public sync::SyncMode {
 public:
  Result<std::unique_ptr<sync::ServerPolicy>> MakeGlobalServer(const sync::ServerArgs& args) const override {
    return sync::MakeAveragingGlobalServer(args, sync::OuterRule{.lr = 1.0f, .momentum = 0.0f});
  }
  Result<std::unique_ptr<sync::ServerPolicy>> MakeLocalServer(const sync::LocalServerArgs& args) const override {
    return sync::MakeAveragingLocalServer(args, /*k2=*/1);
  }
  Result<std::unique_ptr<sync::WorkerSync>> MakeWorker(const sync::WorkerArgs& args) const override {
    return sync::MakeEsyncWorker(args, kFixedMaxSteps, args.dc_index == 0 ? 0.1 : 0.3);
  }
  Status RunStateServer(const sync::StateServerArgs& args) const override {
    return sync::RunEsyncStateServer(args, kFixedMaxSteps);
  }
};

GEOMX_REGISTER_SYNC_MODE((sync::SyncModeDef{
    .name = "esync-fixed-speeds",
    .help = "test only: esync whose workers report fixed seconds per step (dc-a 0.1 s, dc-b 0.3 s)",
    .traits = {.averages_models = true, .steps_on_gradients = false, .state_server = true},
    .create = [](const sync::SyncSettings&) -> Result<std::unique_ptr<sync::SyncMode>> {
      return std::unique_ptr<sync::SyncMode>(new FixedSpeedEsync());
    },
    .rules = [](const sync::SyncRuleInput&, std::vector<sync::RuleViolation>*) {}}));

// dc-b 3x slower. By hand: round 0 nothing is measured, every worker takes 1 step; from round 1 on the slowest
// step is 0.3 s, so a dc-a worker takes floor(0.3 / 0.1) = 3 steps and a dc-b worker floor(0.3 / 0.3) = 1. Over
// the run's 16 rounds a dc-a worker takes 1 + 15 x 3 = 46 local steps, a dc-b worker 16. (A planner that gave
// every worker one step fails every round from 1 on.)
TEST(EsyncClusterTest, FastWorkersTakeMoreStepsByHand) {
  Recipe r = AveragingRecipe("esync-fixed-speeds", 1);
  EsyncTraces traces;
  const auto finals = RunCluster(r, &traces);
  ASSERT_EQ(finals.size(), 4u);
  ASSERT_EQ(traces.rounds.size(), 16u);
  for (size_t i = 0; i < traces.rounds.size(); ++i) {
    const std::vector<int> want = i == 0 ? std::vector<int>{1, 1, 1, 1} : std::vector<int>{3, 3, 1, 1};
    EXPECT_EQ(traces.rounds[i].steps, want) << "round " << i;
  }
  ASSERT_EQ(traces.workers.size(), 4u);
  for (const auto& [rank, trace] : traces.workers) {
    ASSERT_EQ(trace.size(), 16u) << "worker " << rank;
    int taken = 0;
    for (const sync::EsyncWorkerTrace& t : trace) taken += t.taken;
    EXPECT_EQ(taken, rank < 2 ? 46 : 16) << "worker " << rank;
  }
  const Weights& first = finals.begin()->second;
  for (const auto& [name, w] : finals) EXPECT_EQ(MaxDiff(w, first), 0.0f) << name;
}

// `geomx serve --role state-server` and the plan of `geomx train` for an esync recipe.
TEST(EsyncRolesTest, TheStateServerIsARoleAndPartOfTheLocalPlan) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "e.yaml", R"(name: e
sync: {mode: esync}
topology:
  datacentres:
    - {name: dc-a, workers: 2}
    - {name: dc-b, workers: 2, slowdown: 4}
)");
  const std::string path = (dir / "e.yaml").string();
  Result<Recipe> recipe = LoadRecipe(path, {});
  ASSERT_TRUE(recipe.ok()) << recipe.status().ToString();
  RoleFlags flags;
  flags.recipe = path;
  flags.role = "state-server";
  Result<RoleSpec> spec = ResolveRoleSpec(*recipe, flags);
  ASSERT_FALSE(spec.ok());  // port 0: the workers could not find it
  EXPECT_EQ(spec.status().message().rfind("topology.central.state_server_port:", 0), 0u) << spec.status().message();
  RoleFlags worker = flags;
  worker.role = "worker";
  worker.party = "dc-a";
  EXPECT_FALSE(ResolveRoleSpec(*recipe, worker).ok());

  Result<Recipe> pinned = LoadRecipe(path, {"topology.central.state_server_port=9301"});
  ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
  spec = ResolveRoleSpec(*pinned, flags);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->kind, RoleSpec::Kind::kStateServer);
  EXPECT_EQ(ProcessName(*spec), "central/state-server");
  EXPECT_NE(DescribeRole(*pinned, *spec).find("ESync state server of 4 workers; listens on 127.0.0.1:9301"),
            std::string::npos)
      << DescribeRole(*pinned, *spec);

  TrainFlags train;
  train.recipe = path;
  train.out = "runs/e-1";
  Result<LocalTopologyPlan> plan = PlanLocalTopology(train, *recipe, "/opt/geomx");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  int state_servers = 0;
  std::string port_flag;
  for (const PlannedProcess& p : plan->processes) {
    if (p.name != "central/state-server") continue;
    ++state_servers;
    EXPECT_EQ(std::vector<std::string>(p.argv.begin() + 1, p.argv.begin() + 4),
              (std::vector<std::string>{"serve", "--role", "state-server"}));
    for (const std::string& a : p.argv) {
      if (a.rfind("topology.central.state_server_port=", 0) == 0) port_flag = a;
    }
  }
  EXPECT_EQ(state_servers, 1);
  ASSERT_FALSE(port_flag.empty());
  EXPECT_NE(port_flag, "topology.central.state_server_port=0");
  for (const PlannedProcess& p : plan->processes) {  // every process is told the same port
    EXPECT_NE(std::find(p.argv.begin(), p.argv.end(), port_flag), p.argv.end()) << p.name;
  }

  Result<Recipe> fsa = LoadRecipe(path, {"sync.mode=fsa"});
  ASSERT_TRUE(fsa.ok());
  plan = PlanLocalTopology(train, *fsa, "/opt/geomx");
  ASSERT_TRUE(plan.ok());
  for (const PlannedProcess& p : plan->processes) EXPECT_NE(p.name, "central/state-server");
  EXPECT_EQ(ResolveRoleSpec(*fsa, flags).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::cli
