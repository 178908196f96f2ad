// The hook `geomx bench --netns` uses in cli/local_topology.cc: with TrainFlags::party_netns (the hidden
// `geomx train --party-netns PARTY=NS@IP` flag), every process of a party runs in that party's network namespace
// and the party's host is its namespace address.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "cli/local_topology.h"
#include "cli/recipe.h"
#include "cli/train_command.h"
#include "tests/testutil.h"

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
  TrainFlags flags;
  for (const char* value : {"central=n-c@10.203.1.1", "dc-a=n-d0@10.203.1.2", "dc-b=n-d1@10.203.2.2"}) {
    ASSERT_TRUE(ParsePartyNetns(value, &flags.party_netns).ok()) << value;
  }
  flags.out = "/tmp/x";
  auto plan = PlanLocalTopology(flags, TwoDc(), "/bin/geomx");
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

TEST(PartyNetns, WithoutTheFlagEverythingStaysOnLoopback) {
  TrainFlags flags;
  flags.out = "/tmp/x";
  auto plan = PlanLocalTopology(flags, TwoDc(), "/bin/geomx");
  ASSERT_TRUE(plan.ok());
  for (const PlannedProcess& p : plan->processes) {
    EXPECT_EQ(p.argv[0], "/bin/geomx");
    for (const std::string& a : p.argv) EXPECT_EQ(a.find("10.203."), std::string::npos);
  }
}

TEST(PartyNetns, FlagValuesParseAndFormatBack) {
  std::map<std::string, PartyNetns> m;
  ASSERT_TRUE(ParsePartyNetns("dc-a=gmx1-d0@10.203.1.2", &m).ok());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.at("dc-a").ns, "gmx1-d0");
  EXPECT_EQ(m.at("dc-a").ip, "10.203.1.2");
  EXPECT_EQ(FormatPartyNetns("dc-a", m.at("dc-a")), "dc-a=gmx1-d0@10.203.1.2");
  for (const char* bad : {"", "dc-a", "dc-a=ns", "=ns@1.2.3.4", "dc-a=@1.2.3.4", "dc-a=ns@", "dc-a@1.2.3.4=ns"}) {
    EXPECT_EQ(ParsePartyNetns(bad, &m).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(m.size(), 1u);
}

TEST(PartyNetns, TheHiddenTrainFlagReachesThePlan) {
  // --dry-run plans without starting anything; the namespaces show in each process's command line.
  testing::ScratchDir dir;
  testing::WriteFile(dir / "r.yaml",
                     "name: g\nmodel: {name: mlp, hidden: [8]}\ndata: {name: synthetic, synthetic_train: 64, "
                     "synthetic_test: 16}\ntopology:\n  central: {host: 127.0.0.1}\n  datacentres:\n"
                     "    - {name: dc-a, workers: 1}\n    - {name: dc-b, workers: 1}\n");
  testing::CommandResult r = testing::RunGeomx(
      "train r.yaml --dry-run --party-netns central=n-c@10.203.1.1 --party-netns dc-a=n-d0@10.203.1.2", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ip netns exec n-d0 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("topology.datacentres[0].host=10.203.1.2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ip netns exec n-d1"), std::string::npos) << r.output;
  r = testing::RunGeomx("train r.yaml --dry-run --party-netns dc-a", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("PARTY=NAMESPACE@IP"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace geomx::cli
