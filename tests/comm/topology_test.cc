#include "comm/topology.h"

#include <string>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

Topology TwoParties() {
  Topology t;
  t.datacentres = {DataCentre{.name = "dc-a"}, DataCentre{.name = "dc-b", .workers = 2, .servers = 2}};
  return t;
}

void ExpectError(const Topology& t, const std::string& fragment) {
  const Status s = t.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "wanted '" << fragment << "' in: " << s.message();
}

TEST(TopologyTest, ValidTopologies) {
  EXPECT_TRUE(TwoParties().Validate().ok());
  Topology t = TwoParties();
  t.global_scheduler_port = 9000;
  t.datacentres[0].scheduler_port = 9001;
  t.datacentres[1].scheduler_port = 9000;  // same port, another host
  t.datacentres[1].host = "10.0.0.2";
  EXPECT_TRUE(t.Validate().ok()) << t.Validate().ToString();
  EXPECT_EQ(t.total_workers(), 3);
}

TEST(TopologyTest, NoDataCentres) {
  Topology t;
  ExpectError(t, "topology.datacentres: at least one data centre is required");
}

TEST(TopologyTest, ZeroWorkersOrServers) {
  Topology t = TwoParties();
  t.datacentres[1].workers = 0;
  ExpectError(t, "topology.datacentres[1].workers: must be >= 1, got 0");
  t = TwoParties();
  t.datacentres[0].servers = -1;
  ExpectError(t, "topology.datacentres[0].servers: must be >= 1, got -1");
  t = TwoParties();
  t.global_servers = 0;
  ExpectError(t, "topology.global_servers: must be >= 1, got 0");
}

TEST(TopologyTest, Names) {
  Topology t = TwoParties();
  t.datacentres[1].name = "dc-a";
  ExpectError(t, "topology.datacentres[1].name: duplicate 'dc-a'");
  for (const char* bad : {"", "DC-A", "dc_a", "dc a", "dc/a", "ü"}) {
    t = TwoParties();
    t.datacentres[0].name = bad;
    ExpectError(t, "topology.datacentres[0].name: '" + std::string(bad) + "' must be non-empty");
  }
  t = TwoParties();
  t.datacentres[1].name = "central";
  ExpectError(t, "topology.datacentres[1].name: 'central' is reserved");
}

TEST(TopologyTest, PortClashesOnOneHost) {
  Topology t = TwoParties();
  t.datacentres[0].scheduler_port = 7000;
  t.datacentres[1].scheduler_port = 7000;
  ExpectError(t, "topology.datacentres[1].scheduler_port: port 7000 on 127.0.0.1 is already used by "
                 "topology.datacentres[0].scheduler_port");
  t = TwoParties();
  t.global_scheduler_port = 7001;
  t.datacentres[1].scheduler_port = 7001;
  ExpectError(t, "already used by topology.global_scheduler_port");
  t = TwoParties();
  t.datacentres[0].scheduler_port = 70000;
  ExpectError(t, "topology.datacentres[0].scheduler_port: must be in [1, 65535]");
}

TEST(TopologyTest, OptionsAndEveryErrorReported) {
  Topology t = TwoParties();
  t.options.wan.bandwidth_bps = -1;
  t.options.request_timeout_ms = 0;
  t.datacentres[0].workers = 0;
  const Status s = t.Validate();
  EXPECT_NE(s.message().find("topology.options.wan.bandwidth_bps"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("topology.options.request_timeout_ms"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("topology.datacentres[0].workers"), std::string::npos) << s.message();
}

// A data centre's uplink takes each field it does not set from the job's WAN link.
TEST(TopologyTest, UplinksInheritTheWanFieldsTheyDoNotSet) {
  Topology t = TwoParties();
  t.options.wan = {.bandwidth_bps = 50e6, .latency_s = 0.025, .loss = 0.01};
  t.datacentres[1].uplink.bandwidth_bps = 10e6;
  t.datacentres[1].uplink.loss = 0;
  ASSERT_TRUE(t.Validate().ok()) << t.Validate().ToString();
  const NetworkShape n = t.Network();
  EXPECT_EQ(n.Between("central", "dc-a").bandwidth_bps, 50e6);
  EXPECT_EQ(n.Between("central", "dc-a").loss, 0.01);
  EXPECT_EQ(n.Between("central", "dc-b").bandwidth_bps, 10e6);
  EXPECT_EQ(n.Between("central", "dc-b").latency_s, 0.025);
  EXPECT_EQ(n.Between("central", "dc-b").loss, 0);

  t.direct_links = {DirectLink{.from = "dc-b", .to = "dc-a", .link = {.bandwidth_bps = 1e9, .latency_s = 0.002}}};
  ASSERT_TRUE(t.Validate().ok()) << t.Validate().ToString();
  EXPECT_EQ(t.Network().Between("dc-a", "dc-b").latency_s, 0.002);
  t.direct_links.push_back(DirectLink{.from = "dc-a", .to = "dc-b"});
  t.direct_links.push_back(DirectLink{.from = "dc-a", .to = "dc-x"});
  t.direct_links.push_back(DirectLink{.from = "dc-a", .to = "dc-a"});
  ExpectError(t, "topology.links.direct[1]: a second link between dc-a and dc-b");
  ExpectError(t, "topology.links.direct[2].to: 'dc-x' is not a data centre of the topology");
  ExpectError(t, "topology.links.direct[3]: a direct link joins two different data centres");
  t.direct_links.clear();

  t.datacentres[0].uplink.loss = 1;
  t.datacentres[1].uplink.latency_s = -2;
  ExpectError(t, "topology.datacentres[0].uplink.loss: must be in [0, 1)");
  ExpectError(t, "topology.datacentres[1].uplink.latency_s: must be >= 0");
}

}  // namespace
}  // namespace geomx::comm
