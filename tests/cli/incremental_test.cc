// Incremental training through recipes (docs/algorithms.md, "feature-extraction", "fine-tune"): model.init_from,
// model.freeze and data.classes errors name the recipe position; across two data centres (every role as a thread)
// only the unfrozen parameters are keys, and the bytes on every link shrink to theirs.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/train/trainer.h"
#include "cli/cluster.h"
#include "cli/setup.h"
#include "comm/loopback_van.h"
#include "comm/shaped_van.h"
#include "nn/checkpoint.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/cli/recipe_test_util.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using recipe_testing::MustParse;

constexpr char kBase[] = R"(model:
  name: mlp
  hidden: [8]
data:
  name: synthetic
  synthetic_shape: [6]
  synthetic_classes: 4
)";

std::string PrepareError(const std::vector<std::string>& sets) {
  Result<RunSetup> s = PrepareRun(MustParse(kBase, sets));
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_TRUE(s.status().IsUserError()) << s.status().ToString();
  return s.status().message();
}

TEST(IncrementalRecipeTest, ErrorsNameTheKeyAndItsPosition) {
  testing::ScratchDir dir;
  EXPECT_EQ(PrepareError({"model.freeze=2"}),
            "--set model.freeze=2: model.freeze: 2 must be in [0, 2): the model has 2 parameterised layers and the "
            "last one trains");
  const std::string missing = (dir / "nothing-here").string();
  EXPECT_EQ(PrepareError({"model.init_from=" + missing}),
            "--set model.init_from=" + missing + ": model.init_from: " + missing +
                " does not exist (give a run folder of `geomx train` or a checkpoint file)");
  const std::string empty_run = (dir / "run").string();
  std::filesystem::create_directories(empty_run);
  EXPECT_NE(PrepareError({"model.init_from=" + empty_run}).find("is not a run folder with a checkpoint"),
            std::string::npos);
  testing::WriteFile(dir / "text.ckpt", "some text, not a checkpoint");
  EXPECT_NE(PrepareError({"model.init_from=" + (dir / "text.ckpt").string()}).find("model.init_from: "),
            std::string::npos);
  EXPECT_EQ(PrepareError({"data.classes=[1, 4]"}).rfind("--set data.classes=[1, 4]: data.classes: 4 is not a class", 0),
            0u);

  // From the file: the key's line and column.
  Result<RunSetup> s = PrepareRun(MustParse(std::string(kBase) + "  classes: [2, 2]\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "r.yaml:8:12: data.classes: class 2 is listed twice");
}

// data.score_within_classes picks the outputs a prediction is chosen among from data.classes: without them it is a
// recipe error (exit 2) at the key's position.
TEST(IncrementalRecipeTest, ScoringWithinClassesNeedsTheClasses) {
  Result<Recipe> flag = ParseRecipe(kBase, "r.yaml", {"data.score_within_classes=true"});
  ASSERT_FALSE(flag.ok());
  EXPECT_TRUE(flag.status().IsUserError()) << flag.status().ToString();
  EXPECT_EQ(flag.status().message(),
            "--set data.score_within_classes=true: data.score_within_classes: needs data.classes, the classes to "
            "predict among (e.g. data.classes: [0, 1, 2, 3, 4])");
  Result<Recipe> file = ParseRecipe(std::string(kBase) + "  score_within_classes: true\n", "r.yaml");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message().rfind("r.yaml:8:25: data.score_within_classes: needs data.classes", 0), 0u)
      << file.status().message();
  // An empty list is every class, so nothing to score within.
  EXPECT_FALSE(ParseRecipe(kBase, "r.yaml", {"data.classes=[]", "data.score_within_classes=true"}).ok());

  const Recipe within = MustParse(kBase, {"data.classes=[3, 1]", "data.score_within_classes=true"});
  EXPECT_EQ(train::ScoredClasses(within.data), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(train::ScoredClasses(MustParse(kBase, {"data.classes=[3, 1]"}).data).empty());
}

TEST(IncrementalRecipeTest, ACheckpointOfAnotherModelIsRefused) {
  testing::ScratchDir dir;
  Recipe cnn = MustParse("data: {name: synthetic, synthetic_shape: [1, 16, 16], synthetic_classes: 4}\n");
  auto cnn_setup = PrepareRun(cnn);
  ASSERT_TRUE(cnn_setup.ok()) << cnn_setup.status().ToString();
  nn::CheckpointMeta meta;
  meta.model_name = "geomx-cnn";
  ASSERT_TRUE(nn::SaveCheckpoint(dir / "cnn.ckpt", *cnn_setup->model, nullptr, meta).ok());
  const std::string msg = PrepareError({"model.init_from=" + (dir / "cnn.ckpt").string()});
  EXPECT_NE(msg.find("is a checkpoint of 'geomx-cnn', not of the recipe's model 'mlp'"), std::string::npos) << msg;
}

// Two data centres x two workers; an MLP 64 -> 256 -> 4: fc1 16,640 floats, fc2 (the head) 1,028.
Recipe TwoTier(int freeze, const std::string& init_from) {
  Recipe r = cluster_testing::TwoByTwoRecipe("incremental", 1);
  r.model.hidden = {256};
  r.data.synthetic_shape = {64};
  r.model.freeze = freeze;
  r.model.init_from = init_from;
  r.training.max_iterations = 6;
  return r;
}

struct Traffic {
  uint64_t lan = 0, wan = 0;  // bytes sent by every node over LAN and WAN links
};

Traffic RunCounted(const Recipe& r, std::map<std::string, cluster_testing::Weights>* finals) {
  comm::LoopbackNetwork net;
  std::mutex mu;
  std::map<std::string, std::unique_ptr<comm::TrafficCounters>> counters;
  const ClusterEnv env =
      cluster_testing::InProcessEnv("loop", [&](const std::string& node) -> std::unique_ptr<comm::Van> {
        std::lock_guard<std::mutex> lock(mu);
        auto& c = counters[node];
        c = std::make_unique<comm::TrafficCounters>();
        return std::make_unique<comm::ShapedVan>(std::make_unique<comm::LoopbackVan>(&net), comm::ShapedVanOptions{},
                                                 c.get());
      });
  *finals = cluster_testing::RunCluster(r, env);
  Traffic t;
  for (const auto& [node, c] : counters) {
    const comm::TrafficSnapshot s = c->Snapshot();
    t.lan += s.lan_bytes_sent;
    t.wan += s.wan_bytes_sent;
  }
  return t;
}

TEST(IncrementalClusterTest, OnlyTheUnfrozenKeysTravel) {
  testing::ScratchDir dir;
  // The source: the same network from another seed, saved as a checkpoint file.
  Recipe source = TwoTier(0, "");
  source.seed = 99;
  auto source_setup = PrepareRun(source);
  ASSERT_TRUE(source_setup.ok()) << source_setup.status().ToString();
  nn::CheckpointMeta meta;
  meta.model_name = "mlp";
  const std::string ckpt = (dir / "source.ckpt").string();
  ASSERT_TRUE(nn::SaveCheckpoint(ckpt, *source_setup->model, nullptr, meta).ok());
  const cluster_testing::Weights source_weights = cluster_testing::Snapshot(*source_setup->model);

  const Recipe frozen = TwoTier(1, ckpt);
  auto frozen_setup = PrepareRun(frozen);
  ASSERT_TRUE(frozen_setup.ok()) << frozen_setup.status().ToString();
  const ps::KeySchema schema = JobOf(frozen, *frozen_setup).schema;
  ASSERT_EQ(schema.keys().size(), 2u);
  EXPECT_EQ(schema.keys()[0].name, "fc2.weight");
  EXPECT_EQ(schema.keys()[0].elems, 1024u);
  EXPECT_EQ(schema.keys()[1].name, "fc2.bias");
  EXPECT_EQ(schema.keys()[1].elems, 4u);
  const Recipe full = TwoTier(0, ckpt);
  auto full_setup = PrepareRun(full);
  ASSERT_TRUE(full_setup.ok());
  EXPECT_EQ(JobOf(full, *full_setup).schema.keys().size(), 4u);

  std::map<std::string, cluster_testing::Weights> frozen_finals, full_finals;
  const Traffic f = RunCounted(frozen, &frozen_finals);
  const Traffic d = RunCounted(full, &full_finals);
  ASSERT_EQ(frozen_finals.size(), 4u);
  for (const auto& [worker, w] : frozen_finals) {
    ASSERT_EQ(w.size(), 4u);
    EXPECT_EQ(w[0], source_weights[0]) << worker << ": fc1.weight is frozen at the checkpoint's values";
    EXPECT_EQ(w[1], source_weights[1]) << worker;
    EXPECT_NE(w[2], source_weights[2]) << worker << ": the head trained";
    EXPECT_EQ(w[2], frozen_finals.begin()->second[2]) << worker << ": every worker holds the same head";
  }
  // Every link carries the same messages in both runs, only the parameter payload shrinks to the head's share:
  // 1,028 of 17,668 floats (5.8 %), plus the messages' fixed costs.
  const double share = 1028.0 / 17668.0;
  std::printf("[ bytes    ] frozen: lan %llu, wan %llu; full: lan %llu, wan %llu\n",
              static_cast<unsigned long long>(f.lan), static_cast<unsigned long long>(f.wan),
              static_cast<unsigned long long>(d.lan), static_cast<unsigned long long>(d.wan));
  ASSERT_GT(d.wan, 0u);
  ASSERT_GT(d.lan, 0u);
  for (const auto& [name, fb, db] : {std::tuple{"wan", f.wan, d.wan}, std::tuple{"lan", f.lan, d.lan}}) {
    const double ratio = static_cast<double>(fb) / static_cast<double>(db);
    EXPECT_GT(ratio, share) << name;
    EXPECT_LT(ratio, share * 1.2) << name;
  }
}

}  // namespace
}  // namespace geomx::cli
