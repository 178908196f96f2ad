// A topology started role by role, as docs/deployment.md tells multi-host users to: every process its own
// `geomx serve` / `geomx train --party --rank` command with the same recipe and a fresh --out folder that no
// launcher prepared, and the parties' hosts given as a host name (as containers and Kubernetes Services name
// them) rather than an address.
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cli/free_ports.h"
#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

// geo.yaml in `dir`: dc-a (2 workers) and dc-b (1 worker) over free scheduler ports, `hosts` in front of every
// party's keys (e.g. "host: localhost, "), `epochs` epochs, `topology_extra` appended to the topology section.
void WriteRecipe(const ScratchDir& dir, const std::string& hosts, int epochs, const std::string& topology_extra) {
  Result<std::vector<int>> ports = cli::PickFreePorts("127.0.0.1", 3);
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  const std::vector<int>& p = *ports;
  WriteFile(dir / "geo.yaml", "name: byhand\nseed: 3\nmodel: {name: mlp, hidden: [16]}\n"
                              "data: {name: synthetic, batch_size: 32, synthetic_train: 256, synthetic_test: 128,\n"
                              "       synthetic_classes: 3, synthetic_shape: [8]}\n"
                              "optimizer: {name: adam, lr: 0.01}\ntraining: {epochs: " + std::to_string(epochs) +
                              "}\ntopology:\n"
                              "  central: {" + hosts + "scheduler_port: " + std::to_string(p[0]) + "}\n"
                              "  datacentres:\n"
                              "    - {name: dc-a, " + hosts + "workers: 2, scheduler_port: " + std::to_string(p[1]) +
                              "}\n    - {name: dc-b, " + hosts + "workers: 1, scheduler_port: " + std::to_string(p[2]) +
                              "}\n  timeouts: {rendezvous: 60s}\n" + topology_extra);
}

// Runs every role of geo.yaml in `dir` as its own process, each with `folder` (--out or --resume) run/<party> and
// the extra arguments; returns the commands that did not exit 0, with their output.
std::string RunEveryRole(const ScratchDir& dir, const std::string& folder, const std::string& extra) {
  const std::vector<std::pair<std::string, std::string>> roles = {
      {"serve --role global-scheduler geo.yaml", "central"},
      {"serve --role global-server geo.yaml --rank 0", "central"},
      {"serve --role master-worker geo.yaml", "central"},
      {"serve --role scheduler geo.yaml --party dc-a", "dc-a"},
      {"serve --role server geo.yaml --party dc-a --rank 0", "dc-a"},
      {"train geo.yaml --party dc-a --rank 0", "dc-a"},
      {"train geo.yaml --party dc-a --rank 1", "dc-a"},
      {"serve --role scheduler geo.yaml --party dc-b", "dc-b"},
      {"serve --role server geo.yaml --party dc-b --rank 0", "dc-b"},
      {"train geo.yaml --party dc-b --rank 0", "dc-b"},
  };
  std::vector<CommandResult> results(roles.size());
  std::vector<std::thread> processes;
  for (size_t i = 0; i < roles.size(); ++i) {
    const std::string command = roles[i].first + " " + folder + " run/" + roles[i].second + " " + extra;
    processes.emplace_back([&, i, command] { results[i] = RunGeomx(command, dir.path()); });
  }
  for (std::thread& t : processes) t.join();
  std::string failed;
  for (size_t i = 0; i < roles.size(); ++i) {
    if (results[i].exit_code != 0) failed += roles[i].first + ": exit " + std::to_string(results[i].exit_code) +
                                             "\n" + results[i].output + "\n";
  }
  return failed;
}

// Regressions: (1) ZeroMQ cannot bind a host name ("No such device"): every role failed when a party's host was
// `localhost` or a service name; (2) the evaluating worker refused a fresh --out folder ("--resume DIR: not a geomx
// run folder") because only the one-host launcher wrote its recipe.yaml.
TEST(MultiHostTest, RolesStartedByHandWithHostNamesTrainToTheEnd) {
  ScratchDir dir;
  WriteRecipe(dir, "host: localhost, ", 1, "");
  const std::string failed = RunEveryRole(dir, "--out", "");
  EXPECT_TRUE(failed.empty()) << failed;
  // dc-a/worker0 evaluates: it created its run folder itself, with the resolved recipe, metrics and a summary.
  const fs::path run = dir / "run" / "dc-a";
  const std::string summary = ReadFile(run / "summary.json");
  EXPECT_NE(summary.find("\"status\": \"completed\""), std::string::npos) << summary;
  EXPECT_NE(ReadFile(run / "recipe.yaml").find("name: byhand"), std::string::npos);
  EXPECT_FALSE(ReadFile(run / "metrics.jsonl").empty());
  EXPECT_FALSE(fs::exists(dir / "run" / "dc-b" / "summary.json"));  // only the evaluating worker writes one

  // A folder that already holds a finished run is refused rather than mixed with a new one.
  CommandResult again = RunGeomx("train geo.yaml --party dc-a --rank 0 --out run/dc-a", dir.path());
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.output.find("holds a finished run"), std::string::npos) << again.output;
}

// docs/deployment.md, "Snapshots and resume": across hosts every role is started again with --resume RUN in place
// of --out RUN (each host its own folder); the master worker finds the round in the central folder's snapshots
// and the job continues there instead of starting over.
TEST(MultiHostTest, RolesRestartedByHandWithResumeContinueTheJob) {
  ScratchDir dir;
  WriteRecipe(dir, "", 4, "  snapshot_every: 2\n");
  // 256 examples / 3 workers / batch 32: 2 rounds per epoch, 8 in all; the first start stops after 4.
  std::string failed = RunEveryRole(dir, "--out", "--set training.max_iterations=4");
  ASSERT_TRUE(failed.empty()) << failed;
  EXPECT_TRUE(fs::exists(dir / "run/central/snapshots/central/global-server0/round-000000000003.state"));
  failed = RunEveryRole(dir, "--resume", "");
  ASSERT_TRUE(failed.empty()) << failed;
  const fs::path run = dir / "run" / "dc-a";
  const std::string summary = ReadFile(run / "summary.json");
  EXPECT_NE(summary.find("\"status\": \"completed\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"iterations\": 8"), std::string::npos) << summary;
  // Rounds 4..7 only: the end of the first epoch (iteration 2) was evaluated once, in the first start.
  const std::string metrics = ReadFile(run / "metrics.jsonl");
  EXPECT_EQ(metrics.find("\"iteration\": 2,"), metrics.rfind("\"iteration\": 2,")) << metrics;
  EXPECT_NE(metrics.find("\"iteration\": 8,"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace geomx::testing
