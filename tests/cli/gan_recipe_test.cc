// The gan algorithm through the geomx binary (docs/algorithms.md#gan): a small run writes its sample grids and the
// classifier score into the run folder and `geomx eval` reproduces the score; the same recipe over two data centres
// of two workers (every role a process, the rule "gan-adam" in the global server) reaches a comparable score; bad
// parameters are user errors (exit 2) naming their key.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using testing::RunGeomx;
using testing::ScratchDir;
using testing::WriteFile;

namespace fs = std::filesystem;

double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  return at == std::string::npos ? -1.0 : std::stod(json.substr(at + key.size() + 4));
}

// Four Gaussian blobs as 16 x 16 images; 8 steps of 32 per epoch.
constexpr char kRecipe[] =
    "seed: 3\nthreads: 1\n"
    "algorithm: {name: gan, noise: 8, width: 16, epochs: 2, batch_size: 32, eval_every: 8, score_samples: 200,\n"
    "            classifier_epochs: 10, lr: 0.001}\n"
    "data: {name: synthetic, synthetic_train: 256, synthetic_test: 128, synthetic_classes: 4,\n"
    "       synthetic_shape: [1, 16, 16]}\n";

TEST(GanCliTest, RunFolderHoldsTheGridsAndTheScoreAndEvalAgrees) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", std::string("name: gan_small\n") + kRecipe);
  auto r = RunGeomx("train r.yaml --out run", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* file : {"samples-000008.png", "samples-000016.png", "samples.png", "model.gxm", "metrics.jsonl"}) {
    EXPECT_TRUE(fs::exists(dir / "run" / file)) << file << "\n" << r.output;
  }
  EXPECT_EQ(testing::ReadFile(dir / "run" / "samples.png").substr(1, 3), "PNG");
  const std::string summary = testing::ReadFile(dir / "run" / "summary.json");
  const double score = JsonNumber(summary, "score"), real = JsonNumber(summary, "real_score");
  EXPECT_GE(score, 1.0) << summary;
  EXPECT_GT(real, 1.0) << summary;
  EXPECT_NEAR(JsonNumber(summary, "score_ratio"), score / real, 1e-6) << summary;
  const std::string metrics = testing::ReadFile(dir / "run" / "metrics.jsonl");
  EXPECT_NE(metrics.find("\"step\": 16"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"g_loss\""), std::string::npos) << metrics;
  auto eval = RunGeomx("eval run --json", dir.path());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NEAR(JsonNumber(eval.output, "score"), score, 1e-4 * score) << eval.output;
  EXPECT_NEAR(JsonNumber(eval.output, "real_score"), real, 1e-4 * real) << eval.output;
  auto algos = RunGeomx("algos gan", dir.path());
  EXPECT_EQ(algos.exit_code, 0) << algos.output;
  EXPECT_NE(algos.output.find("classifier"), std::string::npos) << algos.output;
}

TEST(GanCliTest, TwoDataCentresTrainTheSameNetworksThroughTheServers) {
  ScratchDir dir;
  WriteFile(dir / "two.yaml", std::string("name: gan_two\n") + kRecipe +
                                  "topology:\n  central: {host: 127.0.0.1, global_servers: 1}\n  datacentres:\n"
                                  "    - {name: dc-a, workers: 2, servers: 1}\n"
                                  "    - {name: dc-b, workers: 2, servers: 1}\n");
  auto two = RunGeomx("train two.yaml --out two --set algorithm.batch_size=8", dir.path());
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const std::string s = testing::ReadFile(dir / "two" / "summary.json");
  EXPECT_EQ(JsonNumber(s, "workers"), 4) << s;
  EXPECT_GT(JsonNumber(s, "wan_bytes"), 0) << s;
  EXPECT_GE(JsonNumber(s, "score"), 1.0) << s;
  EXPECT_TRUE(fs::exists(dir / "two" / "samples.png"));
  // Only fsa runs estimators across data centres.
  auto mixed = RunGeomx("train two.yaml --set sync.mode=mixed --dry-run", dir.path());
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
}

TEST(GanCliTest, BadParametersAreUserErrorsNamingTheirKey) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", std::string("name: gan_bad\n") + kRecipe);
  for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{
           {"algorithm.lr=-1", "algorithm.lr"},
           {"algorithm.beta1=1.5", "algorithm.beta1"},
           {"algorithm.width=0", "algorithm.width"},
           {"algorithm.classifer=auto", "algorithm.classifer"},
           {"algorithm.classifier=no/such/run", "algorithm.classifier"}}) {
    auto r = RunGeomx("train r.yaml --out bad --set " + flag, dir.path());
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.output;
    EXPECT_NE(r.output.find(key + ":"), std::string::npos) << flag << "\n" << r.output;
  }
  // In the file: the error names the file, line and column.
  WriteFile(dir / "b.yaml",
            "algorithm:\n  name: gan\n  noise: many\ndata: {name: synthetic, synthetic_shape: [1, 16, 16]}\n");
  auto b = RunGeomx("train b.yaml --out bad2", dir.path());
  EXPECT_EQ(b.exit_code, 2) << b.output;
  EXPECT_NE(b.output.find("b.yaml:3:"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("algorithm.noise"), std::string::npos) << b.output;
  // The shipped recipes resolve.
  for (const char* recipe : {"recipes/gan.yaml", "recipes/gan_2dc.yaml"}) {
    auto d = RunGeomx(std::string("train ") + recipe + " --dry-run", testing::SourceDir());
    EXPECT_EQ(d.exit_code, 0) << recipe << "\n" << d.output;
  }
}

}  // namespace
}  // namespace geomx::cli
