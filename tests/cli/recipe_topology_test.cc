// The recipe's `topology` section and optimizer.where (cli/recipe.h, cli/topology_rules.h): parsing, the resolved
// YAML, errors with their positions, and --set on items of the data-centre list.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/recipe.h"
#include "cli/recipe_schema.h"
#include "tests/cli/recipe_test_util.h"
#include "cli/topology_rules.h"

namespace geomx::cli {
namespace {

using recipe_testing::ErrorLines;
using recipe_testing::Lines;
using recipe_testing::MustParse;

constexpr char kTwoDcs[] = R"(topology:
  central: {host: 127.0.0.1, global_servers: 1}
  datacentres:
    - {name: dc-a, workers: 2, servers: 1}
    - {name: dc-b, workers: 2, servers: 1}
  links:
    wan: {bandwidth: 50mbit, latency: 25ms}
)";

TEST(TopologyTest, ParsesTwoDataCentres) {
  Recipe r = MustParse(kTwoDcs);
  ASSERT_TRUE(r.has_topology);
  const comm::Topology& t = r.topology;
  EXPECT_EQ(t.central_host, "127.0.0.1");
  EXPECT_EQ(t.global_servers, 1);
  EXPECT_EQ(t.global_scheduler_port, 0);
  ASSERT_EQ(t.datacentres.size(), 2u);
  EXPECT_EQ(t.datacentres[1].name, "dc-b");
  EXPECT_EQ(t.datacentres[1].host, "127.0.0.1");  // default of an item key
  EXPECT_EQ(t.datacentres[1].workers, 2);
  EXPECT_EQ(t.options.wan.bandwidth_bps, 50e6);
  EXPECT_DOUBLE_EQ(t.options.wan.latency_s, 0.025);
  EXPECT_EQ(t.options.lan.bandwidth_bps, 0);  // not shaped
  comm::CommOptions defaults;
  EXPECT_EQ(t.options.rendezvous_timeout_ms, defaults.rendezvous_timeout_ms);
  EXPECT_TRUE(t.Validate().ok());
}

TEST(TopologyTest, NoSectionMeansOneProcess) {
  Recipe r = MustParse("name: x\n");
  EXPECT_FALSE(r.has_topology);
  EXPECT_TRUE(r.topology.datacentres.empty());
  EXPECT_EQ(RecipeToYaml(r).find("topology"), std::string::npos);
}

TEST(TopologyTest, ResolvedYamlPrintsTheDataCentresAsABlockList) {
  std::string yaml = RecipeToYaml(MustParse(kTwoDcs));
  EXPECT_NE(yaml.find("topology:\n  central:\n    host: 127.0.0.1\n    global_servers: 1\n    scheduler_port: 0\n"
                      "    state_server_port: 0\n"
                      "  datacentres:\n    - name: dc-a\n      host: 127.0.0.1\n      workers: 2\n      servers: 1\n"
                      "      scheduler_port: 0\n      slowdown: 1\n      bandwidth: wan\n      latency: wan\n"
                      "      loss: wan\n"
                      "    - name: dc-b\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("  links:\n    wan:\n      bandwidth: 50mbit\n      latency: 25ms\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  timeouts:\n    rendezvous: 60s\n    request: 120s\n    heartbeat_interval: 2s\n"
                      "    heartbeat_timeout: 30s\n"),
            std::string::npos)
      << yaml;
  Recipe again = MustParse(yaml);
  EXPECT_EQ(RecipeToYaml(again), yaml);
  // An empty list prints in flow style, and reads back as the same (invalid) recipe.
  Recipe empty = MustParse(kTwoDcs);
  empty.topology.datacentres.clear();
  EXPECT_NE(RecipeToYaml(empty).find("  datacentres: []\n"), std::string::npos);
}

TEST(TopologyTest, RecipeLevelErrorsHaveTheirPositions) {
  EXPECT_EQ(ErrorLines("topology:\n  datacentres:\n    - {name: dc-a, workers: 0}\n"),
            Lines{"r.yaml:3:29: topology.datacentres[0].workers: must be in [1, 4096], got 0"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres:\n    - {name: dc-a}\n    - {name: dc-a}\n"),
            Lines{"r.yaml:4:14: topology.datacentres[1].name: duplicate data centre name 'dc-a' (also "
                  "topology.datacentres[0].name)"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres:\n    - {workers: 2}\n"),
            Lines{"r.yaml:3:7: topology.datacentres[0].name: every data centre needs a name (its --party), e.g. "
                  "{name: dc-a}"});
  EXPECT_EQ(ErrorLines("topology:\n  central: {host: 127.0.0.1}\n"),
            Lines{"r.yaml:1:1: topology.datacentres: needs at least one data centre, e.g. datacentres: [{name: "
                  "dc-a, workers: 2, servers: 1}]"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres: []\n"),
            Lines{"r.yaml:2:16: topology.datacentres: needs at least one data centre, e.g. datacentres: [{name: "
                  "dc-a, workers: 2, servers: 1}]"});
  EXPECT_EQ(ErrorLines("topology:\n"), Lines{"r.yaml:1:1: topology.datacentres: needs at least one data centre, "
                                             "e.g. datacentres: [{name: dc-a, workers: 2, servers: 1}]"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres:\n    - {name: DC_A}\n    - {name: central}\n"),
            Lines({"r.yaml:3:14: topology.datacentres[0].name: 'DC_A' may only contain lower-case letters, digits "
                   "and '-' (it is the --party name)",
                   "r.yaml:4:14: topology.datacentres[1].name: 'central' names the central party (global scheduler "
                   "and servers); pick another name"}));
}

TEST(TopologyTest, PortClashes) {
  const char* clash = R"(topology:
  central: {scheduler_port: 9000}
  datacentres:
    - {name: dc-a, scheduler_port: 9100}
    - {name: dc-b, scheduler_port: 9000}
    - {name: dc-c, scheduler_port: 9100}
)";
  EXPECT_EQ(ErrorLines(clash),
            Lines({"r.yaml:5:36: topology.datacentres[1].scheduler_port: port 9000 on 127.0.0.1 is already taken by "
                   "topology.central.scheduler_port",
                   "r.yaml:6:36: topology.datacentres[2].scheduler_port: port 9100 on 127.0.0.1 is already taken by "
                   "topology.datacentres[0].scheduler_port"}));
  // The same port on different hosts, and ports left at 0, are fine.
  MustParse(
      "topology:\n  central: {host: 10.0.0.1, scheduler_port: 9000}\n  datacentres:\n"
      "    - {name: dc-a, host: 10.0.0.2, scheduler_port: 9000}\n    - {name: dc-b}\n    - {name: dc-c}\n");
  EXPECT_EQ(ErrorLines("topology:\n  central: {scheduler_port: 70000}\n  datacentres: [{name: a}]\n"),
            Lines{"r.yaml:2:29: topology.central.scheduler_port: must be in [0, 65535], got 70000"});
  // A clash made by --set names the flag.
  EXPECT_EQ(
      ErrorLines(kTwoDcs, {"topology.central.scheduler_port=9000", "topology.datacentres[1].scheduler_port=9000"}),
      Lines{"--set topology.datacentres[1].scheduler_port=9000: topology.datacentres[1].scheduler_port: port "
            "9000 on 127.0.0.1 is already taken by topology.central.scheduler_port"});
}

TEST(TopologyTest, BandwidthAndDurationErrors) {
  auto wan = [](const std::string& bandwidth, const std::string& latency) {
    return std::string("topology:\n  datacentres: [{name: a}]\n  links:\n    wan:\n      bandwidth: ") + bandwidth +
           "\n      latency: " + latency + "\n";
  };
  EXPECT_EQ(ErrorLines(wan("fast", "25ms")),
            Lines{"r.yaml:5:18: topology.links.wan.bandwidth: expected a bandwidth such as 50mbit, 1gbit or 800kbit "
                  "(bits per second), got 'fast'"});
  EXPECT_EQ(ErrorLines(wan("100mbps", "25ms")),
            Lines{"r.yaml:5:18: topology.links.wan.bandwidth: ambiguous unit 'mbps' in '100mbps': write bits per "
                  "second, e.g. 100mbit (tc reads 'mbps' as bytes per second, that is 800mbit)"});
  EXPECT_EQ(ErrorLines(wan("50 furlongs", "25ms")),
            Lines{"r.yaml:5:18: topology.links.wan.bandwidth: unknown bandwidth unit 'furlongs' in '50 furlongs' (use "
                  "bit, kbit, mbit or gbit: bits per second)"});
  EXPECT_EQ(ErrorLines(wan("-5mbit", "25ms")),
            Lines{"r.yaml:5:18: topology.links.wan.bandwidth: must be >= 0 (0 = unlimited), got -5mbit"});
  EXPECT_EQ(ErrorLines(wan("50mbit", "25")),
            Lines{"r.yaml:6:16: topology.links.wan.latency: a duration needs a unit: 25ms or 25s? (us, ms, s, min, "
                  "h)"});
  EXPECT_EQ(ErrorLines(wan("50mbit", "2 sec")),
            Lines{"r.yaml:6:16: topology.links.wan.latency: unknown duration unit 'sec' in '2 sec' (did you mean "
                  "'s'?) (use us, ms, s, min or h)"});
  EXPECT_EQ(ErrorLines(wan("[50]", "25ms")),
            Lines{"r.yaml:5:18: topology.links.wan.bandwidth: expected a bandwidth such as 50mbit, got a list"});
  // Quoting is fine for values with units; a timeout must be whole milliseconds and positive.
  EXPECT_EQ(MustParse(wan("\"1.5gbit\"", "'0.5ms'")).topology.options.wan.bandwidth_bps, 1.5e9);
  EXPECT_EQ(ErrorLines(kTwoDcs, {"topology.timeouts.request=100us", "topology.timeouts.rendezvous=0"}),
            Lines({"--set topology.timeouts.request=100us: topology.timeouts.request: must be a whole number of "
                   "milliseconds, got 100us",
                   "--set topology.timeouts.rendezvous=0: topology.timeouts.rendezvous: must be > 0, got 0"}));
  EXPECT_EQ(ErrorLines(kTwoDcs, {"topology.timeouts.heartbeat_interval=10s", "topology.timeouts.heartbeat_timeout=5s"}),
            Lines{"--set topology.timeouts.heartbeat_timeout=5s: topology.timeouts.heartbeat_timeout: must be longer "
                  "than topology.timeouts.heartbeat_interval (10s), got 5s"});
  EXPECT_EQ(MustParse(kTwoDcs, {"topology.timeouts.heartbeat_interval=0", "topology.timeouts.heartbeat_timeout=1s"})
                .topology.options.heartbeat_interval_ms,
            0);
}

TEST(TopologyTest, UnknownKeysAndShapes) {
  EXPECT_EQ(ErrorLines("topology:\n  datacenters: [{name: a}]\n"),
            Lines({"r.yaml:1:1: topology.datacentres: needs at least one data centre, e.g. datacentres: [{name: "
                   "dc-a, workers: 2, servers: 1}]",
                   "r.yaml:2:3: topology.datacenters: unknown key (did you mean 'datacentres'?)"}));
  EXPECT_EQ(ErrorLines("topology:\n  datacentres:\n    - {name: a, wrokers: 2, port: 9000}\n"),
            Lines({"r.yaml:3:17: topology.datacentres[0].wrokers: unknown key (did you mean 'workers'?)",
                   "r.yaml:3:29: topology.datacentres[0].port: unknown key (did you mean 'scheduler_port'?)"}));
  EXPECT_EQ(ErrorLines("topology:\n  datacentres: {name: a}\n"),
            Lines{"r.yaml:2:16: topology.datacentres: expected a list of mappings, e.g. [{name: dc-a, workers: 2}, "
                  "{name: dc-b, workers: 2}], got a mapping"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres: [{name: a}]\n  links: {direct: {from: a}}\n"),
            Lines{"r.yaml:3:19: topology.links.direct: expected a list of mappings, e.g. [{from: dc-a, to: dc-b, "
                  "latency: 2ms}], got a mapping"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres: [{name: a, loss: lots}]\n"),
            Lines{"r.yaml:2:33: topology.datacentres[0].loss: expected a loss rate such as 2% or 0.02, got 'lots'"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres: [dc-a]\n"),
            Lines{"r.yaml:2:17: topology.datacentres[0]: expected a mapping of keys (name, host, workers, servers, "
                  "scheduler_port, slowdown, bandwidth, latency, loss), got 'dc-a'"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres:\n    - {name: a, name: b}\n"),
            Lines{"r.yaml:3:17: topology.datacentres[0].name: duplicate key (first given at line 3)"});
  EXPECT_EQ(ErrorLines("topology:\n  central: {port: 9000}\n  datacentres: [{name: a}]\n"),
            Lines{"r.yaml:2:13: topology.central.port: unknown key (did you mean 'scheduler_port'?)"});
}

TEST(TopologyTest, SetItemsOfTheDataCentreList) {
  Recipe r = MustParse(kTwoDcs, {"topology.datacentres[1].workers=4", "topology.datacentres[0].host=10.0.0.7"});
  EXPECT_EQ(r.topology.datacentres[1].workers, 4);
  EXPECT_EQ(r.topology.datacentres[0].host, "10.0.0.7");
  EXPECT_EQ(r.topology.datacentres[0].workers, 2);  // untouched
  // The whole list, in flow style.
  Recipe whole = MustParse(kTwoDcs, {"topology.datacentres=[{name: x, workers: 3}, {name: y}, {name: z}]"});
  ASSERT_EQ(whole.topology.datacentres.size(), 3u);
  EXPECT_EQ(whole.topology.datacentres[0].workers, 3);
  EXPECT_EQ(whole.topology.datacentres[2].name, "z");
  EXPECT_EQ(whole.topology.datacentres[2].workers, 1);  // a new item starts from the defaults
  // --set can give a recipe its topology.
  Recipe made = MustParse("name: x\n", {"topology.datacentres=[{name: dc-a}]"});
  EXPECT_TRUE(made.has_topology);
  EXPECT_EQ(
      ErrorLines(kTwoDcs, {"topology.datacentres[2].workers=3", "topology.datacentres[x].workers=3",
                           "topology.datacentres[0].wrkers=3", "topology.datacentres[0]=3",
                           "topology.datacentres[0].workers=many"}),
      Lines({"--set topology.datacentres[2].workers=3: topology.datacentres[2]: no such item: topology.datacentres has "
             "2 items (indices 0..1); to add one, set the whole list: --set 'topology.datacentres=[{name: dc-a, "
             "workers: 2}, {name: dc-b, workers: 2}]'",
             "--set topology.datacentres[x].workers=3: malformed index in 'topology.datacentres[x].workers'; expected "
             "e.g. topology.datacentres[1].workers=4",
             "--set topology.datacentres[0].wrkers=3: unknown key 'topology.datacentres[0].wrkers' (did you mean "
             "'topology.datacentres[0].workers'?)",
             "--set topology.datacentres[0]=3: topology.datacentres[0]: is one item; set one of its keys, e.g. --set "
             "topology.datacentres[0].name=..., or the whole list",
             "--set topology.datacentres[0].workers=many: topology.datacentres[0].workers: expected an integer, got "
             "'many'"}));
  EXPECT_EQ(ErrorLines("name: x\n", {"topology.central.global_servers=2"}),
            Lines{"--set topology.central.global_servers=2: topology.datacentres: needs at least one data centre, "
                  "e.g. datacentres: [{name: dc-a, workers: 2, servers: 1}]"});
}

TEST(TopologyTest, RulesSkipKeysThatAlreadyHaveErrors) {
  Recipe r = MustParse(kTwoDcs);
  r.topology.datacentres[1].name = "dc-a";
  EXPECT_EQ(CheckTopologyRules(r, [](const std::string&) { return false; }).size(), 1u);
  EXPECT_TRUE(CheckTopologyRules(r, [](const std::string& p) { return p == "topology.datacentres[1].name"; }).empty());
}

// Combinations of sync modes and accelerators that cannot work are refused with the key and the reason
// (cli/sync_rules.h); each message names the fix.
TEST(RecipeTest, SyncAndAcceleratorCombinationsAreChecked) {
  auto first = [](const std::vector<std::string>& lines) { return lines.empty() ? std::string() : lines[0]; };
  EXPECT_NE(first(ErrorLines("sync: {mode: mixed}\n")).find("sync.mode: 'mixed' synchronises data centres: it needs a "
                                                            "topology section"),
            std::string::npos);
  EXPECT_NE(first(ErrorLines("accelerators: {compression: fp16}\n")).find("accelerators: compression acts on"),
            std::string::npos);
  const std::string base = kTwoDcs;
  EXPECT_NE(first(ErrorLines(base + "accelerators: {compression: bsc}\n")).find(
                "accelerators.links.global_to_local: 'bsc' sends the sparse aggregate of gradients down"),
            std::string::npos);
  EXPECT_TRUE(ParseRecipe(base + "optimizer: {where: worker}\naccelerators: {compression: bsc}\n", "r.yaml").ok());
  EXPECT_NE(first(ErrorLines(base + "sync: {dcasgd: {lambda: 0.1}}\n")).find("sync.dcasgd.lambda: DC-ASGD"),
            std::string::npos);
  EXPECT_NE(first(ErrorLines(base + "sync: {mode: mixed}\noptimizer: {where: worker}\n")).find("optimizer.where:"),
            std::string::npos);
  EXPECT_NE(first(ErrorLines(base + "sync: {mode: hfa}\naccelerators: {compression: fp16}\n")).find(
                "accelerators.compression: sync.mode: hfa averages whole models"),
            std::string::npos);
  EXPECT_TRUE(ParseRecipe(base + "sync: {mode: hfa}\naccelerators: {compression: bsc}\n", "r.yaml").ok());
  // P3 composes with every sync mode (issue 12: it lives in the workers' send path); it used to need fsa.
  EXPECT_TRUE(ParseRecipe(base + "sync: {mode: mixed}\naccelerators: {p3: {enabled: true}}\n", "r.yaml").ok());
  EXPECT_NE(first(ErrorLines(base + "optimizer: {name: momentum, momentum: 0.9, where: worker}\n"
                                    "accelerators: {compression: bsc, bsc: {momentum: 0.9}}\n"))
                .find("would apply momentum twice"),
            std::string::npos);
  EXPECT_NE(first(ErrorLines(base + "sync: {max_staleness: -1}\n")).find("sync.max_staleness"), std::string::npos);
  EXPECT_NE(first(ErrorLines(base + "sync: {mode: hfa, k1: 0}\n")).find("sync.k1"), std::string::npos);
  EXPECT_NE(first(ErrorLines(base + "accelerators: {bsc: {ratio: 1.5}}\n")).find("accelerators.bsc.ratio"),
            std::string::npos);
}

TEST(RecipeTest, OptimizerWhere) {
  EXPECT_EQ(MustParse("optimizer: {where: worker}").optimizer_where, "worker");
  EXPECT_EQ(MustParse("name: run\n", {"optimizer.where=global-server"}).optimizer_where, "global-server");
  EXPECT_EQ(ErrorLines("optimizer:\n  where: server\n"),
            Lines{"r.yaml:2:10: optimizer.where: unknown placement 'server'; known: global-server, worker"});
}

}  // namespace
}  // namespace geomx::cli
