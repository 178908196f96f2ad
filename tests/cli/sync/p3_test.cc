// P3 (cli/sync/p3.cc) end to end: every role of a 2x2 topology as threads over loopback vans. P3 reorders and
// overlaps communication but must not change the math: after the same iterations with SGD, the P3 workers hold
// fsa's weights. Also: every parameter of every model is reached by the before-forward hook P3 waits in, and a
// bad slice size is a recipe error naming its key (exit 2).
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "cli/recipe.h"
#include "cli/setup.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using cluster_testing::MaxDiff;
using cluster_testing::RunCluster;
using cluster_testing::Snapshot;
using cluster_testing::Weights;

Recipe MakeRecipe(bool p3, int epochs) {
  Recipe r = cluster_testing::TwoByTwoRecipe("p3", epochs);  // 16 iterations per epoch over 4 workers
  r.seed = 11;
  r.model.hidden = {16, 12};
  r.data.synthetic_test = 64;
  r.topology.global_servers = 2;
  r.accelerators.p3 = p3;
  r.accelerators.p3_slice_elements = 24;  // the 16x16 and 16x12 weights travel as 11 and 8 slices
  return r;
}

void ExpectP3MatchesFsa(Recipe fsa) {
  Recipe p3 = fsa;
  p3.accelerators.p3 = true;
  const auto with_p3 = RunCluster(p3);
  const auto without = RunCluster(fsa);
  ASSERT_EQ(with_p3.size(), 4u);
  ASSERT_EQ(without.size(), 4u);
  const Weights& ref = without.begin()->second;
  for (const auto& [name, w] : with_p3) EXPECT_LE(MaxDiff(w, ref), 1e-5f) << name << ": P3 vs fsa";
  // Training happened: the weights moved away from the initial ones.
  auto setup = PrepareRun(fsa);
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  EXPECT_GT(MaxDiff(Snapshot(*setup->model), ref), 1e-3f);
}

// Two epochs: rounds that overlap with the next forward pass and the synchronous epoch-end and last rounds.
TEST(P3Test, SameWeightsAsFsaWithServerOptimizer) { ExpectP3MatchesFsa(MakeRecipe(false, 2)); }

// MultiGPS on both tiers: the slices of one key are spread over two local and two global servers.
TEST(P3Test, SameWeightsAsFsaWithTwoLocalServers) {
  Recipe r = MakeRecipe(false, 1);
  for (auto& dc : r.topology.datacentres) dc.servers = 2;
  ExpectP3MatchesFsa(r);
}

// max_iterations mid-epoch: the last round (not an epoch end) must be complete in the final weights.
TEST(P3Test, SameWeightsAsFsaWhenStoppedMidEpoch) {
  Recipe r = MakeRecipe(false, 2);
  r.training.max_iterations = 21;
  ExpectP3MatchesFsa(r);
}

// Evaluation between rounds goes through the forward hooks (it consumes the pending answers).
TEST(P3Test, SameWeightsAsFsaWithEvaluationBetweenRounds) {
  Recipe r = MakeRecipe(false, 1);
  r.training.eval_every = 5;
  ExpectP3MatchesFsa(r);
}

// optimizer.where: worker: the answers are mean gradients and each worker's optimizer steps.
TEST(P3Test, SameWeightsAsFsaWithWorkerOptimizer) {
  Recipe r = MakeRecipe(false, 1);
  r.optimizer_where = "worker";
  ExpectP3MatchesFsa(r);
}

// P3 waits for a layer's parameters in the before-forward hook, so every parameter of every model must belong
// to a module that runs the hook during Forward (a new parameterised layer that forgets RunForwardHook() fails
// here).
TEST(P3Test, ForwardHookReachesEveryParameterOfEveryModel) {
  for (const std::string& name : nn::ModelNames()) {
    nn::ModelConfig config;
    config.name = name;
    config.hidden = {8};
    Rng rng(3);
    auto model = nn::CreateModel(config, rng);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status().ToString();
    std::set<const nn::Parameter*> hooked;
    (*model)->SetForwardHook([&](nn::Module& m) {
      for (nn::Parameter* p : m.OwnParameters()) hooked.insert(p);
    });
    Tensor x = Tensor::Zeros(Shape({2, config.in_channels, config.in_height, config.in_width}));
    (void)(*model)->Forward(autograd::Variable(x));
    for (nn::Parameter* p : (*model)->Parameters()) EXPECT_TRUE(hooked.count(p)) << name << ": " << p->key();
    // Removing the hook: nothing is called any more.
    (*model)->SetForwardHook(nullptr);
    hooked.clear();
    (void)(*model)->Forward(autograd::Variable(x));
    EXPECT_TRUE(hooked.empty()) << name;
  }
}

constexpr char kP3Recipe[] =
    "model: {name: mlp}\n"
    "data: {name: synthetic}\n"
    "topology:\n  datacentres:\n    - {name: dc-a}\n"
    "accelerators:\n  p3:\n    enabled: true\n";

TEST(P3Test, BadSliceSizeIsARecipeErrorNamingTheKey) {
  for (const char* bad : {"0", "-4", "many", "1.5"}) {
    Result<Recipe> r = ParseRecipe(std::string(kP3Recipe) + "    slice_elements: " + bad + "\n", "r.yaml", {});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("accelerators.p3.slice_elements"), std::string::npos)
        << bad << ": " << r.status().ToString();
  }
  Result<Recipe> ok = ParseRecipe(std::string(kP3Recipe) + "    slice_elements: 1000\n", "r.yaml", {});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->accelerators.p3_slice_elements, 1000);
}

TEST(P3Test, BadSliceSizeExits2WithTheKeyPath) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "r.yaml", kP3Recipe);
  auto run = testing::RunGeomx("train r.yaml --dry-run --set accelerators.p3.slice_elements=0", dir.path());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("accelerators.p3.slice_elements"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace geomx::cli
