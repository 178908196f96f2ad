#include "nn/module.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/functions.h"
#include "nn/layers/batch_norm.h"
#include "nn/layers/linear.h"
#include "nn/layers/sequential.h"
#include "nn/loss.h"
#include "tests/testutil.h"

namespace geomx::nn {
namespace {

std::vector<std::string> Keys(Module& m) {
  std::vector<std::string> keys;
  for (Parameter* p : m.Parameters()) keys.push_back(p->key());
  return keys;
}

// Counts mode changes so propagation and the hook are observable.
class Probe : public Module {
 public:
  autograd::Variable Forward(const autograd::Variable& x) override { return x; }
  std::string TypeName() const override { return "Probe"; }
  int changes = 0;

 protected:
  void OnTrainModeChanged() override { ++changes; }
};

class Block : public Module {
 public:
  explicit Block(Rng& rng) {
    conv1_ = RegisterModule("conv1", std::make_unique<Linear>(4, 4, rng));
    bn_ = RegisterModule("bn", std::make_unique<BatchNorm2d>(4));
    probe = RegisterModule("probe", std::make_unique<Probe>());
    scale_ = RegisterParameter("scale", Tensor::Full(Shape{4}, 2.0f));
  }
  autograd::Variable Forward(const autograd::Variable& x) override {
    return autograd::Mul(bn_->Forward(conv1_->Forward(x)), autograd::Reshape(scale_->var(), Shape{4}));
  }
  std::string TypeName() const override { return "Block"; }
  Probe* probe;

 private:
  Linear* conv1_;
  BatchNorm2d* bn_;
  Parameter* scale_;
};

class Net : public Module {
 public:
  explicit Net(Rng& rng) {
    fc1_ = RegisterModule("fc1", std::make_unique<Linear>(3, 4, rng));
    auto stage = std::make_unique<Sequential>();
    stage->Add("block0", std::make_unique<Block>(rng));
    stage->Add(std::make_unique<Linear>(4, 2, rng));  // unnamed: position "1"
    stage2_ = RegisterModule("stage2", std::move(stage));
  }
  autograd::Variable Forward(const autograd::Variable& x) override { return stage2_->Forward(fc1_->Forward(x)); }
  std::string TypeName() const override { return "Net"; }
  Sequential* stage2_;

 private:
  Linear* fc1_;
};

TEST(ModuleTest, KeysAreHierarchicalAndInRegistrationOrder) {
  Rng rng(1);
  Net net(rng);
  EXPECT_EQ(Keys(net), (std::vector<std::string>{"fc1.weight", "fc1.bias", "stage2.block0.scale",
                                                 "stage2.block0.conv1.weight", "stage2.block0.conv1.bias",
                                                 "stage2.block0.bn.gamma", "stage2.block0.bn.beta",
                                                 "stage2.1.weight", "stage2.1.bias"}));
  std::vector<std::string> buffers;
  for (const auto& [name, t] : net.Buffers()) buffers.push_back(name);
  EXPECT_EQ(buffers, (std::vector<std::string>{"stage2.block0.bn.running_mean", "stage2.block0.bn.running_var"}));
}

TEST(ModuleTest, CountsParameters) {
  Rng rng(1);
  Net net(rng);
  // fc1 3*4+4, scale 4, conv1 4*4+4, bn 4+4, last 4*2+2
  EXPECT_EQ(net.NumParameters(), 16 + 4 + 20 + 8 + 10);
  Linear lin(5, 7, rng, LinearOptions{.bias = false});
  EXPECT_EQ(lin.NumParameters(), 35);
  EXPECT_EQ(lin.bias(), nullptr);
}

TEST(ModuleTest, TrainEvalPropagatesToEveryDescendant) {
  Rng rng(1);
  Net net(rng);
  Probe* probe = dynamic_cast<Block*>(net.stage2_->at(0))->probe;
  EXPECT_TRUE(net.training());
  EXPECT_TRUE(probe->training());
  net.Eval();
  EXPECT_FALSE(net.training());
  EXPECT_FALSE(net.stage2_->training());
  EXPECT_FALSE(probe->training());
  EXPECT_EQ(probe->changes, 1);
  net.Eval();  // no change, no hook
  EXPECT_EQ(probe->changes, 1);
  net.Train();
  EXPECT_TRUE(probe->training());
  EXPECT_EQ(probe->changes, 2);
}

TEST(ModuleTest, ZeroGradClearsEveryGradient) {
  Rng rng(1);
  Net net(rng);
  autograd::Variable x(testing::RandomTensor(Shape{5, 3}, 7));
  autograd::Variable loss = CrossEntropyLoss(net.Forward(x), Tensor::FromVectorI64({0, 1, 1, 0, 1}, Shape{5}));
  loss.Backward();
  for (Parameter* p : net.Parameters()) EXPECT_TRUE(p->grad().defined()) << p->key();
  net.ZeroGrad();
  for (Parameter* p : net.Parameters()) EXPECT_FALSE(p->grad().defined()) << p->key();
}

TEST(ModuleTest, ToMovesParametersAndBuffersKeepingValues) {
  Rng rng(1);
  Net net(rng);
  for (Device d : AvailableDevices()) {
    const Tensor before = net.Parameters()[0]->data().Clone();
    net.To(d);
    for (Parameter* p : net.Parameters()) EXPECT_EQ(p->data().device(), d) << p->key();
    for (const auto& [name, t] : net.Buffers()) EXPECT_EQ(t->device(), d) << name;
    net.To(Device::Cpu());
    EXPECT_TRUE(testing::AllClose(net.Parameters()[0]->data(), before, 0.0f, 0.0f));
  }
}

TEST(ModuleTest, SummaryListsModulesWithCounts) {
  Rng rng(1);
  Net net(rng);
  const std::string s = net.Summary();
  EXPECT_NE(s.find("(root): Net (58 params)"), std::string::npos) << s;
  EXPECT_NE(s.find("  fc1: Linear (16 params)"), std::string::npos) << s;
  EXPECT_NE(s.find("    stage2.block0: Block (32 params)"), std::string::npos) << s;
  EXPECT_NE(s.find("      stage2.block0.bn: BatchNorm2d (8 params)"), std::string::npos) << s;
}

}  // namespace
}  // namespace geomx::nn
