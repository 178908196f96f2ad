// Gradient-norm clipping (grad_clip.h): hand-built gradients with a known global norm, and TrainStep/Trainer with
// optimizer.clip_norm set.
#include "algorithms/train/grad_clip.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/train/trainer.h"
#include "datasets/dataset.h"
#include "engine/autograd/functions.h"
#include "engine/backend_registry.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"
#include "tests/testutil.h"

namespace geomx::train {
namespace {

using autograd::Variable;

// Gives a the gradient ga and b the gradient gb: d/dp sum(p * c) = c.
void SetGrads(nn::Parameter* a, const Tensor& ga, nn::Parameter* b, const Tensor& gb) {
  autograd::Add(autograd::Sum(autograd::Mul(a->var(), Variable(ga))),
                autograd::Sum(autograd::Mul(b->var(), Variable(gb))))
      .Backward();
}

TEST(GradClipTest, ScalesEveryGradientToTheGlobalNormOnEveryDevice) {
  for (const Device d : AvailableDevices()) {
    SCOPED_TRACE(d.ToString());
    // Gradients {1, 2, 2} (norm 3) and {{4}} (norm 4): global norm sqrt(9 + 16) = 5.
    nn::Parameter a("a", Tensor::Zeros({3}, DType::kF32, d)), b("b", Tensor::Zeros({1, 1}, DType::kF32, d));
    nn::Parameter frozen("frozen", Tensor::Zeros({2}, DType::kF32, d));  // never gets a gradient
    SetGrads(&a, Tensor::FromVector({1, 2, 2}, {3}, d), &b, Tensor::FromVector({4}, {1, 1}, d));
    ASSERT_FALSE(frozen.grad().defined());
    const std::vector<nn::Parameter*> params{&a, &frozen, &b};

    // Above the threshold: every gradient times 2 / 5 (PyTorch: max_norm / (norm + 1e-6)).
    EXPECT_NEAR(ClipGradNorm(params, 2.0f), 5.0, 1e-5);
    EXPECT_TRUE(testing::AllClose(a.grad().ToFloatVector(), {0.4f, 0.8f, 0.8f}, 1e-5f, 1e-6f));
    EXPECT_TRUE(testing::AllClose(b.grad().ToFloatVector(), {1.6f}, 1e-5f, 1e-6f));
    EXPECT_FALSE(frozen.grad().defined());
    EXPECT_EQ(b.grad().shape(), Shape({1, 1}));

    // Now the norm is 2: a threshold at or above it leaves the gradients exactly as they are.
    const std::vector<float> ga = a.grad().ToFloatVector(), gb = b.grad().ToFloatVector();
    EXPECT_NEAR(ClipGradNorm(params, 2.5f), 2.0, 1e-5);
    EXPECT_NEAR(ClipGradNorm(params, 100.0f), 2.0, 1e-5);
    EXPECT_EQ(a.grad().ToFloatVector(), ga);
    EXPECT_EQ(b.grad().ToFloatVector(), gb);
  }
}

TEST(GradClipTest, NoGradientsIsANormOfZero) {
  nn::Parameter p("p", Tensor::Zeros({2}));
  EXPECT_EQ(ClipGradNorm({&p}, 1.0f), 0.0);
}

struct TinyRun {
  data::DatasetSplits splits;
  std::unique_ptr<nn::Module> model;
  std::unique_ptr<nn::Optimizer> opt;
  std::unique_ptr<data::DataLoader> loader;
};

TinyRun MakeRun(const char* optimizer, float lr) {
  TinyRun s;
  data::DataConfig dc;
  dc.name = "synthetic";
  dc.synthetic_train = 256;
  dc.synthetic_test = 128;
  dc.synthetic_classes = 4;
  dc.synthetic_shape = {16};
  s.splits = std::move(data::OpenDataset(dc)).value();
  nn::ModelConfig mc;
  mc.name = "mlp";
  mc.hidden = {16};
  mc.in_channels = 1;
  mc.in_height = 1;
  mc.in_width = 16;
  mc.num_classes = 4;
  Rng rng(3);
  s.model = std::move(nn::CreateModel(mc, rng)).value();
  nn::OptimizerConfig oc;
  oc.name = optimizer;
  oc.lr = lr;
  s.opt = std::move(nn::CreateOptimizer(oc)).value();
  data::LoaderOptions lo;
  lo.batch_size = 32;
  lo.seed = 5;
  lo.prefetch = 0;
  s.loader = std::make_unique<data::DataLoader>(s.splits.train, lo);
  return s;
}

// Plain SGD with lr 1 moves the weights by exactly the (clipped) gradient: the step's global L2 length is the
// clip threshold when the raw gradient is longer.
TEST(GradClipTest, TrainStepClipsBeforeTheUpdate) {
  TinyRun s = MakeRun("sgd", 1.0f);
  const std::vector<nn::Parameter*> params = s.model->Parameters();
  std::vector<std::vector<float>> before;
  for (nn::Parameter* p : params) before.push_back(p->data().ToFloatVector());
  data::Batch batch;
  ASSERT_TRUE(s.loader->Next(&batch));
  LocalUpdate update(s.opt.get());
  constexpr float kClip = 1e-3f;  // far below the norm of a first-step gradient
  ASSERT_TRUE(TrainStep(*s.model, update, params, batch.x, batch.y, 0, kClip).ok());
  double moved = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<float> after = params[i]->data().ToFloatVector();
    for (size_t j = 0; j < after.size(); ++j) moved += std::pow(static_cast<double>(after[j]) - before[i][j], 2);
  }
  EXPECT_NEAR(std::sqrt(moved), kClip, kClip * 1e-2);
}

// Records what the trainer tells it, in order.
class RecordingUpdate : public ParameterUpdate {
 public:
  Status Apply(const std::vector<nn::Parameter*>&, int64_t) override {
    events.push_back("apply");
    return Status::Ok();
  }
  void SetLoss(double l) override {
    events.push_back("loss");
    loss = l;
  }
  std::vector<std::string> events;
  double loss = -1;
};

// The update hears the step's loss (the mean cross-entropy of the batch, computed here from the logits by hand)
// before it applies the step: a sync worker sends it with that step's push (DGT's adaptive k).
TEST(GradClipTest, TrainStepTellsTheUpdateItsLossBeforeApplying) {
  TinyRun s = MakeRun("sgd", 0.1f);
  data::Batch batch;
  ASSERT_TRUE(s.loader->Next(&batch));
  const std::vector<float> z = s.model->Forward(autograd::Variable(batch.x)).data().ToFloatVector();
  const std::vector<float> y = batch.y.ToFloatVector();
  const size_t n = y.size(), k = z.size() / n;
  double expected = 0;
  for (size_t i = 0; i < n; ++i) {
    double top = z[i * k];
    for (size_t c = 1; c < k; ++c) top = std::max(top, static_cast<double>(z[i * k + c]));
    double sum = 0;
    for (size_t c = 0; c < k; ++c) sum += std::exp(z[i * k + c] - top);
    expected += top + std::log(sum) - z[i * k + static_cast<size_t>(y[i])];
  }
  expected /= static_cast<double>(n);
  RecordingUpdate update;
  ASSERT_TRUE(TrainStep(*s.model, update, s.model->Parameters(), batch.x, batch.y, 0, 0).ok());
  EXPECT_EQ(update.events, (std::vector<std::string>{"loss", "apply"}));
  EXPECT_NEAR(update.loss, expected, 1e-5);
}

TEST(GradClipTest, TrainerWithClippingStillLearns) {
  TinyRun s = MakeRun("adam", 0.01f);
  TrainerOptions o;
  o.training.epochs = 5;
  o.base_lr = 0.01f;
  o.clip_norm = 0.5f;
  Trainer t(o, s.model.get(), s.opt.get(), s.loader.get(), s.splits.test.get(), nullptr, nullptr);
  TrainState state;
  auto r = t.Run(&state);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, StopReason::kCompleted);
  EXPECT_EQ(state.iteration, 5 * 8);
  EXPECT_GT(state.final_accuracy, 0.8);
}

}  // namespace
}  // namespace geomx::train
