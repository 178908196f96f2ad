#include "comm/network_shape.h"

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

NetworkShape ThreeDataCentres() {
  NetworkShape n;
  n.lan = {.bandwidth_bps = 10e9, .latency_s = 0.0001, .loss = 0};
  n.wan = {.bandwidth_bps = 50e6, .latency_s = 0.025, .loss = 0.01};
  n.uplinks["dc-c"] = {.bandwidth_bps = 10e6, .latency_s = 0.08, .loss = 0.02};
  return n;
}

TEST(NetworkShapeTest, LinksBetweenParties) {
  const NetworkShape n = ThreeDataCentres();
  EXPECT_EQ(n.Between("dc-a", "dc-a").bandwidth_bps, 10e9);
  EXPECT_EQ(n.Between("central", "central").latency_s, 0.0001);
  EXPECT_EQ(n.Between("central", "dc-a").latency_s, 0.025);
  EXPECT_EQ(n.Between("dc-b", "central").bandwidth_bps, 50e6);
  EXPECT_EQ(n.Between("central", "dc-c").bandwidth_bps, 10e6);
  EXPECT_EQ(n.Between("dc-c", "central").latency_s, 0.08);
  // Between data centres: through the central party.
  const LinkOptions ac = n.Between("dc-a", "dc-c");
  EXPECT_DOUBLE_EQ(ac.latency_s, 0.105);
  EXPECT_EQ(ac.bandwidth_bps, 10e6);
  EXPECT_DOUBLE_EQ(ac.loss, 1 - 0.99 * 0.98);  // 0.0298
  const LinkOptions ca = n.Between("dc-c", "dc-a");
  EXPECT_DOUBLE_EQ(ca.latency_s, ac.latency_s);
  EXPECT_DOUBLE_EQ(n.Between("dc-a", "dc-b").latency_s, 0.05);
  // A direct link replaces the path through the central party, in both directions.
  NetworkShape d = n;
  d.direct[NetworkShape::Pair("dc-c", "dc-b")] = {.bandwidth_bps = 1e9, .latency_s = 0.002, .loss = 0};
  EXPECT_EQ(d.Between("dc-b", "dc-c").latency_s, 0.002);
  EXPECT_EQ(d.Between("dc-c", "dc-b").bandwidth_bps, 1e9);
  EXPECT_DOUBLE_EQ(d.Between("dc-a", "dc-c").latency_s, 0.105);
  // Unknown party: the default WAN.
  EXPECT_EQ(n.Between("", "dc-c").latency_s, 0.025);
}

TEST(NetworkShapeTest, ChainKeepsTheLimitedBandwidth) {
  const LinkOptions unlimited{.bandwidth_bps = 0, .latency_s = 0.01, .loss = 0};
  const LinkOptions slow{.bandwidth_bps = 1e6, .latency_s = 0.02, .loss = 0.5};
  EXPECT_EQ(Chain(unlimited, slow).bandwidth_bps, 1e6);
  EXPECT_EQ(Chain(slow, unlimited).bandwidth_bps, 1e6);
  EXPECT_EQ(Chain(unlimited, unlimited).bandwidth_bps, 0);
  EXPECT_DOUBLE_EQ(Chain(slow, slow).loss, 0.75);
  EXPECT_DOUBLE_EQ(Chain(slow, unlimited).latency_s, 0.03);
}

TEST(NetworkShapeTest, PartyOfNodeName) {
  EXPECT_EQ(PartyOfNode("dc-a/worker1"), "dc-a");
  EXPECT_EQ(PartyOfNode("dc-b/server0@global"), "dc-b");
  EXPECT_EQ(PartyOfNode("central/global-scheduler"), "central");
  EXPECT_EQ(PartyOfNode("worker1"), "");
  EXPECT_EQ(PartyOfNode(""), "");
}

}  // namespace
}  // namespace geomx::comm
