// The single-host process plan of a topology (cli/local_topology.h): which processes, with which flags and ports,
// and that the Launcher runs exactly that plan.
#include "cli/local_topology.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tests/testutil.h"

namespace geomx::cli {
namespace {

constexpr char kGeo[] = R"(name: geo
topology:
  central: {host: 10.1.0.1, global_servers: 2}
  datacentres:
    - {name: dc-a, workers: 2, servers: 1, host: 10.1.0.2}
    - {name: dc-b, workers: 1, servers: 2, scheduler_port: 9100}
)";

bool Contains(const std::vector<std::string>& argv, const std::vector<std::string>& run) {
  return std::search(argv.begin(), argv.end(), run.begin(), run.end()) != argv.end();
}

TEST(LocalTopologyTest, PlansEveryRoleWithItsFlagsAndPorts) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "geo.yaml", kGeo);
  Result<Recipe> recipe = LoadRecipe((dir / "geo.yaml").string(), {"training.epochs=1"});
  ASSERT_TRUE(recipe.ok()) << recipe.status().ToString();
  TrainFlags flags;
  flags.recipe = (dir / "geo.yaml").string();
  flags.sets = {"training.epochs=1"};
  flags.out = "runs/geo-1";
  Result<LocalTopologyPlan> plan = PlanLocalTopology(flags, *recipe, "/opt/geomx");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<std::string> names;
  for (const PlannedProcess& p : plan->processes) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"central/global-scheduler", "central/global-server0",
                                             "central/global-server1", "dc-a/scheduler", "dc-a/server0", "dc-a/worker0",
                                             "dc-a/worker1", "dc-b/scheduler", "dc-b/server0", "dc-b/server1",
                                             "dc-b/worker0", "central/master-worker"}));
  EXPECT_EQ(plan->run_dir, "runs/geo-1");

  // Ports: picked for the schedulers left at 0, the recipe's own (9100) kept; all distinct.
  const PlannedProcess& global = plan->processes[0];
  const PlannedProcess& sched_a = plan->processes[3];
  const PlannedProcess& sched_b = plan->processes[7];
  EXPECT_EQ(sched_b.listens, "127.0.0.1:9100");
  std::set<std::string> listens = {global.listens, sched_a.listens, sched_b.listens};
  EXPECT_EQ(listens.size(), 3u);
  const std::string global_port = global.listens.substr(global.listens.find(':') + 1);
  const std::string port_a = sched_a.listens.substr(sched_a.listens.find(':') + 1);

  for (const PlannedProcess& p : plan->processes) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.argv[0], "/opt/geomx");
    EXPECT_EQ(p.spec.out_dir, "runs/geo-1");
    // Every process resolves the same recipe: the user's flags, then loopback hosts and the ports, then --out.
    EXPECT_TRUE(Contains(p.argv, {flags.recipe}));
    EXPECT_TRUE(Contains(p.argv, {"--set", "training.epochs=1"}));
    EXPECT_TRUE(Contains(p.argv, {"--set", "topology.central.host=127.0.0.1"}));
    EXPECT_TRUE(Contains(p.argv, {"--set", "topology.datacentres[0].host=127.0.0.1"}));
    EXPECT_FALSE(Contains(p.argv, {"--set", "topology.datacentres[1].host=127.0.0.1"}));  // already loopback
    EXPECT_TRUE(Contains(p.argv, {"--set", "topology.central.scheduler_port=" + global_port}));
    EXPECT_TRUE(Contains(p.argv, {"--set", "topology.datacentres[0].scheduler_port=" + port_a}));
    EXPECT_TRUE(Contains(p.argv, {"--set", "topology.datacentres[1].scheduler_port=9100"}));
    EXPECT_TRUE(Contains(p.argv, {"--out", "runs/geo-1"}));
  }
  EXPECT_TRUE(Contains(plan->processes[1].argv, {"serve", "--role", "global-server", flags.recipe, "--rank", "0"}));
  EXPECT_TRUE(
      Contains(plan->processes[9].argv, {"serve", "--role", "server", flags.recipe, "--party", "dc-b", "--rank", "1"}));
  EXPECT_TRUE(Contains(plan->processes[6].argv, {"train", flags.recipe, "--party", "dc-a", "--rank", "1"}));
  EXPECT_TRUE(Contains(plan->processes[11].argv, {"serve", "--role", "master-worker", flags.recipe, "--set"}));

  std::string text = FormatLocalTopologyPlan(*plan, *recipe);
  EXPECT_NE(text.find("processes: 12"), std::string::npos) << text;
  EXPECT_NE(text.find("dc-b/scheduler  (scheduler, listens on 127.0.0.1:9100)"), std::string::npos) << text;
  EXPECT_NE(text.find("'topology.datacentres[1].scheduler_port=9100'"), std::string::npos) << text;  // shell-quoted
  EXPECT_NE(text.find("run folder: runs/geo-1"), std::string::npos) << text;
}

TEST(LocalTopologyTest, DefaultRunFolderAndRecipeWithoutTopology) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "geo.yaml", kGeo);
  Result<Recipe> recipe = LoadRecipe((dir / "geo.yaml").string());
  ASSERT_TRUE(recipe.ok());
  Result<LocalTopologyPlan> plan = PlanLocalTopology(TrainFlags{}, *recipe, "/opt/geomx");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->run_dir.rfind("runs/geo-", 0), 0u) << plan->run_dir;
  Recipe solo;
  EXPECT_FALSE(PlanLocalTopology(TrainFlags{}, solo, "/opt/geomx").ok());
}

// The plan runs as planned: a stand-in executable prints its arguments, and the Launcher relays them prefixed.
TEST(LocalTopologyTest, LauncherRunsThePlan) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "geo.yaml", kGeo);
  const std::string fake = (dir / "fake-geomx").string();
  testing::WriteFile(fake, "#!/bin/sh\necho \"$@\"\n");
  ASSERT_EQ(chmod(fake.c_str(), 0755), 0);
  Result<Recipe> recipe = LoadRecipe((dir / "geo.yaml").string());
  ASSERT_TRUE(recipe.ok());
  Result<LocalTopologyPlan> plan = PlanLocalTopology(TrainFlags{}, *recipe, fake);
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> lines;
  Launcher launcher(LauncherOptions{.sink = [&](std::string_view l) { lines.emplace_back(l); }});
  ASSERT_TRUE(launcher.Start(ChildSpecsOf(*plan)).ok());
  ASSERT_TRUE(launcher.Wait(nullptr).ok());
  ASSERT_EQ(lines.size(), plan->processes.size());
  auto line_of = [&](const std::string& name) {
    for (const std::string& l : lines) {
      if (l.rfind("[" + name + "] ", 0) == 0) return l;
    }
    return std::string();
  };
  EXPECT_NE(line_of("dc-a/worker1").find("train " + recipe->source + " --party dc-a --rank 1 --set"),
            std::string::npos);
  EXPECT_NE(line_of("central/global-scheduler").find("serve --role global-scheduler"), std::string::npos);
}

}  // namespace
}  // namespace geomx::cli
