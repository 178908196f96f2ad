// Recipes with an `algorithm` section (cli/recipe.h AlgorithmConfig) and the geomx commands that use them: train,
// eval, predict, algos. The recipe tests parse in-process; the end-to-end ones run the built binary in a scratch
// folder on a small CSV file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

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

bool HasLine(const Lines& lines, const std::string& text) {
  for (const std::string& l : lines) {
    if (l == text) return true;
  }
  return false;
}

std::string JoinLines(const Lines& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(AlgorithmRecipeTest, ParamsAreResolvedWithDefaultsAndPrintedBack) {
  const Recipe r = MustParse("algorithm:\n  name: logreg\n  C: 0.5\ndata: {name: fashion-mnist, scale: standard}\n");
  EXPECT_TRUE(r.has_algorithm);
  EXPECT_EQ(r.algorithm.name, "logreg");
  ASSERT_EQ(r.algorithm.params.count("C"), 1u);
  EXPECT_EQ(r.algorithm.params.at("C"), "0.5");
  EXPECT_GT(r.algorithm.params.size(), 1u) << "defaults are filled in";
  EXPECT_EQ(r.data.scale, "standard");
  const std::string yaml = RecipeToYaml(r);
  EXPECT_NE(yaml.find("algorithm:\n  name: logreg\n"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("\nmodel:"), std::string::npos) << "an algorithm recipe prints no model section\n" << yaml;
  const Recipe again = MustParse(yaml);
  EXPECT_EQ(again.algorithm.params, r.algorithm.params);
  EXPECT_EQ(RecipeToYaml(again), yaml);
  // A neural recipe prints no algorithm section.
  EXPECT_EQ(RecipeToYaml(MustParse("model: {name: mlp}\n")).find("algorithm"), std::string::npos);
}

TEST(AlgorithmRecipeTest, SetFlagsReachParameters) {
  const Recipe r = MustParse("algorithm: {name: logreg}\n", {"algorithm.C=4", "algorithm.name=logreg"});
  EXPECT_EQ(r.algorithm.params.at("C"), "4");
  const Recipe s = MustParse("name: run\n", {"algorithm.name=kmeans", "algorithm.n_clusters=3"});
  EXPECT_TRUE(s.has_algorithm);
  EXPECT_EQ(s.algorithm.params.at("n_clusters"), "3");
}

TEST(AlgorithmRecipeTest, ErrorsNameFileLineColumnWithHints) {
  const Lines lines = ErrorLines("algorithm:\n  name: logreg\n  c: 1\n  C: -2\n");
  EXPECT_TRUE(HasLine(lines, "r.yaml:3:6: algorithm.c: unknown parameter (did you mean 'C'?) for logreg"))
      << JoinLines(lines);
  bool range = false;
  for (const auto& l : lines) range |= l.rfind("r.yaml:4:6: algorithm.C: must be", 0) == 0;
  EXPECT_TRUE(range) << JoinLines(lines);
  const Lines unknown = ErrorLines("algorithm: {name: logreq}\n");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_NE(unknown[0].find("did you mean 'logreg'"), std::string::npos) << unknown[0];
  const Lines both = ErrorLines("model: {name: mlp}\nalgorithm: {name: logreg}\n");
  ASSERT_EQ(both.size(), 1u);
  EXPECT_NE(both[0].find("either a neural `model` or a classical `algorithm`"), std::string::npos) << both[0];
  const Lines task = ErrorLines("algorithm: {name: linear-svr}\ndata: {name: fashion-mnist}\n");
  ASSERT_EQ(task.size(), 1u);
  EXPECT_NE(task[0].find("fashion-mnist does not suit linear-svr, a regression algorithm"), std::string::npos)
      << task[0];
  EXPECT_EQ(ErrorLines("data: {name: friedman1}\n").size(), 1u);  // a generated table needs an algorithm
  const Lines flag = ErrorLines("algorithm: {name: logreg}\n", {"algorithm.penalty=l3"});
  ASSERT_EQ(flag.size(), 1u);
  EXPECT_EQ(flag[0].rfind("--set algorithm.penalty=l3: algorithm.penalty: unknown value 'l3'", 0), 0u) << flag[0];
}

TEST(AlgorithmRecipeTest, AcceleratorsAreFp16OnEveryLinkOrNone) {
  const std::string topo =
      "algorithm: {name: logreg}\n"
      "topology:\n  datacentres:\n    - {name: a, workers: 1}\n    - {name: b, workers: 1}\n";
  EXPECT_EQ(MustParse(topo + "accelerators: {compression: fp16}\n").accelerators.compression, "fp16");
  EXPECT_EQ(MustParse(topo + "accelerators: {compression: bsc, bsc: {ratio: 0.1}}\n").accelerators.bsc_ratio, 0.1f);
  const Lines mpq = ErrorLines(topo + "accelerators: {compression: mpq}\n");
  ASSERT_EQ(mpq.size(), 1u);
  EXPECT_NE(mpq[0].find("accelerators.compression: an algorithm's sums take compression: fp16"), std::string::npos)
      << mpq[0];
  EXPECT_EQ(ErrorLines(topo + "accelerators: {compression: bsc, bsc: {momentum: 0.9}}\n").size(), 1u);
  EXPECT_EQ(ErrorLines("algorithm: {name: logreg}\naccelerators: {compression: fp16}\n").size(), 1u)
      << "no topology, nothing to compress";
  const Lines partial = ErrorLines(topo + "accelerators: {links: {local_to_global: fp16}}\n");
  ASSERT_EQ(partial.size(), 1u) << "fp16 on the WAN only";
  const Lines p3 = ErrorLines(topo + "accelerators: {p3: {enabled: true}}\n");
  ASSERT_EQ(p3.size(), 1u);
  EXPECT_NE(p3[0].find("accelerators.p3.enabled: P3 slices a model's gradients"), std::string::npos) << p3[0];
}

// A small two-class CSV table: class "pos" when x0 + x1 > 1.
std::string CsvTable(int rows, bool with_label = true) {
  std::string text = with_label ? "x0,x1,x2,label\n" : "x0,x1,x2\n";
  for (int i = 0; i < rows; ++i) {
    const double x0 = (i * 37 % 101) / 100.0, x1 = (i * 53 % 97) / 96.0, x2 = (i % 7) / 7.0;
    text += std::to_string(x0) + "," + std::to_string(x1) + "," + std::to_string(x2);
    if (with_label) text += x0 + x1 > 1 ? ",pos" : ",neg";
    text += "\n";
  }
  return text;
}

TEST(AlgorithmCliTest, TrainEvalPredictAlgos) {
  ScratchDir dir;
  WriteFile(dir / "t.csv", CsvTable(300));
  WriteFile(dir / "r.yaml",
            "name: lr\nthreads: 2\nalgorithm: {name: logreg, C: 10}\n"
            "data: {name: csv, path: t.csv, test_fraction: 0.25, scale: standard}\n");
  auto train = RunGeomx("train r.yaml --out run1", dir.path());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  for (const char* f : {"recipe.yaml", "summary.json", "model.gxm", "metrics.jsonl"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "run1" / f)) << f;
  }
  const std::string summary = testing::ReadFile(dir / "run1" / "summary.json");
  EXPECT_NE(summary.find("\"status\": \"completed\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"accuracy\": "), std::string::npos) << summary;

  auto eval = RunGeomx("eval run1 --json", dir.path());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("\"accuracy\": "), std::string::npos) << eval.output;

  WriteFile(dir / "new.csv", CsvTable(20));
  auto predict = RunGeomx("predict run1 new.csv --out p.csv", dir.path());
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const std::string p = testing::ReadFile(dir / "p.csv");
  EXPECT_EQ(p.rfind("prediction", 0), 0u) << p;
  EXPECT_EQ(std::count(p.begin(), p.end(), '\n'), 21);
  int right = 0;
  for (int i = 0; i < 20; ++i) {
    const double x0 = (i * 37 % 101) / 100.0, x1 = (i * 53 % 97) / 96.0;
    const size_t line = p.find('\n') + 1;
    size_t at = line;
    for (int k = 0; k < i; ++k) at = p.find('\n', at) + 1;
    right += p.compare(at, 3, x0 + x1 > 1 ? "pos" : "neg") == 0;
  }
  EXPECT_GE(right, 17) << p;

  // A row with a feature too many is a user error naming the file; nothing is written.
  WriteFile(dir / "wide.csv", "a,b,c,d,label\n1,2,3,4,pos\n");
  auto wide = RunGeomx("predict run1 wide.csv --out w.csv", dir.path());
  EXPECT_EQ(wide.exit_code, 2) << wide.output;
  EXPECT_NE(wide.output.find("wide.csv: 4 features per row, the model was trained on 3"), std::string::npos)
      << wide.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "w.csv"));

  auto algos = RunGeomx("algos logreg");
  ASSERT_EQ(algos.exit_code, 0) << algos.output;
  EXPECT_NE(algos.output.find("penalty"), std::string::npos) << algos.output;
  auto typo = RunGeomx("algos logreq");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.output.find("did you mean 'logreg'"), std::string::npos) << typo.output;
}

// The tree ensembles' run folders hold the JSON dump and the feature importances: their counts agree with each other
// and with the model (every split of trees.json is one "weight" of its feature).
TEST(AlgorithmCliTest, TreeRunsWriteTheirDumpAndImportances) {
  ScratchDir dir;
  WriteFile(dir / "t.csv", CsvTable(300));
  WriteFile(dir / "x.yaml",
            "name: x\nthreads: 1\nalgorithm: {name: xgboost, n_estimators: 3, max_depth: 2}\n"
            "data: {name: csv, path: t.csv, test_fraction: 0.25}\n");
  auto train = RunGeomx("train x.yaml --out run", dir.path());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string dump = testing::ReadFile(dir / "run" / "trees.json");
  EXPECT_EQ(dump.rfind("{\"format\": \"geomx-trees\", \"version\": 1", 0), 0u) << dump.substr(0, 80);
  size_t splits = 0;
  for (size_t at = dump.find("\"feature\": "); at != std::string::npos; at = dump.find("\"feature\": ", at + 1)) {
    ++splits;
  }
  const std::string csv = testing::ReadFile(dir / "run" / "importance.csv");
  ASSERT_EQ(csv.rfind("feature,weight,gain,cover,total_gain,total_cover\n", 0), 0u) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << "a header and one line per feature (3)";
  double weights = 0;
  for (size_t line = csv.find('\n') + 1; line < csv.size(); line = csv.find('\n', line) + 1) {
    const size_t comma = csv.find(',', line);
    weights += std::stod(csv.substr(comma + 1, csv.find(',', comma + 1) - comma - 1));
  }
  EXPECT_GT(splits, 0u);
  EXPECT_EQ(weights, static_cast<double>(splits)) << csv;
  EXPECT_NE(testing::ReadFile(dir / "run" / "summary.json").find("\"files\": [\"trees.json\", \"importance.csv\"]"),
            std::string::npos);
}

TEST(AlgorithmCliTest, BadDataIsAUserErrorWithoutARunFolder) {
  ScratchDir dir;
  WriteFile(dir / "one.csv", "x,label\n1,a\n2,a\n3,a\n4,a\n");
  WriteFile(dir / "r.yaml", "algorithm: {name: logreg}\ndata: {name: csv, path: one.csv}\n");
  auto r = RunGeomx("train r.yaml --out run", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("only one class"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "run"));
  WriteFile(dir / "bad.txt", "1 0:3\n");
  WriteFile(dir / "s.yaml", "algorithm: {name: logreg}\ndata: {name: libsvm, path: bad.txt}\n");
  auto s = RunGeomx("train s.yaml --out run", dir.path());
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("bad.txt:1:"), std::string::npos) << s.output;
}

}  // namespace
}  // namespace geomx::cli

namespace geomx::cli {
namespace {

// An algorithm recipe with a topology: every role as its own process, the workers fitting k-means through the
// local and global servers. The summary has the whole job's traffic, and the model matches the one-process fit's
// quality on well-separated blobs.
TEST(AlgorithmCliTest, TopologyRunFitsThroughTheParameterServer) {
  ScratchDir dir;
  const std::string base =
      "threads: 1\nalgorithm: {name: kmeans, n_clusters: 4}\n"
      "data: {name: synthetic, synthetic_train: 1200, synthetic_test: 400, synthetic_classes: 4, "
      "synthetic_shape: [8]}\n";
  WriteFile(dir / "one.yaml", "name: one\n" + base);
  WriteFile(dir / "two.yaml", "name: two\n" + base +
                                  "topology:\n  central: {host: 127.0.0.1, global_servers: 1}\n  datacentres:\n"
                                  "    - {name: dc-a, workers: 2, servers: 1}\n"
                                  "    - {name: dc-b, workers: 2, servers: 1}\n");
  auto one = RunGeomx("train one.yaml --out one", dir.path());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto two = RunGeomx("train two.yaml --out two", dir.path());
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const std::string s1 = testing::ReadFile(dir / "one" / "summary.json");
  const std::string s2 = testing::ReadFile(dir / "two" / "summary.json");
  auto number = [](const std::string& json, const std::string& key) {
    const size_t at = json.find("\"" + key + "\": ");
    return at == std::string::npos ? -1.0 : std::stod(json.substr(at + key.size() + 4));
  };
  EXPECT_EQ(number(s2, "workers"), 4) << s2;
  EXPECT_EQ(number(s2, "train_examples"), 300) << "each worker fits on its quarter\n" << s2;
  EXPECT_GT(number(s2, "wan_bytes"), 0) << s2;
  EXPECT_GT(number(s2, "lan_bytes"), number(s2, "wan_bytes")) << "sums cross the WAN once per data centre\n" << s2;
  EXPECT_EQ(number(s1, "wan_bytes"), 0) << s1;
  EXPECT_NEAR(number(s2, "purity"), number(s1, "purity"), 0.05) << s1 << "\n" << s2;
  // The saved model predicts like any other.
  auto eval = RunGeomx("eval two --json", dir.path());
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  // Only fsa runs estimators across data centres.
  auto mixed = RunGeomx("train two.yaml --set sync.mode=mixed --dry-run", dir.path());
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
  EXPECT_NE(mixed.output.find("use fsa"), std::string::npos) << mixed.output;
}

}  // namespace
}  // namespace geomx::cli

namespace geomx::cli {
namespace {

double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  return at == std::string::npos ? -1.0 : std::stod(json.substr(at + key.size() + 4));
}

// geomx predict on a neural run: the classes it writes for the test file give exactly the accuracy geomx eval
// computes on the same file (two paths through the model: PredictProbabilities and Evaluate).
TEST(NeuralPredictTest, CsvModelPredictionsAgreeWithEval) {
  ScratchDir dir;
  WriteFile(dir / "train.csv", CsvTable(400));
  std::string test = CsvTable(60);
  WriteFile(dir / "test.csv", test);
  WriteFile(dir / "r.yaml",
            "name: mlp\nthreads: 2\nmodel: {name: mlp, hidden: [16]}\n"
            "data: {name: csv, path: train.csv, test_path: test.csv, batch_size: 32}\n"
            "optimizer: {name: adam, lr: 0.01}\ntraining: {epochs: 3}\n");
  auto train = RunGeomx("train r.yaml --out run", dir.path());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  auto eval = RunGeomx("eval run --json", dir.path());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  const double accuracy = JsonNumber(eval.output, "test_accuracy");
  auto predict = RunGeomx("predict run test.csv --out p.csv", dir.path());
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const std::string p = testing::ReadFile(dir / "p.csv");
  ASSERT_EQ(p.rfind("prediction,p_neg,p_pos\n", 0), 0u) << p;
  // Compare row by row with the labels of test.csv (last column).
  std::vector<std::string> predicted, truth;
  for (size_t at = p.find('\n') + 1; at < p.size(); at = p.find('\n', at) + 1) predicted.push_back(p.substr(at, 3));
  for (size_t at = test.find('\n') + 1; at < test.size(); at = test.find('\n', at) + 1) {
    const size_t end = test.find('\n', at);
    truth.push_back(test.substr(test.rfind(',', end) + 1, 3));
  }
  ASSERT_EQ(predicted.size(), 60u);
  ASSERT_EQ(truth.size(), 60u);
  int right = 0;
  for (size_t i = 0; i < truth.size(); ++i) right += predicted[i] == truth[i];
  EXPECT_NEAR(right / 60.0, accuracy, 1e-9) << eval.output;
}

TEST(NeuralPredictTest, ImageModelReadsIdxImagesAndRejectsOtherFiles) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  }
  ScratchDir dir;
  WriteFile(dir / "r.yaml",
            "name: fm\nthreads: 2\nmodel: {name: mlp, hidden: [16]}\ndata: {name: fashion-mnist, batch_size: 256}\n"
            "optimizer: {name: adam, lr: 0.01}\ntraining: {epochs: 1}\n");
  auto train = RunGeomx("train r.yaml --out run", dir.path());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  // Three 28x28 images: IDX header (magic 0x00000803, dims 3, 28, 28) and pixels.
  std::string idx = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 28, 0, 0, 0, 28};
  for (int i = 0; i < 3 * 28 * 28; ++i) idx.push_back(static_cast<char>((i * 7) % 256));
  WriteFile(dir / "three.idx", idx);
  auto predict = RunGeomx("predict run three.idx --out p.csv", dir.path());
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const std::string p = testing::ReadFile(dir / "p.csv");
  EXPECT_EQ(p.rfind("prediction,p_T-shirt/top,p_Trouser,", 0), 0u) << p;
  EXPECT_EQ(std::count(p.begin(), p.end(), '\n'), 4);
  // A labels file is not images: exit 2 naming the file, and no output.
  WriteFile(dir / "labels.idx", std::string({0, 0, 8, 1, 0, 0, 0, 2, 1, 2}));
  auto bad = RunGeomx("predict run labels.idx --out q.csv", dir.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("labels.idx: expected a 3-d u8 IDX image file"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "q.csv"));
}

}  // namespace
}  // namespace geomx::cli
