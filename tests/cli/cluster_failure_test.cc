// Failure detection across both tiers (issue 18): a node of a running 2 x 2 job "crashes" (its vans go silent in the
// middle of training, as a killed process's would) and every worker of the job must fail naming that node, within
// about one heartbeat timeout, not after the long request timeout or a chain of timeouts one tier at a time. Every
// role is a thread of this process over loopback vans (cluster_test_util.h).
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_test_util.h"

namespace geomx::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A van that dies: once the shared `dead` flag is set, it stops its inner van, sends nothing and receives nothing,
// like the sockets of a process killed with -9. The victim's vans set the flag themselves after `crash_after`
// sends, so the crash lands in the middle of training without timing guesses.
class CrashingVan : public comm::Van {
 public:
  CrashingVan(std::unique_ptr<comm::Van> inner, bool victim, int crash_after, std::atomic<bool>* dead,
              std::atomic<int64_t>* dead_at_ms)
      : inner_(std::move(inner)), victim_(victim), crash_after_(crash_after), dead_(dead), dead_at_ms_(dead_at_ms) {}

  Result<std::string> Bind(const std::string& address) override { return inner_->Bind(address); }
  Status Connect(int node_id, const std::string& endpoint, comm::LinkClass link,
                 const std::string& peer_name) override {
    return inner_->Connect(node_id, endpoint, link, peer_name);
  }
  Result<size_t> Send(int node_id, const comm::Message& msg) override {
    if (victim_ && ++sends_ == crash_after_) Kill();
    if (IsDead()) return Status::Cancelled("crashed");
    return inner_->Send(node_id, msg);
  }
  Status Recv(comm::Message* msg, int timeout_ms) override {
    if (IsDead()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms < 0 ? 10 : std::min(timeout_ms, 10)));
      return Status::Cancelled("crashed");
    }
    return inner_->Recv(msg, timeout_ms);
  }
  void Stop() override { inner_->Stop(); }

 private:
  bool IsDead() {
    if (!victim_ || !dead_->load()) return false;
    inner_->Stop();
    return true;
  }
  void Kill() {
    if (dead_->exchange(true)) return;
    dead_at_ms_->store(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count());
  }

  std::unique_ptr<comm::Van> inner_;
  const bool victim_;
  const int crash_after_;
  std::atomic<int> sends_{0};
  std::atomic<bool>* dead_;
  std::atomic<int64_t>* dead_at_ms_;
};

struct RoleResult {
  std::string role;
  Status status;
  int64_t ended_ms = 0;  // steady clock
};

// Every role of `r` as a thread (as cluster_testing::RunRoles), returning each role's status and end time.
std::vector<RoleResult> RunRolesCollecting(const Recipe& r, const ClusterEnv& env) {
  std::mutex mu;
  std::vector<std::thread> threads;
  std::vector<RoleResult> results;
  auto run = [&](std::string name, std::function<Status()> fn) {
    threads.emplace_back([&, name, fn] {
      Status s = fn();
      const int64_t now =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
      std::lock_guard<std::mutex> lock(mu);
      results.push_back({name, s, now});
    });
  };
  run("global-scheduler", [&] { return RunGlobalScheduler(r, env); });
  run("central/global-server0", [&] { return RunGlobalServer(r, 0, env); });
  run("master", [&] { return RunMasterWorker(r, env); });
  for (const auto& dc : r.topology.datacentres) {
    const std::string p = dc.name;
    run(p + "/scheduler", [&, p] { return RunScheduler(r, p, env); });
    run(p + "/server0", [&, p] { return RunLocalServer(r, p, 0, env); });
    for (int w = 0; w < dc.workers; ++w) {
      run(p + "/worker" + std::to_string(w), [&, p, w] { return RunWorker(r, p, w, env, nullptr); });
    }
  }
  for (auto& t : threads) t.join();
  return results;
}

struct Crash {
  std::string victim;  // node name prefix: its vans die (a local server has two: NAME and NAME@global)
  int crash_after;     // the victim's sends before it dies
};

class ClusterFailureTest : public ::testing::TestWithParam<Crash> {};

TEST_P(ClusterFailureTest, EveryWorkerNamesTheDeadNodeWithinTheHeartbeatTimeout) {
  const Crash crash = GetParam();
  Recipe r = cluster_testing::TwoByTwoRecipe("failure", /*epochs=*/100000);
  r.topology.options.heartbeat_interval_ms = 50;
  r.topology.options.heartbeat_timeout_ms = 1500;
  // Far longer than the heartbeat timeout: only failure detection (not a request timing out) may end the job.
  r.topology.options.request_timeout_ms = 600000;

  comm::LoopbackNetwork net;
  std::atomic<bool> dead{false};
  std::atomic<int64_t> dead_at_ms{0};
  ClusterEnv env = cluster_testing::InProcessEnv("loop", [&](const std::string& node) -> std::unique_ptr<comm::Van> {
    const bool victim = node == crash.victim || node == crash.victim + "@global";
    return std::make_unique<CrashingVan>(std::make_unique<comm::LoopbackVan>(&net), victim, crash.crash_after, &dead,
                                         &dead_at_ms);
  });
  const std::vector<RoleResult> results = RunRolesCollecting(r, env);
  ASSERT_TRUE(dead.load()) << "the victim never sent " << crash.crash_after << " messages";

  int workers = 0;
  for (const RoleResult& res : results) {
    if (res.role.find("/worker") == std::string::npos || res.role == crash.victim) continue;
    ++workers;
    EXPECT_FALSE(res.status.ok()) << res.role << " completed although " << crash.victim << " died";
    EXPECT_NE(res.status.message().find(crash.victim), std::string::npos)
        << res.role << " does not name " << crash.victim << ": " << res.status.ToString();
    EXPECT_NE(res.status.message().find("declared dead"), std::string::npos)
        << res.role << ": " << res.status.ToString();
    // Generous against a loaded machine, yet far below the request timeout (600 s) and below any chain of
    // timeouts across the two tiers.
    EXPECT_LT(res.ended_ms - dead_at_ms.load(), 30000) << res.role << " took too long to hear of the failure";
  }
  EXPECT_EQ(workers, crash.victim.find("/worker") == std::string::npos ? 4 : 3);
  for (const RoleResult& res : results) {
    if (res.role.find("scheduler") != std::string::npos) {
      EXPECT_EQ(res.status.code(), StatusCode::kUnavailable) << res.role << ": " << res.status.ToString();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Victims, ClusterFailureTest,
                         ::testing::Values(Crash{"central/global-server0", 200}, Crash{"dc-b/server0", 200},
                                           Crash{"dc-a/worker1", 60}),
                         [](const ::testing::TestParamInfo<Crash>& info) {
                           std::string n = info.param.victim;
                           for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

// A job under topology.failure_policy: continue over loopback vans, in which `victim`'s vans (a local server has
// two: NAME and NAME@global) die after `crash_after` sends; collects each role's end and each worker's weights.
struct ContinueRun {
  comm::LoopbackNetwork net;
  std::atomic<bool> dead{false};
  std::atomic<int64_t> dead_at_ms{0};
  std::mutex mu;
  std::map<std::string, cluster_testing::Weights> finals;

  std::vector<RoleResult> Run(Recipe r, const std::string& victim, int crash_after) {
    r.topology.failure_policy = "continue";
    r.topology.options.heartbeat_interval_ms = 50;
    r.topology.options.heartbeat_timeout_ms = 1500;
    r.topology.options.request_timeout_ms = 600000;
    ClusterEnv env = cluster_testing::InProcessEnv("loop", [&, victim, crash_after](const std::string& node) {
      const bool hit = node == victim || node == victim + "@global";
      return std::unique_ptr<comm::Van>(std::make_unique<CrashingVan>(std::make_unique<comm::LoopbackVan>(&net), hit,
                                                                      crash_after, &dead, &dead_at_ms));
    });
    env.on_worker_done = [&](const std::string& name, nn::Module& model) {
      std::lock_guard<std::mutex> lock(mu);
      finals[name] = cluster_testing::Snapshot(model);
    };
    return RunRolesCollecting(r, env);
  }
};

// topology.failure_policy: continue: dc-a/worker1 dies in the middle of training; dc-a goes on with worker0 alone
// (its server averages over the workers that pushed), the job completes, and the three survivors end with the
// same weights (FSA: every survivor applies the same update each round).
TEST(ClusterFailureTest, UnderContinueTheJobCompletesWithoutALostWorker) {
  ContinueRun run;
  const std::vector<RoleResult> results =
      run.Run(cluster_testing::TwoByTwoRecipe("continue", /*epochs=*/3), "dc-a/worker1", 30);
  ASSERT_TRUE(run.dead.load());
  auto& finals = run.finals;
  for (const RoleResult& res : results) {
    if (res.role == "dc-a/worker1") {
      EXPECT_FALSE(res.status.ok());
      continue;
    }
    EXPECT_TRUE(res.status.ok()) << res.role << ": " << res.status.ToString();
  }
  ASSERT_EQ(finals.count("dc-a/worker0") + finals.count("dc-b/worker0") + finals.count("dc-b/worker1"), 3u);
  EXPECT_EQ(finals["dc-a/worker0"], finals["dc-b/worker0"]) << "the survivors hold the same weights";
  EXPECT_EQ(finals["dc-b/worker0"], finals["dc-b/worker1"]);
}

// topology.failure_policy: continue also drops a whole data centre: dc-c's local server dies in the middle of
// training; the global tier goes on with dc-a and dc-b (the global server stops waiting for dc-c's pushes), dc-c's
// processes fail naming their server, and the four survivors complete with the same weights.
TEST(ClusterFailureTest, UnderContinueTheJobCompletesWithoutALostDataCentre) {
  Recipe r = cluster_testing::TwoByTwoRecipe("continue-dc", /*epochs=*/3);
  comm::DataCentre dc_c;
  dc_c.name = "dc-c";
  dc_c.workers = 1;
  dc_c.servers = 1;
  r.topology.datacentres.push_back(dc_c);
  ContinueRun run;
  const std::vector<RoleResult> results = run.Run(r, "dc-c/server0", 150);
  ASSERT_TRUE(run.dead.load()) << "dc-c/server0 never sent 150 messages";
  auto& finals = run.finals;
  for (const RoleResult& res : results) {
    if (res.role.rfind("dc-c/", 0) == 0) {
      EXPECT_FALSE(res.status.ok()) << res.role << " completed although its server died";
      if (res.role == "dc-c/worker0") {
        EXPECT_NE(res.status.message().find("dc-c/server0"), std::string::npos) << res.status.ToString();
      }
      continue;
    }
    EXPECT_TRUE(res.status.ok()) << res.role << ": " << res.status.ToString();
  }
  for (const char* w : {"dc-a/worker0", "dc-a/worker1", "dc-b/worker0", "dc-b/worker1"}) {
    ASSERT_EQ(finals.count(w), 1u) << w;
    EXPECT_EQ(finals[w], finals["dc-a/worker0"]) << w << " differs from dc-a/worker0";
  }
}

// The global tier fails when the last data centre would be lost: continue needs a data centre to go on with.
TEST(ClusterFailureTest, UnderContinueLosingEveryDataCentreFailsTheJob) {
  Recipe r = cluster_testing::TwoByTwoRecipe("continue-none", /*epochs=*/100000);
  r.topology.datacentres.resize(1);
  ContinueRun run;
  const std::vector<RoleResult> results = run.Run(r, "dc-a/server0", 150);
  ASSERT_TRUE(run.dead.load());
  for (const RoleResult& res : results) {
    if (res.role == "dc-a/server0") continue;
    EXPECT_FALSE(res.status.ok()) << res.role << " completed although no data centre was left";
  }
}

// A van whose data messages start failing after `fail_after` sends (control messages still go out): the worker
// using it fails with a send error, as on a broken disk or NIC, while its process is still alive to say so.
class FailingVan : public comm::Van {
 public:
  FailingVan(std::unique_ptr<comm::Van> inner, int fail_after) : inner_(std::move(inner)), fail_after_(fail_after) {}
  Result<std::string> Bind(const std::string& address) override { return inner_->Bind(address); }
  Status Connect(int node_id, const std::string& endpoint, comm::LinkClass link,
                 const std::string& peer_name) override {
    return inner_->Connect(node_id, endpoint, link, peer_name);
  }
  Result<size_t> Send(int node_id, const comm::Message& msg) override {
    const bool data = msg.meta.command == comm::Command::kPush || msg.meta.command == comm::Command::kPull ||
                      msg.meta.command == comm::Command::kPushPull;
    if (data && ++sends_ > fail_after_) return Status::Internal("injected send failure");
    return inner_->Send(node_id, msg);
  }
  Status Recv(comm::Message* msg, int timeout_ms) override { return inner_->Recv(msg, timeout_ms); }
  void Stop() override { inner_->Stop(); }

 private:
  std::unique_ptr<comm::Van> inner_;
  const int fail_after_;
  std::atomic<int> sends_{0};
};

// A worker that fails leaves saying why: the whole job ends with that cause, although heartbeats would never
// notice (the process is alive) and no request times out.
TEST(ClusterFailureTest, AFailingWorkerTellsTheWholeJobWhy) {
  Recipe r = cluster_testing::TwoByTwoRecipe("leave", /*epochs=*/100000);
  r.topology.options.heartbeat_interval_ms = 50;
  r.topology.options.heartbeat_timeout_ms = 600000;
  r.topology.options.request_timeout_ms = 600000;
  comm::LoopbackNetwork net;
  ClusterEnv env = cluster_testing::InProcessEnv("loop", [&](const std::string& node) -> std::unique_ptr<comm::Van> {
    auto van = std::make_unique<comm::LoopbackVan>(&net);
    if (node != "dc-a/worker1") return van;
    return std::make_unique<FailingVan>(std::move(van), 40);
  });
  const std::vector<RoleResult> results = RunRolesCollecting(r, env);
  int workers = 0;
  for (const RoleResult& res : results) {
    EXPECT_FALSE(res.status.ok()) << res.role << " completed";
    if (res.role == "dc-a/worker1") {
      EXPECT_NE(res.status.message().find("injected send failure"), std::string::npos) << res.status.ToString();
      continue;
    }
    if (res.role.find("/worker") == std::string::npos) continue;
    ++workers;
    for (const char* text : {"dc-a/worker1", "left the job", "injected send failure"}) {
      EXPECT_NE(res.status.message().find(text), std::string::npos) << res.role << ": " << res.status.ToString();
    }
  }
  EXPECT_EQ(workers, 3);
}

}  // namespace
}  // namespace geomx::cli
