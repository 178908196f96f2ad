// `geomx bench algos` (bench/algos_bench.h): the table file the peer reads, read back by an independent reader
// written here from the format's description; the case selection with its did-you-mean; the command's refusals
// (exit 2); the cases' declarations (their estimators accept their parameters, the tree cases match their recipes,
// the peer script knows every case); and, when Debian's python3 has scikit-learn (and XGBoost), the peer's tree
// cases on a tiny table and a --quick run of cheap cases whose JSON holds both sides' metrics. Nothing here depends
// on timing.
#include "bench/algos_bench.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "cli/recipe.h"
#include "tests/testutil.h"

namespace geomx::bench {
namespace {

namespace fs = std::filesystem;

// ---- an independent reader of the table file (the layout as algos_bench.h documents it) ----

struct ReadBack {
  std::string magic;
  int64_t header[7] = {};
  std::vector<float> x;
  std::vector<int32_t> labels;
  std::vector<float> targets;
  std::vector<int64_t> qids;
  size_t file_size = 0;
  size_t consumed = 0;
};

template <typename T>
T LittleEndianAt(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (size_t b = 0; b < sizeof(T); ++b) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + b])) << (8 * b);
  }
  T out;
  if constexpr (sizeof(T) == 4) {
    const uint32_t v32 = static_cast<uint32_t>(v);
    std::memcpy(&out, &v32, 4);
  } else {
    std::memcpy(&out, &v, 8);
  }
  return out;
}

template <typename T>
std::vector<T> Section(const std::string& bytes, size_t count, size_t* at) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = LittleEndianAt<T>(bytes, *at + i * sizeof(T));
  *at += (count * sizeof(T) + 7) / 8 * 8;
  return v;
}

ReadBack Read(const fs::path& path) {
  const std::string bytes = testing::ReadFile(path);
  ReadBack r;
  r.file_size = bytes.size();
  if (bytes.size() < 64) return r;
  r.magic = bytes.substr(0, 8);
  for (int i = 0; i < 7; ++i) r.header[i] = LittleEndianAt<int64_t>(bytes, 8 + 8 * static_cast<size_t>(i));
  const size_t rows = static_cast<size_t>(r.header[0]), cols = static_cast<size_t>(r.header[1]);
  size_t at = 64;
  r.x = Section<float>(bytes, rows * cols, &at);
  if (r.header[3] != 0) r.labels = Section<int32_t>(bytes, rows, &at);
  if (r.header[4] != 0) r.targets = Section<float>(bytes, rows, &at);
  if (r.header[5] != 0) r.qids = Section<int64_t>(bytes, rows, &at);
  r.consumed = at;
  return r;
}

TEST(AlgosBenchTable, DenseClassificationTableRoundTrips) {
  data::Table t;
  t.rows = 3;
  t.cols = 3;  // 9 floats: 36 bytes, so the features section is padded
  t.dense = {1.5f, -2.0f, 0.0f, 3.25f, 1e-7f, -0.0f, 7.0f, 8.0f, -9.5f};
  t.labels = {2, 0, 1};
  t.num_classes = 3;
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteBenchTable(t, (dir / "t.bin").string()).ok());
  const ReadBack r = Read(dir / "t.bin");
  EXPECT_EQ(r.magic, "GXTBL001");
  EXPECT_EQ(r.header[0], 3);
  EXPECT_EQ(r.header[1], 3);
  EXPECT_EQ(r.header[2], 3);
  EXPECT_EQ(r.header[3], 1);
  EXPECT_EQ(r.header[4], 0);
  EXPECT_EQ(r.header[5], 0);
  EXPECT_EQ(r.header[6], 0);
  EXPECT_EQ(r.x, t.dense);
  EXPECT_EQ(r.labels, t.labels);
  EXPECT_TRUE(r.targets.empty());
  EXPECT_TRUE(r.qids.empty());
  // 64 header + 40 (36 padded) + 16 (12 padded): nothing after the last section.
  EXPECT_EQ(r.file_size, 64u + 40u + 16u);
  EXPECT_EQ(r.consumed, r.file_size);
}

TEST(AlgosBenchTable, RankingTableWithTargetsAndQidsRoundTrips) {
  data::Table t;
  t.rows = 5;
  t.cols = 1;
  t.dense = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
  t.targets = {0, 4, 1, 3, 2};
  t.qids = {7, 7, 7, int64_t{1} << 40, int64_t{1} << 40};
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteBenchTable(t, (dir / "t.bin").string()).ok());
  const ReadBack r = Read(dir / "t.bin");
  EXPECT_EQ(r.header[3], 0);
  EXPECT_EQ(r.header[4], 1);
  EXPECT_EQ(r.header[5], 1);
  EXPECT_EQ(r.x, t.dense);
  EXPECT_TRUE(r.labels.empty());
  EXPECT_EQ(r.targets, t.targets);
  EXPECT_EQ(r.qids, t.qids);
  EXPECT_EQ(r.consumed, r.file_size);
}

TEST(AlgosBenchTable, SparseTableIsWrittenDensely) {
  data::Table t;
  t.rows = 2;
  t.cols = 4;
  t.sparse = true;
  t.row_ptr = {0, 2, 3};
  t.col_index = {0, 3, 2};
  t.values = {1.0f, -4.0f, 2.5f};
  t.targets = {0.25f, -1.0f};
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteBenchTable(t, (dir / "t.bin").string()).ok());
  const ReadBack r = Read(dir / "t.bin");
  EXPECT_EQ(r.x, (std::vector<float>{1.0f, 0.0f, 0.0f, -4.0f, 0.0f, 0.0f, 2.5f, 0.0f}));
  EXPECT_EQ(r.targets, t.targets);
  EXPECT_EQ(r.consumed, r.file_size);
}

TEST(AlgosBenchTable, UnwritablePathIsAnError) {
  data::Table t;
  t.rows = 1;
  t.cols = 1;
  t.dense = {1.0f};
  EXPECT_EQ(WriteBenchTable(t, "/nonexistent-dir/x/t.bin").code(), StatusCode::kInvalidArgument);
}

TEST(AlgosBenchCases, SelectionKeepsListOrderAndRejectsUnknownNamesWithDidYouMean) {
  auto all = SelectAlgosCases({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), AlgosCases().size());
  auto two = SelectAlgosCases({"knn", "logreg"});
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0]->name, "logreg");
  EXPECT_EQ((*two)[1]->name, "knn");
  auto bad = SelectAlgosCases({"logreg", "kmean"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("did you mean 'kmeans'"), std::string::npos) << bad.status().message();
  auto far = SelectAlgosCases({"gradient-boosting"});
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().message().find("did you mean"), std::string::npos) << far.status().message();
  EXPECT_NE(far.status().message().find("ranksvm"), std::string::npos) << far.status().message();
}

TEST(AlgosBenchCases, EveryCaseIsComplete) {
  for (const AlgosCase& c : AlgosCases()) {
    EXPECT_FALSE(c.estimator.empty()) << c.name;
    EXPECT_FALSE(c.metrics.empty()) << c.name;
    EXPECT_FALSE(c.peer.empty()) << c.name;
    EXPECT_GT(c.quick_train_rows, 0) << c.name;
    EXPECT_GT(c.quick_test_rows, 0) << c.name;
    EXPECT_TRUE(c.data == "fashion-mnist" || c.data == "friedman1" || c.data == "letor-synthetic") << c.name;
    EXPECT_TRUE(c.scale == "standard" || c.scale == "none") << c.name;
  }
}

// The bench drops a parameter its estimator does not declare (with a note) rather than failing: catch the drift
// here. Every case of an estimator in this build is created with exactly the case's parameters.
TEST(AlgosBenchCases, EveryEstimatorInThisBuildAcceptsItsCaseParameters) {
  for (const AlgosCase& c : AlgosCases()) {
    if (algorithms::EstimatorRegistry::Find(c.estimator) == nullptr) continue;
    auto est = algorithms::CreateEstimator(c.estimator, c.params);
    EXPECT_TRUE(est.ok()) << c.name << ": " << est.status().message();
  }
  EXPECT_NE(algorithms::EstimatorRegistry::Find("xgboost"), nullptr);
  EXPECT_NE(algorithms::EstimatorRegistry::Find("gbdt"), nullptr);
  EXPECT_NE(algorithms::EstimatorRegistry::Find("random-forest"), nullptr);
}

// Two parameter texts that mean the same: equal numbers ("0" and "0.0"), else equal words.
bool SameValue(const std::string& a, const std::string& b) {
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a);
  const double y = std::strtod(b.c_str(), &end_b);
  const bool numbers = !a.empty() && !b.empty() && *end_a == '\0' && *end_b == '\0';
  return numbers ? x == y : a == b;
}

// The tree cases run their recipes' settings on the recipes' data, at full size (60,000 / 10,000).
TEST(AlgosBenchCases, TreeCasesMatchTheirRecipes) {
  for (const std::string name : {"xgboost", "gbdt", "random-forest"}) {
    auto selected = SelectAlgosCases({name});
    ASSERT_TRUE(selected.ok()) << name << ": " << selected.status().message();
    ASSERT_EQ(selected->size(), 1u);
    const AlgosCase& c = *selected->front();
    std::string stem = name;  // recipes/random_forest.yaml for the case random-forest
    std::replace(stem.begin(), stem.end(), '-', '_');
    auto recipe = cli::LoadRecipe((testing::SourceDir() / "recipes" / (stem + ".yaml")).string());
    ASSERT_TRUE(recipe.ok()) << recipe.status().message();
    ASSERT_TRUE(recipe->has_algorithm) << name;
    EXPECT_EQ(c.estimator, recipe->algorithm.name);
    // The recipe comes back with every parameter resolved: those the case gives agree, the others are at the
    // estimator's default (which the bench's geomx side then uses too).
    const algorithms::EstimatorDef* def = algorithms::EstimatorRegistry::Find(c.estimator);
    ASSERT_NE(def, nullptr) << name;
    for (const auto& [k, v] : c.params) {
      const auto it = recipe->algorithm.params.find(k);
      ASSERT_NE(it, recipe->algorithm.params.end()) << name << ": case parameter " << k << " unknown to the recipe";
      EXPECT_TRUE(SameValue(it->second, v)) << name << ": " << k << " = " << v << " in the case, " << it->second
                                            << " in the recipe";
    }
    for (const algorithms::ParamSpec& spec : def->params) {
      const auto it = recipe->algorithm.params.find(spec.name);
      if (c.params.contains(spec.name) || it == recipe->algorithm.params.end()) continue;
      EXPECT_TRUE(SameValue(it->second, spec.default_value))
          << name << ": the recipe sets " << spec.name << " = " << it->second << ", which the case does not give";
    }
    EXPECT_EQ(c.data, recipe->data.name) << name;
    EXPECT_EQ(c.scale, recipe->data.scale) << name;
    EXPECT_EQ(c.train_rows, 0) << name;
    EXPECT_EQ(c.test_rows, 0) << name;
  }
}

// ---- the command through the geomx binary ----

TEST(AlgosBenchCommand, UnknownOnlyNameExits2WithDidYouMean) {
  const testing::CommandResult r = testing::RunGeomx("bench algos --only logreg,linear-svn --no-peer");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown case 'linear-svn' (did you mean 'linear-svm'?)"), std::string::npos) << r.output;
}

TEST(AlgosBenchCommand, MissingPythonExits2NamingThePackage) {
  testing::ScratchDir dir;
  const testing::CommandResult r = testing::RunGeomx(
      "bench algos --quick --only svr --python /nonexistent/python3 --out " + (dir / "a.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("python3-sklearn"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "a.json"));
}

// Why the scikit-learn peer cannot run here ("" when it can).
std::string PeerUnavailableReason() {
  if (!fs::exists("/usr/bin/python3")) return "no /usr/bin/python3";
  if (std::system("/usr/bin/python3 -c 'import numpy, scipy, sklearn, threadpoolctl' >/dev/null 2>&1") != 0) {
    return "/usr/bin/python3 cannot import numpy, scipy, sklearn, threadpoolctl (Debian python3-sklearn)";
  }
  return "";
}

using testing::RunShell;

// The number after "key": in `json`, or NaN.
double NumberAfter(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return std::nan("");
  const std::string rest = json.substr(at + key.size() + 4, 40);
  char* end = nullptr;
  const double v = std::strtod(rest.c_str(), &end);
  return end == rest.c_str() ? std::nan("") : v;
}

// A small, well-separated 3-class table (labels 0, 1, 2; 5 features shifted by the label).
data::Table TinyClassificationTable(int64_t rows, uint64_t seed) {
  data::Table t;
  t.rows = rows;
  t.cols = 5;
  t.num_classes = 3;
  uint64_t state = seed;
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t label = static_cast<int32_t>(i % 3);
    t.labels.push_back(label);
    for (int64_t j = 0; j < t.cols; ++j) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      t.dense.push_back(static_cast<float>(label) + static_cast<float>(state >> 40) / static_cast<float>(1 << 24));
    }
  }
  return t;
}

// The peer's side of the tree cases, on a tiny table (not the bench's data): the script knows every case of the
// list (its unknown-case error names them), and its xgboost and gbdt entries print the result line geomx reads,
// with the case's settings. Threads 1: OpenMP on a busy 2-core machine would only add noise.
TEST(AlgosBenchPeer, ScriptKnowsEveryCaseAndRunsTheTreeCases) {
  const std::string why = PeerUnavailableReason();
  if (!why.empty()) GTEST_SKIP() << why;
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteBenchTable(TinyClassificationTable(150, 1), (dir / "train.bin").string()).ok());
  ASSERT_TRUE(WriteBenchTable(TinyClassificationTable(60, 2), (dir / "test.bin").string()).ok());
  const std::string peer = "/usr/bin/python3 '" + (testing::SourceDir() / "bench/peers/sklearn_algos.py").string() +
                           "' --data '" + dir.path().string() + "' --threads 1 --case ";

  const testing::CommandResult unknown = RunShell(peer + "no-such-case");
  EXPECT_NE(unknown.exit_code, 0) << unknown.output;
  const size_t listed = unknown.output.find("(cases: ");
  ASSERT_NE(listed, std::string::npos) << unknown.output;
  const std::string names = unknown.output.substr(listed);
  for (const std::string& n : AlgosCaseNames()) {
    EXPECT_TRUE(names.find(" " + n + ",") != std::string::npos || names.find(" " + n + ")") != std::string::npos)
        << "the peer has no case " << n << ": " << names;
  }

  std::vector<std::string> cases = {"gbdt"};
  if (std::system("/usr/bin/python3 -c 'import xgboost' >/dev/null 2>&1") == 0) {
    cases.push_back("xgboost");
  } else {
    std::printf("note: /usr/bin/python3 has no xgboost (Debian python3-xgboost): its peer case is not run\n");
  }
  for (const std::string& c : cases) {
    const testing::CommandResult r = RunShell(peer + c);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const size_t line = r.output.rfind("{\"case\": \"" + c + "\"");
    ASSERT_NE(line, std::string::npos) << r.output;
    const std::string json = r.output.substr(line);
    EXPECT_GE(NumberAfter(json, "fit_seconds"), 0) << json;
    EXPECT_GE(NumberAfter(json, "predict_seconds"), 0) << json;
    const double accuracy = NumberAfter(json, "accuracy");
    EXPECT_TRUE(accuracy >= 0 && accuracy <= 1) << json;
    EXPECT_EQ(NumberAfter(json, "train_rows"), 150.0) << json;
    EXPECT_EQ(NumberAfter(json, "test_rows"), 60.0) << json;
    if (c == "gbdt") {
      EXPECT_EQ(NumberAfter(json, "n_iter"), 100.0) << json;  // early stopping is off: every round is grown
      EXPECT_NE(json.find("max_leaf_nodes=31"), std::string::npos) << json;
      EXPECT_NE(json.find("max_bins=255"), std::string::npos) << json;
    } else {
      EXPECT_EQ(NumberAfter(json, "trees"), 300.0) << json;  // 100 rounds x 3 classes
      EXPECT_NE(json.find("tree_method='hist'"), std::string::npos) << json;
      EXPECT_NE(json.find("max_bin=256"), std::string::npos) << json;
    }
  }
}

// The lambdamart case's peer: XGBoost rank:ndcg on a tiny ranking table, its groups taken from the table's qids (the
// training rows come shuffled across queries, so a peer that ignored the qids would see one group per run of rows).
TEST(AlgosBenchPeer, LambdaMartCaseRunsXgboostRankNdcgOnTheQids) {
  const std::string why = PeerUnavailableReason();
  if (!why.empty()) GTEST_SKIP() << why;
  if (std::system("/usr/bin/python3 -c 'import xgboost' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no xgboost (Debian python3-xgboost)";
  }
  auto ranking = [](int64_t queries, uint64_t seed) {
    data::Table t;
    t.cols = 3;
    uint64_t state = seed;
    for (int64_t i = 0; i < queries * 10; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const float rel = static_cast<float>((state >> 33) % 3);
      t.dense.insert(t.dense.end(), {rel + static_cast<float>((state >> 40) % 100) / 200.0f, 0.5f, -rel});
      t.targets.push_back(rel);
      t.qids.push_back((i * 7) % queries);  // rows of a query interleaved
      ++t.rows;
    }
    return t;
  };
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteBenchTable(ranking(12, 1), (dir / "train.bin").string()).ok());
  ASSERT_TRUE(WriteBenchTable(ranking(5, 2), (dir / "test.bin").string()).ok());
  const testing::CommandResult r =
      RunShell("/usr/bin/python3 '" + (testing::SourceDir() / "bench/peers/sklearn_algos.py").string() + "' --data '" +
               dir.path().string() + "' --threads 1 --case lambdamart");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t line = r.output.rfind("{\"case\": \"lambdamart\"");
  ASSERT_NE(line, std::string::npos) << r.output;
  const std::string json = r.output.substr(line);
  EXPECT_EQ(NumberAfter(json, "queries"), 12.0) << json;
  EXPECT_GT(NumberAfter(json, "ndcg@10"), 0.99) << json;  // the first feature orders every query
  EXPECT_GT(NumberAfter(json, "map"), 0.99) << json;
  EXPECT_NE(json.find("rank:ndcg"), std::string::npos) << json;
}

// The JSON object of case `name` in the command's --out file.
std::string CaseObject(const std::string& json, const std::string& name) {
  const size_t at = json.find("{\"case\": \"" + name + "\"");
  if (at == std::string::npos) return "";
  const size_t end = json.find("\"notes\": [", at);
  return json.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

TEST(AlgosBenchCommand, QuickRunReportsBothSidesMetrics) {
  const std::string why = PeerUnavailableReason();
  if (!why.empty()) GTEST_SKIP() << why;
  // svr runs on generated data; logreg needs Fashion-MNIST (skipped from the check when it is not installed).
  std::vector<std::string> cases;
  if (algorithms::EstimatorRegistry::Find("svr") != nullptr) cases.push_back("svr");
  const bool have_fmnist = fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
  if (have_fmnist && algorithms::EstimatorRegistry::Find("logreg") != nullptr) cases.push_back("logreg");
  if (cases.empty()) GTEST_SKIP() << "neither svr nor logreg (with Fashion-MNIST) is in this build";
  std::string only;
  for (const std::string& c : cases) only += (only.empty() ? "" : ",") + c;

  testing::ScratchDir dir;
  const testing::CommandResult r = testing::RunGeomx("bench algos --quick --threads 1 --only " + only + " --out " +
                                                     (dir / "algos.json").string() + " --keep-data " +
                                                     (dir / "tables").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string json = testing::ReadFile(dir / "algos.json");
  EXPECT_NE(json.find("\"quick\": true"), std::string::npos) << json;
  for (const std::string& c : cases) {
    const std::string obj = CaseObject(json, c);
    ASSERT_FALSE(obj.empty()) << c << " missing from " << json;
    EXPECT_NE(obj.find("\"status\": \"ok\""), std::string::npos) << obj;
    const std::string key = c == "svr" ? "\"r2\": " : "\"accuracy\": ";
    const size_t geomx = obj.find("\"geomx\": {\"ran\": true");
    const size_t peer = obj.find("\"peer\": {\"ran\": true");
    ASSERT_NE(geomx, std::string::npos) << obj;
    ASSERT_NE(peer, std::string::npos) << obj;
    ASSERT_LT(geomx, peer) << obj;
    // Each side's metrics object holds the case's metric: geomx's between the two objects, the peer's after.
    const size_t ours = obj.find(key, geomx);
    EXPECT_LT(ours, peer) << obj;
    EXPECT_NE(obj.find("\"metrics\": {" + key, peer), std::string::npos) << obj;
    EXPECT_NE(obj.find("\"fit_ratio\": "), std::string::npos) << obj;
    // The tables the peer read are the ones geomx used: the row counts agree.
    const ReadBack train = Read(dir / "tables" / c / "train.bin");
    const ReadBack test = Read(dir / "tables" / c / "test.bin");
    EXPECT_NE(obj.find("\"train_rows\": " + std::to_string(train.header[0])), std::string::npos) << obj;
    EXPECT_NE(obj.find("\"test_rows\": " + std::to_string(test.header[0])), std::string::npos) << obj;
  }
  EXPECT_NE(r.output.find("fit x"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace geomx::bench
