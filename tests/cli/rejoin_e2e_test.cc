// A worker killed with -9 in the middle of a one-host 2-data-centre job is started again by the launcher
// (topology.worker_restarts) and rejoins the running job (issue 18, elastic workers). Under failure_policy: wait
// its data centre pauses until it is back and it pushes the round it missed, so the job ends with exactly the test
// loss of an undisturbed run with the same seed; under continue the job completes with it back.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string Recipe(const std::string& name, const std::string& policy) {
  return "name: " + name +
         "\nseed: 5\nmodel: {name: mlp, hidden: [16]}\n"
         "data: {name: synthetic, batch_size: 8, synthetic_train: 512, synthetic_test: 64,\n"
         "       synthetic_classes: 3, synthetic_shape: [8]}\n"
         "optimizer: {name: adam, lr: 0.005}\ntraining: {epochs: 100, max_iterations: 1500, eval_every: 100}\n"
         "topology:\n"
         "  datacentres:\n"
         "    - {name: dc-a, workers: 2}\n"
         "    - {name: dc-b, workers: 1}\n"
         "  timeouts: {heartbeat_interval: 100ms, heartbeat_timeout: 2s}\n"
         "  failure_policy: " + policy + "\n"
         "  worker_restarts: 1\n";
}

// Every evaluation's "iteration ... test_loss" of a run's metrics.jsonl, one per line (ten significant digits).
std::string TestLosses(const fs::path& run) {
  const std::string text = fs::exists(run / "metrics.jsonl") ? ReadFile(run / "metrics.jsonl") : "";
  std::string out;
  const std::regex row("\"iteration\": ([0-9]+),.*\"test_loss\": ([^,]*),");
  for (std::sregex_iterator it(text.begin(), text.end(), row), end; it != end; ++it) {
    out += (*it)[1].str() + " " + (*it)[2].str() + "\n";
  }
  return out;
}

std::string Field(const fs::path& summary, const std::string& name) {
  const std::string text = fs::exists(summary) ? ReadFile(summary) : "";
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"" + name + "\": ([^,}]*)"))) return "(no " + name + ")";
  return m[1];
}

// Runs NAME.yaml in the background, kills dc-a/worker1 with -9 once the run has evaluated twice, and waits for the
// launcher; returns its output. NAME is unique to the test, so the kill cannot hit another test's processes.
std::string RunAndKillAWorkerOnce(const ScratchDir& dir, const std::string& name, const std::string& policy) {
  WriteFile(dir / (name + ".yaml"), Recipe(name, policy));
  const std::string d = dir.path().string();
  RunShell("cd '" + d + "' && ( '" + std::string(GEOMX_BINARY) + "' train " + name +
           ".yaml --out run > out.log 2>&1; echo $? > rc ) > /dev/null 2>&1 &");
  const auto deadline = Clock::now() + std::chrono::seconds(180);
  const fs::path metrics = dir / "run" / "metrics.jsonl";
  while (Clock::now() < deadline && !fs::exists(dir / "rc") &&
         (!fs::exists(metrics) || !Has(ReadFile(metrics), "\"iteration\": 200,"))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // [.]: the pattern must not match the shell that runs pkill (its own command line holds the pattern).
  const CommandResult kill = RunShell("pkill -9 -f -- '" + name + "[.]yaml --party dc-a --rank 1 '");
  EXPECT_EQ(kill.exit_code, 0) << "no dc-a/worker1 to kill";
  while (Clock::now() < deadline && !fs::exists(dir / "rc")) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string output = fs::exists(dir / "out.log") ? ReadFile(dir / "out.log") : "";
  if (!fs::exists(dir / "rc")) RunShell("pkill -9 -f -- '" + name + "[.]yaml'");
  EXPECT_TRUE(fs::exists(dir / "rc")) << "the job did not end\n" << output;
  if (fs::exists(dir / "rc")) {
    EXPECT_EQ(ReadFile(dir / "rc"), "0\n") << output;
  }
  EXPECT_TRUE(Has(output, "[launcher] dc-a/worker1 was killed by signal 9 (SIGKILL); restarting it (1 of 1")) << output;
  EXPECT_TRUE(Has(output, "dc-a/worker1: rejoined the running job at round")) << output;
  EXPECT_EQ(Field(dir / "run/summary.json", "status"), "\"completed\"");
  EXPECT_EQ(Field(dir / "run/summary.json", "iterations"), "1500");
  return output;
}

TEST(RejoinE2eTest, UnderWaitARestartedWorkerRejoinsAndTheJobEndsLikeAnUndisturbedOne) {
  ScratchDir dir;
  const std::string name = "rejoinwait";
  RunAndKillAWorkerOnce(dir, name, "wait");
  CommandResult calm = RunGeomx("train " + name + ".yaml --out calm", dir.path());
  ASSERT_EQ(calm.exit_code, 0) << calm.output;
  // Every evaluation, not only the last: the runs converge, so a small error would fade by the end.
  const std::string losses = TestLosses(dir / "run");
  EXPECT_GT(std::count(losses.begin(), losses.end(), '\n'), 60) << losses;
  EXPECT_EQ(losses, TestLosses(dir / "calm"));
  EXPECT_EQ(Field(dir / "run/summary.json", "final_test_loss"), Field(dir / "calm/summary.json", "final_test_loss"));
  EXPECT_EQ(Field(dir / "run/summary.json", "final_test_accuracy"),
            Field(dir / "calm/summary.json", "final_test_accuracy"));
}

TEST(RejoinE2eTest, UnderContinueARestartedWorkerRejoinsTheRunningJob) {
  ScratchDir dir;
  RunAndKillAWorkerOnce(dir, "rejoincontinue", "continue");
}

}  // namespace
}  // namespace geomx::testing
