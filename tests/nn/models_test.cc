#include "nn/models/models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/functions.h"
#include "nn/loss.h"
#include "nn/optim/optimizer.h"
#include "tests/testutil.h"

namespace geomx::nn {
namespace {

using autograd::Variable;

ModelConfig Config(const std::string& name, int c = 1, int h = 28, int w = 28) {
  ModelConfig m;
  m.name = name;
  m.in_channels = c;
  m.in_height = h;
  m.in_width = w;
  return m;
}

std::unique_ptr<Module> Make(const ModelConfig& c, uint64_t seed = 1) {
  Rng rng(seed);
  auto m = CreateModel(c, rng);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<std::string> Keys(Module& m) {
  std::vector<std::string> keys;
  for (Parameter* p : m.Parameters()) keys.push_back(p->key());
  return keys;
}

Shape OutputShape(Module& m, const Shape& in, Device d = Device::Cpu()) {
  return m.Forward(Variable(testing::RandomTensor(in, 5, -1, 1, d))).shape();
}

TEST(ModelsTest, RegistryListsTheBuiltIns) {
  EXPECT_EQ(ModelNames(), (std::vector<std::string>{"geomx-cnn", "lenet5", "mlp", "resnet20", "rnn"}));
}

TEST(ModelsTest, GeomxCnnIsExactlyTheDemoCnn) {
  auto m = Make(Config("geomx-cnn"));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->NumParameters(), 178762);
  EXPECT_EQ(Keys(*m),
            (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight",
                                      "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(m->Parameters()[0]->data().shape(), (Shape{16, 1, 5, 5}));
  EXPECT_EQ(m->Parameters()[4]->data().shape(), (Shape{256, 512}));
  for (Device d : AvailableDevices()) {
    m->To(d);
    EXPECT_EQ(OutputShape(*m, Shape{3, 1, 28, 28}, d), (Shape{3, 10}));
  }
}

// The model pools before its relu (the same function on a quarter of the values, conv_pool_net.cc): its output
// and every parameter gradient must equal those of the demo's order, conv - relu - pool, written here with the
// autograd functions on the model's own parameters. The input is shifted so that many windows are all negative.
TEST(ModelsTest, GeomxCnnEqualsReluThenPoolExactly) {
  auto m = Make(Config("geomx-cnn"));
  ASSERT_NE(m, nullptr);
  const std::vector<Parameter*> p = m->Parameters();
  const Tensor x = testing::RandomTensor(Shape{4, 1, 28, 28}, 9, -1.5f, 0.5f);
  const Tensor seed = testing::RandomTensor(Shape{4, 10}, 10, -1, 1);

  m->ZeroGrad();
  m->Forward(Variable(x)).Backward(seed);
  std::vector<std::vector<float>> model_grads;
  for (Parameter* q : p) model_grads.push_back(q->grad().ToFloatVector());
  m->ZeroGrad();
  const Tensor model_out = m->Forward(Variable(x)).data();

  namespace ag = autograd;
  const Pool2dParams pool;  // 2x2, stride 2
  const auto relu = [](const Variable& v) { return ag::Activation(ActivationKind::kRelu, v); };
  Variable h = ag::Pool2d(relu(ag::Conv2d(Variable(x), p[0]->var(), p[1]->var(), Conv2dParams{})), pool);
  h = ag::Flatten(ag::Pool2d(relu(ag::Conv2d(h, p[2]->var(), p[3]->var(), Conv2dParams{})), pool));
  h = relu(ag::Linear(h, p[4]->var(), p[5]->var()));
  h = relu(ag::Linear(h, p[6]->var(), p[7]->var()));
  Variable out = ag::Linear(h, p[8]->var(), p[9]->var());
  EXPECT_EQ(model_out.ToFloatVector(), out.data().ToFloatVector());
  out.Backward(seed);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(model_grads[i], p[i]->grad().ToFloatVector()) << p[i]->key();
}

TEST(ModelsTest, GeomxCnnDerivesFlattenSizeFromGeometry) {
  auto m = Make(Config("geomx-cnn", 3, 32, 32));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->Parameters()[4]->data().shape(), (Shape{256, 32 * 5 * 5}));
  EXPECT_EQ(OutputShape(*m, Shape{2, 3, 32, 32}), (Shape{2, 10}));
  Rng rng(1);
  auto small = CreateModel(Config("geomx-cnn", 1, 15, 28), rng);
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("16x16"), std::string::npos) << small.status().ToString();
}

TEST(ModelsTest, MlpFollowsConfig) {
  ModelConfig c = Config("mlp", 1, 4, 4);
  c.hidden = {32, 16};
  c.activation = "tanh";
  c.dropout = 0.2f;
  c.num_classes = 3;
  auto m = Make(c);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Keys(*m), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                                                "fc3.bias"}));
  EXPECT_EQ(m->NumParameters(), 16 * 32 + 32 + 32 * 16 + 16 + 16 * 3 + 3);
  EXPECT_EQ(OutputShape(*m, Shape{5, 1, 4, 4}), (Shape{5, 3}));
  // Eval disables dropout: two passes agree.
  m->Eval();
  Variable x(testing::RandomTensor(Shape{5, 1, 4, 4}, 8));
  EXPECT_TRUE(testing::AllClose(m->Forward(x).data(), m->Forward(x).data(), 0.0f, 0.0f));
  c.hidden = {};
  auto linear = Make(c);
  EXPECT_EQ(Keys(*linear), (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
}

TEST(ModelsTest, LeNet5Shapes) {
  auto m = Make(Config("lenet5"));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->NumParameters(), 61706);
  EXPECT_EQ(OutputShape(*m, Shape{2, 1, 28, 28}), (Shape{2, 10}));
  auto cifar = Make(Config("lenet5", 3, 32, 32));
  EXPECT_EQ(OutputShape(*cifar, Shape{2, 3, 32, 32}), (Shape{2, 10}));
}

TEST(ModelsTest, ResNet20ShapesKeysAndCount) {
  auto m = Make(Config("resnet20", 3, 32, 32));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->NumParameters(), 272474);
  const std::vector<std::string> keys = Keys(*m);
  for (const char* k : {"conv1.weight", "bn1.gamma", "stage1.block0.conv1.weight", "stage2.block0.conv1.weight",
                        "stage2.block0.shortcut.conv.weight", "stage3.block2.bn2.beta", "fc.weight", "fc.bias"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  }
  EXPECT_EQ(std::count_if(keys.begin(), keys.end(), [](const std::string& k) { return k.find("conv") != k.npos; }),
            19 + 2);  // 19 convolutions + 2 projection shortcuts
  EXPECT_EQ(m->Buffers().size(), 2u * (1 + 18 + 2));
  for (Device d : AvailableDevices()) {
    m->To(d);
    EXPECT_EQ(OutputShape(*m, Shape{2, 3, 32, 32}, d), (Shape{2, 10}));
    m->Eval();
    EXPECT_EQ(OutputShape(*m, Shape{2, 3, 32, 32}, d), (Shape{2, 10}));
    m->Train();
  }
  auto mnist = Make(Config("resnet20", 1, 28, 28));
  EXPECT_EQ(mnist->NumParameters(), 272186);
  EXPECT_EQ(OutputShape(*mnist, Shape{2, 1, 28, 28}), (Shape{2, 10}));
  Rng rng(1);
  EXPECT_EQ(CreateModel(Config("resnet20", 3, 1, 1), rng).status().code(), StatusCode::kInvalidArgument);
}

TEST(ModelsTest, SameSeedSameWeights) {
  for (const std::string& name : ModelNames()) {
    ModelConfig c = Config(name);
    auto a = Make(c, 42), b = Make(c, 42), other = Make(c, 43);
    auto pa = a->Parameters(), pb = b->Parameters(), po = other->Parameters();
    ASSERT_EQ(pa.size(), pb.size());
    bool any_differs = false;
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_EQ(pa[i]->data().ToFloatVector(), pb[i]->data().ToFloatVector()) << name << " " << pa[i]->key();
      any_differs |= pa[i]->data().ToFloatVector() != po[i]->data().ToFloatVector();
    }
    EXPECT_TRUE(any_differs) << name;
  }
}

TEST(ModelsTest, BadConfigsAreRejectedWithTheField) {
  Rng rng(1);
  ModelConfig c = Config("nope");
  EXPECT_EQ(CreateModel(c, rng).status().code(), StatusCode::kNotFound);
  c = Config("mlp");
  c.dropout = 1.0f;
  c.activation = "swish";
  c.hidden = {8, 0};
  auto r = CreateModel(c, rng);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  for (const char* want : {"model.dropout: must be in [0, 1), got 1", "model.activation: unknown 'swish'",
                           "model.hidden[1]: must be > 0, got 0"}) {
    EXPECT_NE(r.status().message().find(want), std::string::npos) << want << " in " << r.status().message();
  }
  c = Config("lenet5");
  c.init = "orthogonal";
  EXPECT_NE(ValidateModelConfig(c).message().find("model.init"), std::string::npos);
}

// Two well-separated classes of 8x8 images: class 0 is bright on the top half, class 1 on the bottom half, plus
// noise. Returns (images [n, 1, 8, 8], labels [n]).
std::pair<Tensor, Tensor> SeparableBatch(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n * 64));
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<int64_t>(rng.Below(2));
    for (int p = 0; p < 64; ++p) {
      const bool top = p < 32;
      x[i * 64 + p] = ((top == (y[i] == 0)) ? 1.0f : 0.0f) + 0.3f * static_cast<float>(rng.Normal());
    }
  }
  return {Tensor::FromVector(x, Shape{n, 1, 8, 8}), Tensor::FromVectorI64(y, Shape{n})};
}

float TrainAndReportLossRatio(const std::string& model, int steps) {
  ModelConfig c = Config(model, 1, model == "geomx-cnn" ? 16 : 8, model == "geomx-cnn" ? 16 : 8);
  c.num_classes = 2;
  c.hidden = {32};
  auto m = Make(c, 7);
  OptimizerConfig oc;
  oc.name = "adam";
  oc.lr = 0.01f;
  auto opt = CreateOptimizer(oc);
  float first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = SeparableBatch(32, 100 + s);
    if (model == "geomx-cnn") {  // upsample 8x8 -> 16x16 by repeating pixels
      std::vector<float> src = x.ToFloatVector(), up(32 * 256);
      for (int i = 0; i < 32; ++i) {
        for (int r = 0; r < 16; ++r) {
          for (int q = 0; q < 16; ++q) up[i * 256 + r * 16 + q] = src[i * 64 + (r / 2) * 8 + q / 2];
        }
      }
      x = Tensor::FromVector(up, Shape{32, 1, 16, 16});
    }
    m->ZeroGrad();
    Variable loss = CrossEntropyLoss(m->Forward(Variable(x)), y);
    loss.Backward();
    (*opt)->Step(m->Parameters());
    if (s == 0) first = loss.data().item();
    last = loss.data().item();
  }
  EXPECT_TRUE(std::isfinite(last));
  return last / first;
}

TEST(ModelsTest, MlpLearnsASeparableProblem) { EXPECT_LT(TrainAndReportLossRatio("mlp", 40), 0.2f); }

TEST(ModelsTest, GeomxCnnLearnsASeparableProblem) { EXPECT_LT(TrainAndReportLossRatio("geomx-cnn", 25), 0.2f); }

}  // namespace
}  // namespace geomx::nn
