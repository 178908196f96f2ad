// `geomx train --resume RUN` of a one-host topology run (docs/deployment.md, "Snapshots and resume"): the job
// stopped after 30 rounds and resumed to 40 ends with the test loss of a job trained to 40 at once (the resumed
// job restores the global server's weights and Adam state of round 29 and the workers continue at round 30);
// resuming a finished run or one without snapshots exits 2 naming why, before any process starts.
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

constexpr const char* kRecipe =
    "name: resumable\nseed: 3\nmodel: {name: mlp, hidden: [16]}\n"
    "data: {name: synthetic, batch_size: 8, synthetic_train: 512, synthetic_test: 64,\n"
    "       synthetic_classes: 3, synthetic_shape: [8]}\n"
    "optimizer: {name: adam, lr: 0.01}\ntraining: {epochs: 2, max_iterations: 30}\n"
    "topology:\n"
    "  datacentres:\n"
    "    - {name: dc-a, workers: 2}\n"
    "    - {name: dc-b, workers: 1}\n"
    "  snapshot_every: 10\n";

std::string Field(const fs::path& summary, const std::string& name) {
  const std::string text = ReadFile(summary);
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"" + name + "\": ([^,}]*)"))) return "(no " + name + ")";
  return m[1];
}

TEST(ResumeE2eTest, AResumedTopologyRunEndsLikeOneThatNeverStopped) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", kRecipe);
  CommandResult first = RunGeomx("train r.yaml --out run", dir.path());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(fs::exists(dir / "run/snapshots/central/global-server0/round-000000000029.state"));

  // Finished: nothing to resume; exit 2 before any process starts.
  CommandResult finished = RunGeomx("train --resume run", dir.path());
  EXPECT_EQ(finished.exit_code, 2) << finished.output;
  EXPECT_NE(finished.output.find("the run already finished"), std::string::npos) << finished.output;

  CommandResult resumed = RunGeomx("train --resume run --set training.max_iterations=40", dir.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming run at round 30"), std::string::npos) << resumed.output;
  CommandResult straight = RunGeomx("train r.yaml --out straight --set training.max_iterations=40", dir.path());
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  EXPECT_EQ(Field(dir / "run/summary.json", "status"), "\"completed\"");
  EXPECT_EQ(Field(dir / "run/summary.json", "iterations"), "40");
  EXPECT_EQ(Field(dir / "run/summary.json", "final_test_loss"),
            Field(dir / "straight/summary.json", "final_test_loss"));
  // The resumed job continued at round 30 instead of training again from round 0 (which would end with the same
  // loss): the evaluation at the end of the first epoch (iteration 21) was logged once.
  const std::string metrics = ReadFile(dir / "run/metrics.jsonl");
  EXPECT_EQ(metrics.find("\"iteration\": 21,"), metrics.rfind("\"iteration\": 21,")) << metrics;
  EXPECT_NE(metrics.find("\"iteration\": 40,"), std::string::npos) << metrics;
  // The overrides are kept for the next resume.
  EXPECT_NE(ReadFile(dir / "run/recipe.yaml").find("max_iterations: 40"), std::string::npos);
}

TEST(ResumeE2eTest, ARunWithoutSnapshotsCannotResume) {
  ScratchDir dir;
  std::string recipe = kRecipe;
  recipe.replace(recipe.find("snapshot_every: 10"), 18, "snapshot_every: 0");
  WriteFile(dir / "r.yaml", recipe);
  ASSERT_EQ(RunGeomx("train r.yaml --out run --set training.max_iterations=5", dir.path()).exit_code, 0);
  CommandResult r = RunGeomx("train --resume run --set training.max_iterations=10", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no snapshot of central/global-server0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("snapshot_every: 0"), std::string::npos) << r.output;

  // A mode whose servers cannot snapshot is refused at the recipe, naming the key.
  CommandResult hfa = RunGeomx("train r.yaml --out hfa --set sync.mode=hfa --set topology.snapshot_every=5 --dry-run",
                               dir.path());
  EXPECT_EQ(hfa.exit_code, 2) << hfa.output;
  EXPECT_NE(hfa.output.find("topology.snapshot_every"), std::string::npos) << hfa.output;
}

}  // namespace
}  // namespace geomx::testing
