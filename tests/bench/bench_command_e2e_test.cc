// `geomx bench RECIPE` end to end on a tiny synthetic topology (2 data centres x 1 worker, a few iterations):
// bad input exits 2 and creates nothing; a configuration that fails is reported as failed while the others run;
// the table, bench.csv, bench.json and both PNGs are written. Nothing here depends on timing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "tests/testutil.h"

namespace geomx::bench {
namespace {

namespace fs = std::filesystem;

constexpr char kRecipe[] = R"(name: tiny
seed: 7
threads: 1
model: {name: mlp, hidden: [16]}
data:
  {name: synthetic, synthetic_train: 256, synthetic_test: 64, synthetic_classes: 4, synthetic_shape: [1, 8, 8],
   batch_size: 16, prefetch: 0}
optimizer: {name: adam, lr: 0.01}
training: {epochs: 1, eval_every: 2, target_accuracy: 0.3}
topology:
  central: {host: 127.0.0.1}
  datacentres:
    - {name: dc-a, workers: 1}
    - {name: dc-b, workers: 1}
)";

// Runs the geomx binary with `args` in `dir` (testing::RunGeomx); returns the exit code and the output.
int Geomx(const fs::path& dir, const std::string& args, std::string* output) {
  testing::CommandResult r = testing::RunGeomx(args, dir);
  *output = std::move(r.output);
  return r.exit_code;
}

TEST(BenchCommandE2e, BadInputExits2AndCreatesNothing) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "r.yaml", kRecipe);
  std::string out;
  EXPECT_EQ(Geomx(dir.path(), "bench r.yaml --configs hips,warp-drive --out b", &out), 2) << out;
  EXPECT_NE(out.find("unknown preset 'warp-drive'"), std::string::npos) << out;
  EXPECT_EQ(Geomx(dir.path(), "bench r.yaml --configs hips --wan 50mbit --out b", &out), 2) << out;
  EXPECT_NE(out.find("RATE/DELAY"), std::string::npos) << out;
  EXPECT_EQ(Geomx(dir.path(), "bench r.yaml --configs hips --set training.epochs=zero --out b", &out), 2) << out;
  EXPECT_FALSE(fs::exists(dir / "b"));
}

TEST(BenchCommandE2e, RunsEveryConfigurationAndReportsFailuresWithoutStopping) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "r.yaml", kRecipe);
  std::string out;
  ASSERT_EQ(Geomx(dir.path(), "bench r.yaml --configs 'flat-ps,hips[training.epochs=0],hips' --out b", &out), 0)
      << out;
  EXPECT_NE(out.find("hips[training.epochs=0]: recipe rejected"), std::string::npos) << out;
  const std::string csv = testing::ReadFile(dir / "b" / "bench.csv");
  EXPECT_NE(csv.find("\nflat-ps,completed,1,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nhips[training.epochs=0],failed,1,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nhips,completed,1,1,"), std::string::npos) << csv;
  const std::string json = testing::ReadFile(dir / "b" / "bench.json");
  EXPECT_NE(json.find("\"runs\": ["), std::string::npos);
  EXPECT_GT(fs::file_size(dir / "b" / "accuracy_vs_time.png"), 1000u);
  EXPECT_GT(fs::file_size(dir / "b" / "wan_bytes.png"), 1000u);
  EXPECT_TRUE(fs::exists(dir / "b" / "hips" / "summary.json"));
  // flat-ps: one data centre per worker.
  const std::string flat = testing::ReadFile(dir / "b" / "flat-ps" / "recipe.yaml");
  EXPECT_NE(flat.find("w1"), std::string::npos) << flat;
}

}  // namespace
}  // namespace geomx::bench
