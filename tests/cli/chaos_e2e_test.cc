// Chaos through the binary (issue 18): a one-host 2-data-centre job with server snapshots and restarts
// (topology.snapshot_every, topology.max_restarts) has its global server, then a local server, then a worker
// killed with -9 in the middle of training. Each time the launcher restarts the whole job from the servers' last
// common snapshot, and the job completes with exactly the test loss of an undisturbed run with the same seed
// (the resume is exact: weights, Adam state, data position and schedule come back).
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

// NAME is unique to this test: the kills below match its processes' command lines only.
constexpr const char* kName = "chaosrun";

std::string Recipe() {
  return std::string("name: ") + kName +
         "\nseed: 7\nmodel: {name: mlp, hidden: [16]}\n"
         "data: {name: synthetic, batch_size: 8, synthetic_train: 512, synthetic_test: 64,\n"
         "       synthetic_classes: 3, synthetic_shape: [8]}\n"
         "optimizer: {name: adam, lr: 0.005}\ntraining: {epochs: 100, max_iterations: 1500, eval_every: 250}\n"
         "topology:\n"
         "  datacentres:\n"
         "    - {name: dc-a, workers: 2}\n"
         "    - {name: dc-b, workers: 1}\n"
         "  timeouts: {heartbeat_interval: 100ms, heartbeat_timeout: 2s}\n"
         "  snapshot_every: 10\n"
         "  max_restarts: 3\n";
}

std::string Field(const fs::path& summary, const std::string& name) {
  const std::string text = fs::exists(summary) ? ReadFile(summary) : "";
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"" + name + "\": ([^,}]*)"))) return "(no " + name + ")";
  return m[1];
}

// The newest round the global server has a snapshot of (-1: none yet).
int64_t NewestSnapshot(const fs::path& run) {
  int64_t newest = -1;
  std::error_code ec;
  const std::regex file("round-([0-9]+)[.]state");
  for (fs::directory_iterator it(run / "snapshots/central/global-server0", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, m, file)) newest = std::max<int64_t>(newest, std::stoll(m[1]));
  }
  return newest;
}

TEST(ChaosE2eTest, KilledServersAndAWorkerRestartTheJobWhichEndsLikeAnUndisturbedOne) {
  ScratchDir dir;
  WriteFile(dir / (std::string(kName) + ".yaml"), Recipe());
  const std::string d = dir.path().string();
  const std::string geomx = GEOMX_BINARY;
  RunShell("cd '" + d + "' && ( '" + geomx + "' train " + kName + ".yaml --out run > out.log 2>&1; echo $? > rc ) " +
           "> /dev/null 2>&1 &");
  const auto deadline = Clock::now() + std::chrono::seconds(240);
  // Kill each victim once the job has moved past a snapshot well after the previous kill.
  const struct {
    int64_t after_round;
    std::string pattern;  // [.]: the pattern must not match the shell that runs pkill
  } victims[] = {
      {99, std::string("role global-server ") + kName + "[.]yaml"},
      {399, std::string("role server ") + kName + "[.]yaml --party dc-a"},
      {799, std::string(kName) + "[.]yaml --party dc-a --rank 1 "},
  };
  for (const auto& v : victims) {
    while (Clock::now() < deadline && NewestSnapshot(dir / "run") < v.after_round && !fs::exists(dir / "rc")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const CommandResult kill = RunShell("pkill -9 -f -- '" + v.pattern + "'");
    EXPECT_EQ(kill.exit_code, 0) << "nothing matched " << v.pattern << " (newest snapshot "
                                 << NewestSnapshot(dir / "run") << ")";
  }
  while (Clock::now() < deadline && !fs::exists(dir / "rc")) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string output = fs::exists(dir / "out.log") ? ReadFile(dir / "out.log") : "";
  if (!fs::exists(dir / "rc")) RunShell(std::string("pkill -9 -f -- '") + kName + "[.]yaml'");
  ASSERT_TRUE(fs::exists(dir / "rc")) << "the job did not end\n" << output;
  EXPECT_EQ(ReadFile(dir / "rc"), "0\n") << output;
  EXPECT_NE(output.find("restart 3 of 3"), std::string::npos) << output;
  EXPECT_NE(output.find("central/global-server0 was killed by signal 9"), std::string::npos) << output;

  // The same job undisturbed.
  CommandResult calm = RunGeomx(std::string("train ") + kName + ".yaml --out calm", dir.path());
  ASSERT_EQ(calm.exit_code, 0) << calm.output;
  EXPECT_EQ(Field(dir / "run/summary.json", "status"), "\"completed\"");
  EXPECT_EQ(Field(dir / "run/summary.json", "iterations"), "1500");
  EXPECT_EQ(Field(dir / "run/summary.json", "final_test_loss"), Field(dir / "calm/summary.json", "final_test_loss"));
  EXPECT_EQ(Field(dir / "run/summary.json", "final_test_accuracy"),
            Field(dir / "calm/summary.json", "final_test_accuracy"));
  // Each restart continued after the snapshots instead of training again from the start (which would end with the
  // same loss too): the evaluation at the end of the first epoch (iteration 21) was logged once, not once per start.
  const std::string metrics = ReadFile(dir / "run/metrics.jsonl");
  size_t first_epoch_rows = 0;
  for (size_t at = metrics.find("\"iteration\": 21,"); at != std::string::npos;
       at = metrics.find("\"iteration\": 21,", at + 1)) {
    ++first_epoch_rows;
  }
  EXPECT_EQ(first_epoch_rows, 1u) << metrics.substr(0, 2000);
}

}  // namespace
}  // namespace geomx::testing
