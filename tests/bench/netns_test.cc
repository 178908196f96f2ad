// Netns shaping of `geomx bench --netns`, with a fake command runner (no root needed): what Setup creates for a
// topology, that Teardown removes every namespace and process it created (also after a failure half-way, and
// when the shaper is destroyed), and that a second Teardown does nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "bench/netns.h"
#include "cli/recipe.h"
#include "tests/testutil.h"

namespace geomx::bench {
namespace {

using cli::ParseRecipe;
using cli::Recipe;

struct Log {
  std::vector<std::string> commands;
  std::vector<pid_t> spawned, killed;
};

class FakeRunner final : public CommandRunner {
 public:
  FakeRunner(Log* log, std::string fail_on) : log_(log), fail_on_(std::move(fail_on)) {}
  Result<std::string> Run(const std::vector<std::string>& argv) override {
    std::string cmd;
    for (const std::string& a : argv) cmd.append(cmd.empty() ? "" : " ").append(a);
    log_->commands.push_back(cmd);
    if (!fail_on_.empty() && cmd.find(fail_on_) != std::string::npos) return Status::Internal(cmd + " failed");
    if (cmd.find("/statistics/") != std::string::npos) return std::string("1000\n");
    // The host's TCP congestion control is bbr; a namespace reports ns_cc (the kernel's inheritance).
    if (cmd.find("tcp_available_congestion_control") != std::string::npos) return std::string("reno bbr cubic\n");
    if (cmd.find("sysctl -n net.ipv4.tcp_congestion_control") != std::string::npos) {
      return cmd.rfind("ip netns exec", 0) == 0 ? ns_cc + "\n" : std::string("bbr\n");
    }
    return std::string();
  }
  Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string&) override {
    (void)Run(argv);
    const pid_t pid = 4000 + static_cast<pid_t>(log_->spawned.size());
    log_->spawned.push_back(pid);
    return pid;
  }
  void Kill(pid_t pid) override { log_->killed.push_back(pid); }
  std::string ns_cc = "cubic";

 private:
  Log* log_;
  std::string fail_on_;
};

Recipe Topology(const std::string& latency) {
  auto r = ParseRecipe(
      "name: g\ndata: {name: synthetic}\ntopology:\n  central: {host: 127.0.0.1}\n  datacentres:\n"
      "    - {name: dc-a, workers: 2}\n    - {name: dc-b, workers: 2}\n"
      "  links: {wan: {bandwidth: 50mbit, latency: " + latency + "}}\n",
      "t");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

size_t Count(const Log& log, const std::string& what) {
  return static_cast<size_t>(std::count_if(log.commands.begin(), log.commands.end(),
                                           [&](const std::string& c) { return c.find(what) != std::string::npos; }));
}

TEST(Netns, SetupWithoutLatencyUsesVethAndTbfAndTeardownDeletesEverything) {
  Log log;
  NetnsShaper s(std::make_unique<FakeRunner>(&log, ""), "gt1");
  ASSERT_TRUE(s.Setup(Topology("0"), "/usr/bin/python3", "/nonexistent").ok());
  EXPECT_EQ(Count(log, "ip netns add"), 3u);  // central + 2 data centres
  EXPECT_EQ(Count(log, "type veth"), 2u);
  EXPECT_EQ(Count(log, "tbf rate 50mbit"), 4u);  // both ends of both links
  EXPECT_EQ(s.parties().size(), 3u);
  EXPECT_EQ(s.parties().at("dc-a").ip, "10.203.1.2");
  EXPECT_EQ(s.parties().at("dc-b").ns, "gt1-d1");
  EXPECT_EQ(s.PartyNetnsArgs(),
            (std::vector<std::string>{"--party-netns", "central=gt1-c@10.203.1.1", "--party-netns",
                                      "dc-a=gt1-d0@10.203.1.2", "--party-netns", "dc-b=gt1-d1@10.203.2.2"}));
  EXPECT_EQ(s.WanBytes(), 4000u);  // tx + rx of two links
  ASSERT_TRUE(s.Teardown().ok());
  EXPECT_EQ(Count(log, "ip netns del gt1-c"), 1u);
  EXPECT_EQ(Count(log, "ip netns del gt1-d0"), 1u);
  EXPECT_EQ(Count(log, "ip netns del gt1-d1"), 1u);
  EXPECT_TRUE(s.created().empty());
  const size_t before = log.commands.size();
  ASSERT_TRUE(s.Teardown().ok());  // idempotent
  EXPECT_EQ(log.commands.size(), before);
}

TEST(Netns, LatencyStartsADelayLinePerLinkAndTeardownStopsThem) {
  Log log;
  {
    NetnsShaper s(std::make_unique<FakeRunner>(&log, ""), "gt2");
    ASSERT_TRUE(s.Setup(Topology("25ms"), "/usr/bin/python3", "/proc/self/exe").ok());
    EXPECT_EQ(log.spawned.size(), 2u);
    EXPECT_EQ(Count(log, "type veth"), 0u);
    EXPECT_EQ(Count(log, "0.025000"), 2u);
  }  // the destructor tears down
  EXPECT_EQ(log.killed, (std::vector<pid_t>{4001, 4000}));
  EXPECT_EQ(Count(log, "ip netns del"), 3u);
}

// GEO-3-HET-like: dc-c has its own slow, far uplink, dc-b a lossy one (veth cannot drop packets: a delay line
// with no delay), and dc-b and dc-c share a direct link with host routes to each other's party address.
TEST(Netns, UnevenLossyUplinksAndADirectLink) {
  auto r = ParseRecipe(
      "name: g\ndata: {name: synthetic}\ntopology:\n  central: {host: 127.0.0.1}\n  datacentres:\n"
      "    - {name: dc-a, workers: 1}\n    - {name: dc-b, workers: 1, loss: 2%, latency: 0}\n"
      "    - {name: dc-c, workers: 1, bandwidth: 10mbit, latency: 80ms}\n"
      "  links:\n    wan: {bandwidth: 50mbit, latency: 25ms}\n"
      "    direct: [{from: dc-b, to: dc-c, bandwidth: 1gbit}]\n",
      "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Log log;
  NetnsShaper s(std::make_unique<FakeRunner>(&log, ""), "gt5");
  ASSERT_TRUE(s.Setup(*r, "/usr/bin/python3", "/proc/self/exe").ok());
  EXPECT_EQ(log.spawned.size(), 3u);  // the three uplinks; the direct link has neither latency nor loss: veth
  EXPECT_EQ(Count(log, "/proc/self/exe gt5c0 gt5d0 0.025000 0.000000"), 1u);
  EXPECT_EQ(Count(log, "/proc/self/exe gt5c1 gt5d1 0.000000 0.020000"), 1u);
  EXPECT_EQ(Count(log, "/proc/self/exe gt5c2 gt5d2 0.080000 0.000000"), 1u);
  EXPECT_EQ(Count(log, "ip link add gt5x0 type veth peer name gt5y0"), 1u);
  EXPECT_EQ(Count(log, "tbf rate 50mbit"), 4u);  // both ends of dc-a's and dc-b's uplinks
  EXPECT_EQ(Count(log, "tbf rate 10mbit"), 2u);
  EXPECT_EQ(Count(log, "tbf rate 1gbit"), 2u);
  EXPECT_EQ(Count(log, "ip -n gt5-d1 route add 10.203.3.2/32 via 10.204.1.2"), 1u);
  EXPECT_EQ(Count(log, "ip -n gt5-d2 route add 10.203.2.2/32 via 10.204.1.1"), 1u);
  EXPECT_EQ(s.WanBytes(), 8000u);  // tx + rx of four links
  ASSERT_TRUE(s.Teardown().ok());
  EXPECT_EQ(log.killed.size(), 3u);
  EXPECT_EQ(Count(log, "ip link del gt5x0"), 1u);
}

// Under --netns the processes must not shape the links again: every WAN-side link of the recipe is zeroed by the
// overrides, and applied to the recipe they leave no emulated link between parties (LAN untouched).
TEST(Netns, InProcessEmulationOfEveryWanLinkIsSwitchedOff) {
  auto r = ParseRecipe(
      "name: g\ndata: {name: synthetic}\ntopology:\n  datacentres:\n"
      "    - {name: dc-a, workers: 1, loss: 2%}\n    - {name: dc-b, workers: 1, bandwidth: 10mbit, latency: 80ms}\n"
      "  links:\n    wan: {bandwidth: 50mbit, latency: 25ms, loss: 1%}\n    lan: {latency: 1ms}\n"
      "    direct: [{from: dc-a, to: dc-b, latency: 2ms}]\n",
      "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<std::string> off = InProcessWanOff(*r);
  auto applied = ParseRecipe(cli::RecipeToYaml(*r), "t", off);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  const comm::NetworkShape n = applied->topology.Network();
  for (const auto& [a, b] : {std::pair{"central", "dc-a"}, std::pair{"central", "dc-b"}, std::pair{"dc-a", "dc-b"}}) {
    const comm::LinkOptions link = n.Between(a, b);
    EXPECT_EQ(link.bandwidth_bps, 0) << a << "-" << b;
    EXPECT_EQ(link.latency_s, 0) << a << "-" << b;
    EXPECT_EQ(link.loss, 0) << a << "-" << b;
  }
  EXPECT_EQ(n.lan.latency_s, 0.001);
}

size_t IndexOf(const Log& log, const std::string& cmd, bool last = false) {
  size_t found = log.commands.size();
  for (size_t i = 0; i < log.commands.size(); ++i) {
    if (log.commands[i].find(cmd) == std::string::npos) continue;
    found = i;
    if (!last) break;
  }
  return found;
}

// --tcp-cc: the host's default is switched while the namespaces are created and put back at once; each
// namespace's value is checked; a name the kernel does not offer creates nothing; a failure half-way still puts
// the host's value back.
TEST(Netns, TcpCongestionControlIsSetWhileTheNamespacesAreCreated) {
  Log log;
  {
    NetnsShaper s(std::make_unique<FakeRunner>(&log, ""), "gc1");
    ASSERT_TRUE(s.Setup(Topology("0"), "/usr/bin/python3", "/nonexistent", "cubic").ok());
    const size_t set = IndexOf(log, "sysctl -qw net.ipv4.tcp_congestion_control=cubic");
    const size_t restore = IndexOf(log, "sysctl -qw net.ipv4.tcp_congestion_control=bbr");
    ASSERT_LT(set, log.commands.size());
    ASSERT_LT(restore, log.commands.size());
    EXPECT_LT(set, IndexOf(log, "ip netns add"));
    EXPECT_GT(restore, IndexOf(log, "ip netns add", /*last=*/true));
    for (const char* ns : {"gc1-c", "gc1-d0", "gc1-d1"}) {
      EXPECT_EQ(Count(log, std::string("ip netns exec ") + ns + " sysctl -n net.ipv4.tcp_congestion_control"), 1u)
          << ns;
    }
    (void)s.Teardown();
    EXPECT_EQ(Count(log, "net.ipv4.tcp_congestion_control=bbr"), 1u);  // nothing left to restore
  }
  Log refused;
  NetnsShaper v(std::make_unique<FakeRunner>(&refused, ""), "gc2");
  Status st = v.Setup(Topology("0"), "/usr/bin/python3", "/nonexistent", "vegas");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("reno bbr cubic"), std::string::npos) << st.ToString();
  EXPECT_EQ(Count(refused, "ip netns add"), 0u);
  EXPECT_EQ(Count(refused, "sysctl -qw"), 0u);

  Log half;
  NetnsShaper h(std::make_unique<FakeRunner>(&half, "ip netns add gc3-d1"), "gc3");
  EXPECT_FALSE(h.Setup(Topology("0"), "/usr/bin/python3", "/nonexistent", "cubic").ok());
  (void)h.Teardown();
  EXPECT_EQ(Count(half, "sysctl -qw net.ipv4.tcp_congestion_control=bbr"), 1u);

  Log other;
  auto runner = std::make_unique<FakeRunner>(&other, "");
  runner->ns_cc = "bbr";  // a kernel whose new namespaces do not take the host's default
  NetnsShaper o(std::move(runner), "gc4");
  st = o.Setup(Topology("0"), "/usr/bin/python3", "/nonexistent", "cubic");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("uses bbr"), std::string::npos) << st.ToString();
}

TEST(Netns, FailureHalfWayLeavesNothingBehindAfterTeardown) {
  Log log;
  NetnsShaper s(std::make_unique<FakeRunner>(&log, "ip netns add gt3-d1"), "gt3");
  EXPECT_FALSE(s.Setup(Topology("0"), "/usr/bin/python3", "/nonexistent").ok());
  (void)s.Teardown();
  // Created before the failure: gt3-c and gt3-d0 (and the first link); each is deleted.
  EXPECT_EQ(Count(log, "ip netns del gt3-c"), 1u);
  EXPECT_EQ(Count(log, "ip netns del gt3-d0"), 1u);
  EXPECT_EQ(Count(log, "ip link del gt3c0"), 1u);
  EXPECT_EQ(Count(log, "ip netns del gt3-d1"), 0u);  // never created
}

// The real thing (root, /dev/net/tun, ip, python3; skipped otherwise): UDP echoes between the namespaces Setup
// creates see each link's loss and delay, and data centres joined by a direct link reach each other over it.
//   central -- dc-a: 20% loss each way, no delay   -> about 0.8 * 0.8 = 64% of the echoes come back, quickly
//   central -- dc-b: 40 ms one way, lossless        -> all come back after >= 80 ms
//   dc-a -- dc-b: direct, 5 ms one way, lossless    -> all come back after ~10 ms (not 80 ms via the central party)
TEST(NetnsReal, LossDelayAndDirectLinksAsConfigured) {
  if (geteuid() != 0 || !NetnsShaper::CheckCanRun().ok() || !std::filesystem::exists("/dev/net/tun") ||
      !std::filesystem::exists("/usr/bin/python3")) {
    GTEST_SKIP() << "needs root, ip, tc, /dev/net/tun and python3";
  }
  auto r = ParseRecipe(
      "name: g\ndata: {name: synthetic}\ntopology:\n  central: {host: 127.0.0.1}\n  datacentres:\n"
      "    - {name: dc-a, workers: 1, loss: 20%}\n    - {name: dc-b, workers: 1, latency: 40ms}\n"
      "  links:\n    wan: {bandwidth: 0, latency: 0}\n    direct: [{from: dc-a, to: dc-b, latency: 5ms}]\n",
      "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  NetnsShaper s(SystemCommandRunner(), "gmx" + std::to_string(getpid()));
  const Status setup = s.Setup(*r, "/usr/bin/python3", (testing::SourceDir() / "bench/peers/delay_line.py").string());
  ASSERT_TRUE(setup.ok()) << setup.ToString();
  auto runner = SystemCommandRunner();
  const auto& p = s.parties();
  // An echo server in `to`'s namespace; `count` probes from `from`'s; prints "<replies> <median rtt ms>".
  auto probe = [&](const std::string& from, const std::string& to, int count) -> std::pair<int, double> {
    Result<pid_t> server = runner->Spawn(
        {"ip", "netns", "exec", p.at(to).ns, "/usr/bin/python3", "-c",
         "import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(('" + p.at(to).ip +
             "',9999))\nprint('ready',flush=True)\nwhile True:\n d,a=s.recvfrom(64)\n s.sendto(d,a)\n"},
        "ready");
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return {-1, 0};
    Result<std::string> out = runner->Run(
        {"ip", "netns", "exec", p.at(from).ns, "/usr/bin/python3", "-c",
         "import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.settimeout(0.15)\nok=0\n"
         "rtts=[]\nfor i in range(" + std::to_string(count) + "):\n t=time.monotonic()\n"
         " s.sendto(str(i).encode(),('" + p.at(to).ip + "',9999))\n try:\n"
         "  while s.recvfrom(64)[0]!=str(i).encode(): pass\n  ok+=1\n  rtts.append(time.monotonic()-t)\n"
         " except socket.timeout: pass\nrtts.sort()\nprint(ok, 1000*rtts[len(rtts)//2] if rtts else 0)\n"});
    runner->Kill(*server);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return {-1, 0};
    std::pair<int, double> result;
    std::sscanf(out->c_str(), "%d %lf", &result.first, &result.second);
    return result;
  };
  const auto [lossy, lossy_rtt] = probe("central", "dc-a", 150);
  EXPECT_GE(lossy, 70);   // 96 expected; 0.64 +- 4 standard deviations
  EXPECT_LE(lossy, 120);
  EXPECT_LT(lossy_rtt, 40);
  const auto [far, far_rtt] = probe("central", "dc-b", 20);
  EXPECT_EQ(far, 20);
  EXPECT_GE(far_rtt, 78);
  const auto [direct, direct_rtt] = probe("dc-a", "dc-b", 20);
  EXPECT_EQ(direct, 20);
  EXPECT_GE(direct_rtt, 9);
  EXPECT_LT(direct_rtt, 60);  // not through the central party (80 ms and 20% loss)
  std::printf("echoes: central-dc-a %d/150 (median %.1f ms), central-dc-b %d/20 (%.1f ms), dc-a-dc-b %d/20 (%.1f ms)\n",
              lossy, lossy_rtt, far, far_rtt, direct, direct_rtt);
  EXPECT_TRUE(s.Teardown().ok());
}

TEST(Netns, RefusesWithoutRoot) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root";
  const Status st = NetnsShaper::CheckCanRun();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("needs root"), std::string::npos);
}

}  // namespace
}  // namespace geomx::bench

namespace geomx::bench {
namespace {

class ListRunner final : public CommandRunner {
 public:
  explicit ListRunner(std::string list) : list_(std::move(list)) {}
  Result<std::string> Run(const std::vector<std::string>& argv) override {
    if (argv.size() == 3 && argv[2] == "list") return list_;
    deleted.push_back(argv.back());
    return std::string();
  }
  Result<pid_t> Spawn(const std::vector<std::string>&, const std::string&) override { return 1; }
  void Kill(pid_t) override {}
  std::vector<std::string> deleted;

 private:
  std::string list_;
};

TEST(Netns, RemovesOnlyNamespacesOfDeadHarnesses) {
  const std::string mine = "gmx" + std::to_string(getpid());
  // 2^22 + 1 exceeds the largest pid Linux hands out, so that harness is surely gone.
  ListRunner r(mine + "-c (id: 0)\ngmx4194305-d0 (id: 3)\nother-ns\ngmxabc-c\n");
  const auto removed = NetnsShaper::RemoveStale(&r);
  EXPECT_EQ(removed, (std::vector<std::string>{"gmx4194305-d0"}));
  EXPECT_EQ(r.deleted, (std::vector<std::string>{"gmx4194305-d0"}));
}

}  // namespace
}  // namespace geomx::bench
