// The reinforcement-learning algorithm `rl` through recipes and the binary: its recipe validates, bad parameters
// and unsuitable data are user errors naming the key, and `geomx train`, `eval`, `predict` and `algos` work on the
// environment cartpole (docs/algorithms.md#rl).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli/recipe.h"
#include "tests/cli/recipe_test_util.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using recipe_testing::ErrorLines;
using recipe_testing::Lines;
using recipe_testing::MustParse;
using testing::RunGeomx;
using testing::ScratchDir;
using testing::WriteFile;

bool AnyLineStartsWith(const Lines& lines, const std::string& prefix) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
}

std::string Join(const Lines& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(RlRecipeTest, ValidatesParamsAndData) {
  const Recipe r = MustParse("algorithm: {name: rl, gamma: 0.95, batch_size: 4}\ndata: {name: cartpole}\n");
  EXPECT_EQ(r.algorithm.params.at("gamma"), "0.95");
  EXPECT_EQ(r.algorithm.params.at("updates"), "150") << "defaults are filled in";

  const Lines gamma = ErrorLines("algorithm:\n  name: rl\n  gamma: 2\ndata: {name: cartpole}\n");
  EXPECT_TRUE(AnyLineStartsWith(gamma, "r.yaml:3:10: algorithm.gamma: must be")) << Join(gamma);
  const Lines typo = ErrorLines("algorithm: {name: rl, batchsize: 4}\ndata: {name: cartpole}\n");
  ASSERT_EQ(typo.size(), 1u);
  EXPECT_NE(typo[0].find("algorithm.batchsize: unknown parameter (did you mean 'batch_size'?)"), std::string::npos)
      << typo[0];
  const Lines flag = ErrorLines("algorithm: {name: rl}\ndata: {name: cartpole}\n", {"algorithm.updates=0"});
  ASSERT_EQ(flag.size(), 1u);
  EXPECT_NE(flag[0].find("algorithm.updates"), std::string::npos) << flag[0];

  const Lines data = ErrorLines("algorithm: {name: rl}\ndata: {name: friedman1}\n");
  ASSERT_EQ(data.size(), 1u);
  EXPECT_NE(data[0].find("data.name: friedman1 does not suit rl, a control algorithm (use the environment cartpole)"),
            std::string::npos)
      << data[0];
  EXPECT_EQ(ErrorLines("algorithm: {name: rl}\ndata: {name: fashion-mnist}\n").size(), 1u);
  const Lines other = ErrorLines("algorithm: {name: gbdt-regressor}\ndata: {name: cartpole}\n");
  ASSERT_EQ(other.size(), 1u);
  EXPECT_NE(other[0].find("cartpole does not suit gbdt-regressor"), std::string::npos) << other[0];
  EXPECT_EQ(ErrorLines("data: {name: cartpole}\n").size(), 1u) << "an environment needs an algorithm";
}

TEST(RlCliTest, TrainEvalPredictAlgos) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml",
            "name: rl_small\nthreads: 1\nalgorithm: {name: rl, hidden: 16, updates: 20, batch_size: 4}\n"
            "data: {name: cartpole, synthetic_train: 4, synthetic_test: 10}\n");
  auto train = RunGeomx("train r.yaml --out run1", dir.path());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("test return "), std::string::npos) << train.output;
  const std::string summary = testing::ReadFile(dir / "run1" / "summary.json");
  EXPECT_NE(summary.find("\"task\": \"control\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"return\": "), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"return_min\": "), std::string::npos) << summary;
  const std::string metrics = testing::ReadFile(dir / "run1" / "metrics.jsonl");
  EXPECT_NE(metrics.find("\"step\": 20"), std::string::npos) << metrics;

  auto eval = RunGeomx("eval run1 --json", dir.path());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("\"return\": "), std::string::npos) << eval.output;

  WriteFile(dir / "starts.csv", "x,x_dot,theta,theta_dot\n0,0,0,0\n0.01,-0.02,0.03,0.04\n2.39,1,0,0\n");
  auto predict = RunGeomx("predict run1 starts.csv --out p.csv", dir.path());
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const std::string p = testing::ReadFile(dir / "p.csv");
  EXPECT_EQ(p.rfind("return\n", 0), 0u) << p;
  EXPECT_EQ(std::count(p.begin(), p.end(), '\n'), 4);
  EXPECT_NE(p.find("\n1\n"), std::string::npos) << "the cart past the track's end falls at once\n" << p;

  auto bad = RunGeomx("train r.yaml --out run2 --set algorithm.gamma=1.5", dir.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("algorithm.gamma"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "run2"));

  auto algos = RunGeomx("algos rl");
  ASSERT_EQ(algos.exit_code, 0) << algos.output;
  EXPECT_NE(algos.output.find("(control)"), std::string::npos) << algos.output;
  EXPECT_NE(algos.output.find("value_lr"), std::string::npos) << algos.output;
  auto all = RunGeomx("algos");
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_NE(all.output.find("algorithm: {name: rl}"), std::string::npos) << all.output;
}

}  // namespace
}  // namespace geomx::cli
