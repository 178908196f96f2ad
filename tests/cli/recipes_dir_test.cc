// The files that ship with the repository: every recipes/*.yaml loads and validates, and docs/recipes.md holds
// the current key reference generated from the schema (cli/recipe_schema.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "cli/recipe.h"
#include "cli/recipe_schema.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kBeginMarker[] = "<!-- BEGIN GENERATED KEY REFERENCE";
constexpr char kEndMarker[] = "<!-- END GENERATED KEY REFERENCE -->";

std::vector<fs::path> RecipeFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(testing::SourceDir() / "recipes")) {
    if (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Recipe MustLoad(const std::string& stem) {
  Result<Recipe> r = LoadRecipe((testing::SourceDir() / "recipes" / (stem + ".yaml")).string());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Recipe{};
}

std::string DocsText() { return testing::ReadFile(testing::SourceDir() / "docs" / "recipes.md"); }

TEST(RecipesDirTest, EveryRecipeLoadsValidatesAndRoundTrips) {
  std::vector<fs::path> files = RecipeFiles();
  EXPECT_GE(files.size(), 5u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    Result<Recipe> r = LoadRecipe(file.string());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->name, file.stem().string()) << "a recipe's name is its file name (docs/recipes.md)";
    std::string yaml = RecipeToYaml(*r);
    Result<Recipe> again = ParseRecipe(yaml, file.string());
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << yaml;
    EXPECT_EQ(RecipeToYaml(*again), yaml);
  }
}

TEST(RecipesDirTest, ShippedRecipesSayWhatTheyPromise) {
  Recipe quick = MustLoad("quickstart");
  EXPECT_EQ(quick.model.name, "geomx-cnn");
  EXPECT_EQ(quick.data.name, "fashion-mnist");
  EXPECT_EQ(quick.data.path, "auto");
  EXPECT_EQ(quick.device, "cpu") << "make run must work on a machine without a GPU";
  EXPECT_TRUE(quick.data.batch_size == 32 || quick.data.batch_size == 64);
  EXPECT_LE(quick.training.epochs, 8) << "the quick start must stay quick (docs/benchmarks.md)";

  Recipe fashion = MustLoad("fashion_cnn");
  EXPECT_EQ(fashion.model.name, "geomx-cnn");
  EXPECT_EQ(fashion.data.name, "fashion-mnist");
  EXPECT_GE(fashion.training.target_accuracy, 0.91f);
  EXPECT_NE(fashion.lr_schedule.name, "constant");

  Recipe smoke = MustLoad("synthetic_smoke");
  EXPECT_EQ(smoke.data.name, "synthetic");
  EXPECT_EQ(smoke.model.name, "mlp");
  EXPECT_LE(smoke.data.synthetic_train * smoke.training.epochs, 20000) << "the smoke recipe must stay tiny";

  EXPECT_EQ(MustLoad("mnist_mlp").model.name, "mlp");
  EXPECT_EQ(MustLoad("cifar10_resnet20").model.name, "resnet20");
  Recipe rnn = MustLoad("fashion_rnn");  // issue 15: the LSTM classifier reaches 0.88 (docs/algorithms.md, "rnn")
  EXPECT_EQ(rnn.model.name, "rnn");
  EXPECT_EQ(rnn.model.hidden, (std::vector<int>{128}));
  EXPECT_EQ(rnn.data.name, "fashion-mnist");
  EXPECT_GE(rnn.training.target_accuracy, 0.88f);
  EXPECT_FALSE(quick.has_topology) << "the single-process quick start stays single-process";
}

// GEO-2x2 (docs/product.md §7) and the parameter-server quick start (`make run`): the same two data centres.
TEST(RecipesDirTest, TopologyRecipesDescribeGeo2x2) {
  for (const char* stem : {"geo2x2", "quickstart_2dc"}) {
    SCOPED_TRACE(stem);
    Recipe r = MustLoad(stem);
    ASSERT_TRUE(r.has_topology);
    EXPECT_EQ(r.model.name, "geomx-cnn");
    EXPECT_EQ(r.data.name, "fashion-mnist");
    EXPECT_EQ(r.device, "cpu");
    EXPECT_EQ(r.optimizer_where, "global-server");
    const comm::Topology& t = r.topology;
    EXPECT_EQ(t.global_servers, 1);
    ASSERT_EQ(t.datacentres.size(), 2u);
    EXPECT_EQ(t.datacentres[0].name, "dc-a");
    EXPECT_EQ(t.datacentres[1].name, "dc-b");
    for (const comm::DataCentre& d : t.datacentres) {
      EXPECT_EQ(d.workers, 2);
      EXPECT_EQ(d.servers, 1);
      EXPECT_EQ(d.scheduler_port, 0) << "one host: geomx train picks the ports";
    }
    EXPECT_EQ(t.global_scheduler_port, 0);
    EXPECT_TRUE(t.Validate().ok());
  }
  Recipe geo = MustLoad("geo2x2");
  EXPECT_EQ(geo.topology.options.wan.bandwidth_bps, 50e6);
  EXPECT_DOUBLE_EQ(geo.topology.options.wan.latency_s, 0.025);
  EXPECT_FLOAT_EQ(geo.training.target_accuracy, 0.85f);
  Recipe quick = MustLoad("quickstart_2dc");
  EXPECT_EQ(quick.topology.options.wan.bandwidth_bps, 0) << "the quick start does not shape the WAN";
  EXPECT_EQ(quick.topology.options.wan.latency_s, 0);
  EXPECT_LE(quick.training.epochs, 8) << "the quick start must stay quick (about 40 s: docs/benchmarks.md)";
}

// Every algorithm recipe has a two-data-centre twin that fits the same algorithm on the same data, and every
// trainable estimator has a recipe.
TEST(RecipesDirTest, AlgorithmRecipesComeInPairs) {
  std::set<std::string> covered;
  for (const fs::path& file : RecipeFiles()) {
    const std::string stem = file.stem().string();
    if (stem.size() > 4 && stem.substr(stem.size() - 4) == "_2dc") continue;
    Recipe one = MustLoad(stem);
    if (!one.has_algorithm) continue;
    SCOPED_TRACE(stem);
    covered.insert(one.algorithm.name);
    EXPECT_FALSE(one.has_topology);
    ASSERT_TRUE(fs::exists(testing::SourceDir() / "recipes" / (stem + "_2dc.yaml")));
    Recipe two = MustLoad(stem + "_2dc");
    EXPECT_TRUE(two.has_topology);
    EXPECT_EQ(two.topology.datacentres.size(), 2u);
    EXPECT_EQ(two.algorithm.name, one.algorithm.name);
    // batch_size counts rows per worker: a twin may divide it by its workers to keep the same update.
    std::map<std::string, std::string> p1 = one.algorithm.params, p2 = two.algorithm.params;
    p1.erase("batch_size");
    p2.erase("batch_size");
    EXPECT_EQ(p2, p1);
    EXPECT_EQ(two.data.name, one.data.name);
    EXPECT_EQ(two.data.scale, one.data.scale);
  }
  for (const std::string& name : algorithms::EstimatorRegistry::Names()) {
    EXPECT_EQ(covered.count(name), 1u) << "no recipe trains " << name;
  }
}

TEST(RecipesDirTest, ReadmePointsToTheDocs) {
  std::string readme = testing::ReadFile(testing::SourceDir() / "recipes" / "README.md");
  EXPECT_NE(readme.find("docs/recipes.md"), std::string::npos);
}

TEST(RecipesDocsTest, EveryKeyIsDocumented) {
  std::string docs = DocsText();
  for (const RecipeKey& key : RecipeKeys()) {
    std::string quoted(1, '`');  // appended, not "`" + ...: GCC 12 warns falsely (-Wrestrict) on the latter
    quoted.append(key.path).push_back('`');
    EXPECT_NE(docs.find(quoted), std::string::npos) << key.path << " is not in docs/recipes.md";
  }
}

// The reference section of docs/recipes.md is RecipeSchemaMarkdown() verbatim, so types, defaults and ranges in
// the docs cannot drift from the code.
TEST(RecipesDocsTest, KeyReferenceIsCurrent) {
  std::string docs = DocsText();
  size_t begin = docs.find(kBeginMarker);
  size_t end = docs.find(kEndMarker);
  ASSERT_NE(begin, std::string::npos) << "docs/recipes.md lacks " << kBeginMarker;
  ASSERT_NE(end, std::string::npos) << "docs/recipes.md lacks " << kEndMarker;
  begin = docs.find('\n', begin) + 1;
  std::string expected(1, '\n');
  expected.append(RecipeSchemaMarkdown()).push_back('\n');
  if (std::getenv("GEOMX_UPDATE_DOCS") != nullptr) {  // GEOMX_UPDATE_DOCS=1 cli_tests --gtest_filter=*KeyReference*
    testing::WriteFile(testing::SourceDir() / "docs" / "recipes.md",
                       docs.substr(0, begin) + expected + docs.substr(end));
    return;
  }
  EXPECT_EQ(docs.substr(begin, end - begin), expected)
      << "regenerate the section between the markers in docs/recipes.md with the text above (Expected side)";
}

// Every ```yaml block in docs/recipes.md is a valid recipe (error examples use ```text).
TEST(RecipesDocsTest, YamlExamplesAreValid) {
  std::string docs = DocsText();
  int examples = 0;
  for (size_t at = docs.find("```yaml\n"); at != std::string::npos; at = docs.find("```yaml\n", at + 1)) {
    size_t start = at + 8;
    size_t stop = docs.find("```", start);
    ASSERT_NE(stop, std::string::npos);
    std::string block = docs.substr(start, stop - start);
    Result<Recipe> r = ParseRecipe(block, "docs/recipes.md example");
    EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << block;
    ++examples;
  }
  EXPECT_GE(examples, 2);
}

// The recipe of the worked example in docs/deployment.md is valid (and has the three hosts it describes).
// The first YAML block after `heading` in docs/deployment.md.
std::string DeploymentYaml(const std::string& heading) {
  std::string docs = testing::ReadFile(testing::SourceDir() / "docs" / "deployment.md");
  size_t at = docs.find("```yaml\n", docs.find(heading));
  EXPECT_NE(docs.find(heading), std::string::npos) << heading;
  if (at == std::string::npos) return "";
  size_t stop = docs.find("```", at + 8);
  return docs.substr(at + 8, stop - at - 8);
}

TEST(RecipesDocsTest, DeploymentExampleIsValid) {
  Result<Recipe> r = ParseRecipe(DeploymentYaml("### Worked example: three hosts"), "docs/deployment.md example");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->topology.datacentres.size(), 2u);
  EXPECT_EQ(r->topology.central_host, "10.0.0.1");
  EXPECT_EQ(r->topology.datacentres[1].host, "10.0.2.1");
}

// The uneven-WAN example says what the text around it explains.
TEST(RecipesDocsTest, UnevenWanExampleIsValid) {
  Result<Recipe> r = ParseRecipe(DeploymentYaml("### Uneven and lossy WANs"), "docs/deployment.md example");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const comm::NetworkShape n = r->topology.Network();
  EXPECT_EQ(n.Between("central", "dc-a").bandwidth_bps, 50e6);
  EXPECT_EQ(n.Between("central", "dc-b").loss, 0.02);
  EXPECT_EQ(n.Between("central", "dc-b").latency_s, 0.025);
  EXPECT_EQ(n.Between("dc-c", "central").bandwidth_bps, 10e6);
  EXPECT_EQ(n.Between("dc-c", "dc-b").latency_s, 0.002);
  EXPECT_DOUBLE_EQ(n.Between("dc-a", "dc-c").latency_s, 0.105);
}

std::vector<std::string> TextBlocks(const std::string& docs) {
  std::vector<std::string> blocks;
  for (size_t at = docs.find("```text\n"); at != std::string::npos; at = docs.find("```text\n", at + 1)) {
    size_t start = at + 8;
    size_t stop = docs.find("```", start);
    if (stop == std::string::npos) break;
    blocks.push_back(docs.substr(start, stop - start));
  }
  return blocks;
}

// The topology error example of docs/recipes.md is what the parser really prints.
TEST(RecipesDocsTest, TopologyErrorExampleIsCurrent) {
  std::vector<std::string> blocks = TextBlocks(DocsText());
  auto recipe = std::find_if(blocks.begin(), blocks.end(), [](const std::string& b) {
    return b.rfind("topology:\n  central: {scheduler_port: 9000}\n", 0) == 0;
  });
  ASSERT_NE(recipe, blocks.end()) << "the topology error example is gone";
  ASSERT_NE(recipe + 1, blocks.end());
  Result<Recipe> r = ParseRecipe(*recipe, "geo.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message() + "\n", *(recipe + 1));
}

// The error example of docs/recipes.md is what the parser really prints.
TEST(RecipesDocsTest, ErrorExampleIsCurrent) {
  std::vector<std::string> blocks = TextBlocks(DocsText());
  auto recipe = std::find_if(blocks.begin(), blocks.end(),
                             [](const std::string& b) { return b.rfind("name: fashion-try\n", 0) == 0; });
  ASSERT_NE(recipe, blocks.end()) << "the error example (a ```text block starting 'name: fashion-try') is gone";
  ASSERT_NE(recipe + 1, blocks.end());
  Result<Recipe> r = ParseRecipe(*recipe, "broken.yaml", {"data.partition=dirichlet", "model.hidden=[64,x]"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message() + "\n", *(recipe + 1));
}

}  // namespace
}  // namespace geomx::cli
