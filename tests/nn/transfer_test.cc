// nn/transfer.h: the layers of a model, freezing the first ones (no gradient, no optimizer state, left out of the
// trainable parameters) and starting a model from a checkpoint by key name.
#include "nn/transfer.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "nn/loss.h"
#include "nn/models/models.h"
#include "tests/testutil.h"

namespace geomx::nn {
namespace {

using autograd::Variable;

// An MLP on 1x4x4 inputs: fc1 (8), fc2 (6), fc3 (classes).
std::unique_ptr<Module> Mlp(uint64_t seed, int classes, std::vector<int> hidden = {8, 6}) {
  ModelConfig c;
  c.name = "mlp";
  c.hidden = std::move(hidden);
  c.in_channels = 1;
  c.in_height = c.in_width = 4;
  c.num_classes = classes;
  Rng rng(seed);
  return std::move(CreateModel(c, rng)).value();
}

std::vector<std::string> Keys(const std::vector<Parameter*>& params) {
  std::vector<std::string> keys;
  for (Parameter* p : params) keys.push_back(p->key());
  return keys;
}

std::map<std::string, std::vector<float>> Weights(Module& m) {
  std::map<std::string, std::vector<float>> w;
  for (Parameter* p : m.Parameters()) w[p->key()] = p->data().ToFloatVector();
  return w;
}

TEST(TransferTest, GeomxCnnHasFiveLayers) {
  ModelConfig c;  // geomx-cnn on 1x28x28, 10 classes
  Rng rng(1);
  auto cnn = std::move(CreateModel(c, rng)).value();
  EXPECT_EQ(ParameterLayers(*cnn), (std::vector<std::string>{"conv1", "conv2", "fc1", "fc2", "fc3"}));
  EXPECT_EQ(ParameterLayers(*Mlp(1, 3)), (std::vector<std::string>{"fc1", "fc2", "fc3"}));
}

TEST(TransferTest, FrozenLayersGetNoGradientNoOptimizerStateAndDoNotMove) {
  auto m = Mlp(2, 3);
  ASSERT_TRUE(FreezeLayers(*m, 2).ok());
  EXPECT_EQ(Keys(m->TrainableParameters()), (std::vector<std::string>{"fc3.weight", "fc3.bias"}));
  EXPECT_EQ(m->Parameters().size(), 6u);  // still parameters of the model (checkpoints save them)
  const auto before = Weights(*m);

  OptimizerConfig oc;  // adam: state for every parameter it steps
  auto opt = std::move(CreateOptimizer(oc)).value();
  for (int step = 0; step < 3; ++step) {
    m->ZeroGrad();
    Variable x(testing::RandomTensor(Shape{4, 1, 4, 4}, 10 + step));
    CrossEntropyLoss(m->Forward(x), Tensor::FromVectorI64({0, 1, 2, 0}, Shape{4})).Backward();
    for (Parameter* p : m->Parameters()) {
      EXPECT_EQ(p->grad().defined(), p->key().rfind("fc3.", 0) == 0) << p->key();
    }
    opt->Step(m->Parameters());  // every parameter offered: the frozen ones have no gradient
  }
  std::vector<std::string> state;
  for (const auto& [name, t] : opt->StateDict()) state.push_back(name);
  EXPECT_EQ(state, (std::vector<std::string>{"fc3.bias/m", "fc3.bias/v", "fc3.weight/m", "fc3.weight/v"}));
  const auto after = Weights(*m);
  for (const char* frozen : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
    EXPECT_EQ(after.at(frozen), before.at(frozen)) << frozen;
  }
  EXPECT_NE(after.at("fc3.weight"), before.at("fc3.weight"));
}

TEST(TransferTest, FreezeZeroTrainsEverythingAndTooManyLayersIsRefused) {
  auto m = Mlp(3, 3);
  ASSERT_TRUE(FreezeLayers(*m, 0).ok());
  EXPECT_EQ(m->TrainableParameters().size(), 6u);
  for (int n : {3, 7, -1}) {
    Status s = FreezeLayers(*m, n);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << n;
    EXPECT_NE(s.message().find("model.freeze: " + std::to_string(n)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("has 3 parameterised layers"), std::string::npos) << s.message();
  }
}

class InitFromTest : public ::testing::Test {
 protected:
  // A 10-class source model saved with its optimizer state.
  std::filesystem::path SaveSource(Module& source) {
    OptimizerConfig oc;
    auto opt = std::move(CreateOptimizer(oc)).value();
    CheckpointMeta meta;
    meta.model_name = "mlp";
    const auto path = dir_ / "source.ckpt";
    EXPECT_TRUE(SaveCheckpoint(path, source, opt.get(), meta).ok());
    return path;
  }
  testing::ScratchDir dir_;
};

TEST_F(InitFromTest, CopiesMatchingKeysAndKeepsANewHeadFresh) {
  auto source = Mlp(4, 10);
  const auto path = SaveSource(*source);
  auto target = Mlp(5, 4);  // another seed and a 4-class head
  const auto fresh = Weights(*target);
  Result<InitFromReport> report = InitFromCheckpoint(path, "mlp", *target);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->loaded, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(report->kept_fresh, (std::vector<std::string>{"fc3.weight", "fc3.bias"}));
  EXPECT_TRUE(report->not_in_file.empty());
  const auto src = Weights(*source);
  const auto got = Weights(*target);
  for (const char* k : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) EXPECT_EQ(got.at(k), src.at(k)) << k;
  EXPECT_EQ(got.at("fc3.weight"), fresh.at("fc3.weight"));
  EXPECT_NE(got.at("fc1.weight"), fresh.at("fc1.weight"));
}

TEST_F(InitFromTest, ParametersTheFileLacksAreListed) {
  auto source = Mlp(6, 4, {8});  // fc1 [8x16], fc2 [4x8]
  const auto path = SaveSource(*source);
  auto target = Mlp(7, 4, {8, 6});  // fc1 [8x16], fc2 [6x8], fc3 [4x6]
  Result<InitFromReport> report = InitFromCheckpoint(path, "mlp", *target);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->loaded, (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
  EXPECT_EQ(report->kept_fresh, (std::vector<std::string>{"fc2.weight", "fc2.bias"}));
  EXPECT_EQ(report->not_in_file, (std::vector<std::string>{"fc3.weight", "fc3.bias"}));
}

TEST_F(InitFromTest, ErrorsChangeNothing) {
  auto source = Mlp(8, 10, {3});
  const auto path = SaveSource(*source);
  auto target = Mlp(9, 10);
  const auto before = Weights(*target);

  Result<InitFromReport> other_model = InitFromCheckpoint(path, "geomx-cnn", *target);
  EXPECT_EQ(other_model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other_model.status().message().find("checkpoint of 'mlp', not of the recipe's model 'geomx-cnn'"),
            std::string::npos)
      << other_model.status().message();

  Result<InitFromReport> no_match = InitFromCheckpoint(path, "mlp", *target);  // fc1 [3x16], fc2 [10x3]
  EXPECT_EQ(no_match.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_match.status().message().find("no tensor"), std::string::npos) << no_match.status().message();

  EXPECT_EQ(InitFromCheckpoint(dir_ / "missing.ckpt", "mlp", *target).status().code(), StatusCode::kNotFound);
  testing::WriteFile(dir_ / "notes.txt", "not a checkpoint at all, just some text");
  EXPECT_EQ(InitFromCheckpoint(dir_ / "notes.txt", "mlp", *target).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(Weights(*target), before);
}

}  // namespace
}  // namespace geomx::nn
