// The hook `geomx bench --netns` uses in cli/local_topology.cc: with GEOMX_PARTY_NETNS set, every process of a
// party runs in that party's network namespace and the party's host is its namespace address.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "cli/local_topology.h"
#include "cli/recipe.h"

namespace geomx::cli {
namespace {

Recipe TwoDc() {
  auto r = ParseRecipe(
      "name: g\ndata: {name: synthetic}\ntopology:\n  central: {host: 127.0.0.1}\n  datacentres:\n"
      "    - {name: dc-a, workers: 1}\n    - {name: dc-b, workers: 1}\n",
      "t");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

bool HasArg(const std::vector<std::string>& argv, const std::string& a) {
  return std::find(argv.begin(), argv.end(), a) != argv.end();
}

TEST(PartyNetns, ProcessesRunInTheirPartysNamespaceWithItsAddress) {
  setenv("GEOMX_PARTY_NETNS", "central=n-c@10.203.1.1;dc-a=n-d0@10.203.1.2;dc-b=n-d1@10.203.2.2", 1);
  TrainFlags flags;
  flags.out = "/tmp/x";
  auto plan = PlanLocalTopology(flags, TwoDc(), "/bin/geomx");
  unsetenv("GEOMX_PARTY_NETNS");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  for (const PlannedProcess& p : plan->processes) {
    ASSERT_GE(p.argv.size(), 5u) << p.name;
    EXPECT_EQ(p.argv[0], "ip") << p.name;
    const std::string ns = p.spec.party == "central" ? "n-c" : p.spec.party == "dc-a" ? "n-d0" : "n-d1";
    EXPECT_EQ(p.argv[3], ns) << p.name;
    EXPECT_EQ(p.argv[4], "/bin/geomx") << p.name;
    EXPECT_TRUE(HasArg(p.argv, "topology.central.host=10.203.1.1")) << p.name;
    EXPECT_TRUE(HasArg(p.argv, "topology.datacentres[0].host=10.203.1.2")) << p.name;
    EXPECT_TRUE(HasArg(p.argv, "topology.datacentres[1].host=10.203.2.2")) << p.name;
  }
}

TEST(PartyNetns, WithoutTheVariableEverythingStaysOnLoopback) {
  unsetenv("GEOMX_PARTY_NETNS");
  TrainFlags flags;
  flags.out = "/tmp/x";
  auto plan = PlanLocalTopology(flags, TwoDc(), "/bin/geomx");
  ASSERT_TRUE(plan.ok());
  for (const PlannedProcess& p : plan->processes) {
    EXPECT_EQ(p.argv[0], "/bin/geomx");
    for (const std::string& a : p.argv) EXPECT_EQ(a.find("10.203."), std::string::npos);
  }
}

}  // namespace
}  // namespace geomx::cli
