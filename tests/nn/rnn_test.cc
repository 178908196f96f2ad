// The Recurrent layer and the `rnn` model (nn/layers/recurrent.h, nn/models/rnn.cc): parameters, shapes,
// initialisation, and that backpropagation through time carries information across steps (a task only memory can
// solve), for the LSTM and the GRU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "nn/layers/recurrent.h"
#include "nn/loss.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"
#include "tests/testutil.h"

namespace geomx::nn {
namespace {

using autograd::Variable;

std::unique_ptr<Module> MakeRnn(std::vector<int> hidden, int h, int w, int classes, uint64_t seed,
                                const std::string& cell = "lstm") {
  ModelConfig c;
  c.name = "rnn";
  c.cell = cell;
  c.hidden = std::move(hidden);
  c.in_height = h;
  c.in_width = w;
  c.num_classes = classes;
  Rng rng(seed);
  auto m = CreateModel(c, rng);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(RnnTest, KeysShapesAndForgetGateBias) {
  auto m = MakeRnn({16, 8}, 7, 5, 10, 1);
  ASSERT_NE(m, nullptr);
  std::vector<std::string> keys;
  std::vector<Shape> shapes;
  for (Parameter* p : m->Parameters()) {
    keys.push_back(p->key());
    shapes.push_back(p->data().shape());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"lstm1.weight_ih", "lstm1.weight_hh", "lstm1.bias", "lstm2.weight_ih",
                                            "lstm2.weight_hh", "lstm2.bias", "fc.weight", "fc.bias"}));
  EXPECT_EQ(shapes, (std::vector<Shape>{{64, 5}, {64, 16}, {64}, {32, 16}, {32, 8}, {32}, {10, 8}, {10}}));
  EXPECT_EQ(m->NumParameters(), 64 * 5 + 64 * 16 + 64 + 32 * 16 + 32 * 8 + 32 + 10 * 8 + 10);
  // Forget gate (the second quarter) starts at 1, the others at 0; weights within 1/sqrt(H).
  const std::vector<float> b = m->Parameters()[2]->data().ToFloatVector();
  for (int k = 0; k < 64; ++k) EXPECT_EQ(b[k], (k >= 16 && k < 32) ? 1.0f : 0.0f) << k;
  for (float v : m->Parameters()[1]->data().ToFloatVector()) EXPECT_LE(std::fabs(v), 0.25f);
  for (Device d : AvailableDevices()) {
    m->To(d);
    const Variable y = m->Forward(Variable(testing::RandomTensor(Shape{3, 1, 7, 5}, 2, -1, 1, d)));
    EXPECT_EQ(y.shape(), (Shape{3, 10})) << d.ToString();
  }
}

TEST(RnnTest, GruKeysShapesAndZeroBias) {
  auto m = MakeRnn({6}, 4, 3, 2, 1, "gru");
  ASSERT_NE(m, nullptr);
  std::vector<std::string> keys;
  std::vector<Shape> shapes;
  for (Parameter* p : m->Parameters()) {
    keys.push_back(p->key());
    shapes.push_back(p->data().shape());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"gru1.weight_ih", "gru1.weight_hh", "gru1.bias", "fc.weight", "fc.bias"}));
  EXPECT_EQ(shapes, (std::vector<Shape>{{18, 3}, {18, 6}, {36}, {2, 6}, {2}}));
  for (float v : m->Parameters()[2]->data().ToFloatVector()) EXPECT_EQ(v, 0.0f);
}

TEST(RnnTest, RefusesMultiChannelImagesAndNoLayers) {
  Rng rng(1);
  ModelConfig c;
  c.name = "rnn";
  c.in_channels = 3;
  auto r = CreateModel(c, rng);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("3 channels"), std::string::npos) << r.status().ToString();
  c.in_channels = 1;
  c.hidden = {};
  r = CreateModel(c, rng);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model.hidden"), std::string::npos) << r.status().ToString();
  c.hidden = {4};
  c.cell = "rnn_tanh";
  r = CreateModel(c, rng);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model.cell: unknown 'rnn_tanh'"), std::string::npos) << r.status().ToString();
}

// Eight rows of four noisy values; the class is the sign of the FIRST row's mean, the seven rows after it are
// noise. Only a network that keeps the first step in its state through seven more steps can beat chance, so a
// backward that does not reach the early steps (or a forward that forgets) fails this.
std::pair<Tensor, Tensor> FirstRowBatch(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n * 32));
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<int64_t>(rng.Below(2));
    for (int p = 0; p < 32; ++p) {
      const float signal = p < 4 ? (y[i] == 1 ? 1.0f : -1.0f) : 0.0f;
      x[i * 32 + p] = signal + 0.5f * static_cast<float>(rng.Normal());
    }
  }
  return {Tensor::FromVector(x, Shape{n, 1, 8, 4}), Tensor::FromVectorI64(y, Shape{n})};
}

class RnnLearningTest : public ::testing::TestWithParam<std::tuple<Device, std::string>> {};

TEST_P(RnnLearningTest, RemembersTheFirstStepAcrossSeven) {
  const auto& [d, cell] = GetParam();
  auto m = MakeRnn({16}, 8, 4, 2, 3, cell);
  ASSERT_NE(m, nullptr);
  m->To(d);
  OptimizerConfig oc;
  oc.name = "adam";
  oc.lr = 0.02f;
  auto opt = CreateOptimizer(oc);
  ASSERT_TRUE(opt.ok());
  for (int s = 0; s < 150; ++s) {
    auto [x, y] = FirstRowBatch(32, 100 + s);
    m->ZeroGrad();
    Variable loss = CrossEntropyLoss(m->Forward(Variable(x.To(d))), y.To(d));
    loss.Backward();
    (*opt)->Step(m->Parameters());
  }
  auto [x, y] = FirstRowBatch(400, 7);
  const std::vector<int64_t> pred = ops::ArgMax(m->Forward(Variable(x.To(d))).data()).To(Device::Cpu()).ToI64Vector();
  const std::vector<int64_t> want = y.ToI64Vector();
  int correct = 0;
  for (size_t i = 0; i < want.size(); ++i) correct += pred[i] == want[i] ? 1 : 0;
  // The first row's mean has noise sd 0.25 around +-1: a perfect reader scores ~100%; chance is 50%.
  EXPECT_GT(correct, 380) << d.ToString() << " " << cell;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, RnnLearningTest,
                         ::testing::Combine(::testing::ValuesIn(AvailableDevices()), ::testing::Values("lstm", "gru")),
                         [](const ::testing::TestParamInfo<std::tuple<Device, std::string>>& info) {
                           std::string s = std::get<0>(info.param).ToString() + "_" + std::get<1>(info.param);
                           for (char& ch : s) ch = ch == ':' ? '_' : ch;
                           return s;
                         });

}  // namespace
}  // namespace geomx::nn
