// Failures of a one-host topology run through the binary (docs/deployment.md): a worker process killed with -9 in
// the middle of training. Under the default policy the job stops, exits 1 and its summary.json says "failed",
// naming the worker; under topology.failure_policy: continue the job goes on without it and completes.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Long enough to be killed in the middle (evaluations every 20 iterations), short enough to finish afterwards.
std::string Recipe(const std::string& policy) {
  return "name: chaos\nseed: 3\nmodel: {name: mlp, hidden: [16]}\n"
         "data: {name: synthetic, batch_size: 8, synthetic_train: 512, synthetic_test: 64,\n"
         "       synthetic_classes: 3, synthetic_shape: [8]}\n"
         "optimizer: {name: sgd, lr: 0.05}\ntraining: {epochs: 100, max_iterations: 1500, eval_every: 20}\n"
         "topology:\n"
         "  datacentres:\n"
         "    - {name: dc-a, workers: 2}\n"
         "    - {name: dc-b, workers: 1}\n"
         "  timeouts: {heartbeat_interval: 100ms, heartbeat_timeout: 2s}\n"
         "  failure_policy: " + policy + "\n";
}

// Starts `geomx train NAME.yaml --out run` in the background, sends dc-a/worker1 `signal` (-9 kills it, -STOP
// freezes it) once the run has evaluated, waits for the launcher to exit, and returns its exit code (-1 when
// something did not happen in time). NAME is unique to this test, so the signal cannot hit another test's
// processes (ctest runs tests in parallel).
int RunAndKillAWorker(const ScratchDir& dir, const std::string& name, std::string* output,
                      const std::string& signal = "-9", const std::string& role = "") {
  const std::string d = dir.path().string();
  RunShell("cd '" + d + "' && ( '" + std::string(GEOMX_BINARY) + "' train " + name +
           ".yaml --out run > out.log 2>&1; echo $? > rc ) > /dev/null 2>&1 &");
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < deadline && (!fs::exists(dir / "run" / "metrics.jsonl") ||
                                     fs::file_size(dir / "run" / "metrics.jsonl") == 0)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // `role` empty: the worker (".../geomx train NAME.yaml --party dc-a --rank 1 ..."); else dc-b's process
  // ".../geomx serve --role ROLE NAME.yaml --party dc-b ...". [.]: the pattern must not match the shell that runs
  // pkill (its own command line holds the pattern).
  const std::string pattern = role.empty() ? name + "[.]yaml --party dc-a --rank 1 "
                                           : "role " + role + " " + name + "[.]yaml --party dc-b ";
  const CommandResult kill = RunShell("pkill " + signal + " -f -- '" + pattern + "'");
  EXPECT_EQ(kill.exit_code, 0) << "no process '" << pattern << "' to signal: " << kill.output;
  while (Clock::now() < deadline && !fs::exists(dir / "rc")) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  *output = fs::exists(dir / "out.log") ? ReadFile(dir / "out.log") : "";
  if (!fs::exists(dir / "rc")) {
    RunShell("pkill -9 -f -- '" + name + "[.]yaml'");
    return -1;
  }
  return std::stoi(ReadFile(dir / "rc"));
}

// Under topology.failure_policy: continue: writes NAME.yaml, runs it, signals the victim (RunAndKillAWorker) and
// checks that the job still completed all 1500 iterations; returns the launcher's output.
std::string RunContinuedJob(const std::string& name, const std::string& signal, const std::string& role) {
  ScratchDir dir;
  WriteFile(dir / (name + ".yaml"), Recipe("continue"));
  std::string out;
  const int rc = RunAndKillAWorker(dir, name, &out, signal, role);
  EXPECT_EQ(rc, 0) << out;
  const std::string summary = ReadFile(dir / "run" / "summary.json");
  EXPECT_TRUE(Has(summary, "\"status\": \"completed\"")) << summary;
  EXPECT_TRUE(Has(summary, "\"iterations\": 1500")) << summary;
  return out;
}

TEST(FailureE2eTest, AKilledWorkerStopsTheJobAndTheSummarySaysWhy) {
  ScratchDir dir;
  WriteFile(dir / "failure_e2e_stop.yaml", Recipe("stop"));
  std::string out;
  const int rc = RunAndKillAWorker(dir, "failure_e2e_stop", &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_TRUE(Has(out, "dc-a/worker1")) << out;
  const std::string summary = ReadFile(dir / "run" / "summary.json");
  EXPECT_TRUE(Has(summary, "\"status\": \"failed\"")) << summary;
  EXPECT_TRUE(Has(summary, "dc-a/worker1")) << summary;
}

TEST(FailureE2eTest, UnderContinueTheJobCompletesWithoutAKilledWorker) {
  const std::string out = RunContinuedJob("failure_e2e_continue", "-9", "");
  EXPECT_TRUE(Has(out, "[launcher] dc-a/worker1")) << out;
  EXPECT_TRUE(Has(out, "the job goes on without it")) << out;
}

// Under continue a data centre other than the first can be lost as a whole: dc-b's local server is killed; the
// global tier goes on with dc-a, dc-b's processes fail, and the job completes.
TEST(FailureE2eTest, UnderContinueTheJobCompletesWithoutALostDataCentre) {
  const std::string out = RunContinuedJob("failure_e2e_dcloss", "-9", "server");
  EXPECT_TRUE(Has(out, "[launcher] dc-b/server0 was killed by signal 9")) << out;
  EXPECT_TRUE(Has(out, "node dc-b/server0 (worker rank 1, party dc-b)")) << out;  // its global-tier rank
}

// A worker frozen with SIGSTOP past the heartbeat timeout: its data centre is told who (declared dead) and goes
// on without it; when the job is done the launcher kills the frozen process instead of waiting for it forever.
TEST(FailureE2eTest, UnderContinueTheJobCompletesWithoutAFrozenWorker) {
  const std::string out = RunContinuedJob("failure_e2e_frozen", "-STOP", "");
  EXPECT_TRUE(Has(out, "node dc-a/worker1 (worker rank 1, party dc-a)")) << out;
  EXPECT_TRUE(Has(out, "declared dead; the tier goes on")) << out;
  EXPECT_TRUE(Has(out, "[launcher] dc-a/worker1 was still running after the job ended")) << out;
}

}  // namespace
}  // namespace geomx::testing
