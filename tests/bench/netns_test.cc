// Netns shaping of `geomx bench --netns`, with a fake command runner (no root needed): what Setup creates for a
// topology, that Teardown removes every namespace and process it created (also after a failure half-way, and
// when the shaper is destroyed), and that a second Teardown does nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>

#include "bench/netns.h"
#include "cli/recipe.h"

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
    return std::string();
  }
  Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string&) override {
    (void)Run(argv);
    const pid_t pid = 4000 + static_cast<pid_t>(log_->spawned.size());
    log_->spawned.push_back(pid);
    return pid;
  }
  void Kill(pid_t pid) override { log_->killed.push_back(pid); }

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
