// A topology started role by role, as docs/deployment.md tells multi-host users to: every process its own
// `geomx serve` / `geomx train --party --rank` command with the same recipe and a fresh --out folder that no
// launcher prepared, and the parties' hosts given as a host name (as containers and Kubernetes Services name
// them) rather than an address.
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cli/free_ports.h"
#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

// Regressions: (1) ZeroMQ cannot bind a host name ("No such device"): every role failed when a party's host was
// `localhost` or a service name; (2) the evaluating worker refused a fresh --out folder ("--resume DIR: not a geomx
// run folder") because only the one-host launcher wrote its recipe.yaml.
TEST(MultiHostTest, RolesStartedByHandWithHostNamesTrainToTheEnd) {
  ScratchDir dir;
  Result<std::vector<int>> ports = cli::PickFreePorts("127.0.0.1", 3);
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  const std::vector<int>& p = *ports;
  WriteFile(dir / "geo.yaml", "name: byhand\nseed: 3\nmodel: {name: mlp, hidden: [16]}\n"
                              "data: {name: synthetic, batch_size: 32, synthetic_train: 256, synthetic_test: 128,\n"
                              "       synthetic_classes: 3, synthetic_shape: [8]}\n"
                              "optimizer: {name: adam, lr: 0.01}\ntraining: {epochs: 1}\ntopology:\n"
                              "  central: {host: localhost, scheduler_port: " + std::to_string(p[0]) + "}\n"
                              "  datacentres:\n"
                              "    - {name: dc-a, host: localhost, workers: 2, scheduler_port: " + std::to_string(p[1]) +
                              "}\n    - {name: dc-b, host: localhost, workers: 1, scheduler_port: " +
                              std::to_string(p[2]) + "}\n  timeouts: {rendezvous: 60s}\n");
  const std::vector<std::string> commands = {
      "serve --role global-scheduler geo.yaml --out run/central",
      "serve --role global-server geo.yaml --rank 0 --out run/central",
      "serve --role master-worker geo.yaml --out run/central",
      "serve --role scheduler geo.yaml --party dc-a --out run/dc-a",
      "serve --role server geo.yaml --party dc-a --rank 0 --out run/dc-a",
      "train geo.yaml --party dc-a --rank 0 --out run/dc-a",
      "train geo.yaml --party dc-a --rank 1 --out run/dc-a",
      "serve --role scheduler geo.yaml --party dc-b --out run/dc-b",
      "serve --role server geo.yaml --party dc-b --rank 0 --out run/dc-b",
      "train geo.yaml --party dc-b --rank 0 --out run/dc-b",
  };
  std::vector<CommandResult> results(commands.size());
  std::vector<std::thread> processes;
  for (size_t i = 0; i < commands.size(); ++i) {
    processes.emplace_back([&, i] { results[i] = RunGeomx(commands[i], dir.path()); });
  }
  for (std::thread& t : processes) t.join();
  for (size_t i = 0; i < commands.size(); ++i) {
    EXPECT_EQ(results[i].exit_code, 0) << commands[i] << "\n" << results[i].output;
  }
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

}  // namespace
}  // namespace geomx::testing
