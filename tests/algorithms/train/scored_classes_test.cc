// Task-aware scoring (data.score_within_classes, docs/algorithms.md "fine-tune"): predictions chosen among some
// outputs only. A Linear layer set to the identity makes each example's features its logits, so every expected
// number below is computed by hand from the rows.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/train/trainer.h"
#include "datasets/dataset.h"
#include "engine/base/rng.h"
#include "nn/layers/linear.h"
#include "nn/optim/optimizer.h"

namespace geomx::train {
namespace {

// Examples given as rows of floats (the logits, through IdentityModel) and their labels.
class Rows final : public data::Dataset {
 public:
  Rows(std::vector<std::vector<float>> rows, std::vector<int64_t> labels)
      : rows_(std::move(rows)), labels_(std::move(labels)) {
    info_.format = "rows";
    info_.example_shape = {static_cast<int64_t>(rows_.front().size())};
    info_.num_classes = static_cast<int>(rows_.front().size());
  }
  const data::DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return static_cast<int64_t>(rows_.size()); }
  int64_t Label(int64_t i) const override { return labels_[static_cast<size_t>(i)]; }
  void Get(int64_t i, float* out, Rng*) const override {
    const std::vector<float>& r = rows_[static_cast<size_t>(i)];
    std::copy(r.begin(), r.end(), out);
  }

 private:
  std::vector<std::vector<float>> rows_;
  std::vector<int64_t> labels_;
  data::DatasetInfo info_;
};

// k -> k Linear with W = identity, b = 0: the logits are the input row.
std::unique_ptr<nn::Linear> IdentityModel(int64_t k) {
  Rng rng(1);
  auto model = std::make_unique<nn::Linear>(k, k, rng);
  float* w = model->weight()->data().data<float>();
  for (int64_t i = 0; i < k * k; ++i) w[i] = (i / k == i % k) ? 1.0f : 0.0f;
  float* b = model->bias()->data().data<float>();
  for (int64_t i = 0; i < k; ++i) b[i] = 0.0f;
  return model;
}

// Four outputs, the task of classes {0, 1}. Over all outputs only example 4 is right (0.25); among 0 and 1 examples
// 1, 2 and 4 are (0.75): 1 and 2 lose to the outputs 2 and 3 outside the task, 3 is wrong either way.
Rows FourExamples() {
  return Rows({{1, 3, 5, 0},    // label 1: all -> 2, among {0, 1} -> 1
               {4, 2, 0, 6},    // label 0: all -> 3, among -> 0
               {2, 1, 0, 0},    // label 1: 0 either way
               {0, 2, 1, 0}},   // label 1: 1 either way
              {1, 0, 1, 1});
}

// The cross-entropy of the softmax over outputs 0 and 1: log(e^z0 + e^z1) - z_label, by hand:
// rows 1, 2, 4: log(1 + e^-2); row 3: 1 + log(1 + e^-1).
double ScoredLossByHand() { return (3 * std::log(1 + std::exp(-2.0)) + 1 + std::log(1 + std::exp(-1.0))) / 4; }

TEST(ScoredClassesTest, PredictionsAreTheMostLikelyOfTheListedClasses) {
  const Rows test = FourExamples();
  auto model = IdentityModel(4);
  const EvalResult all = Evaluate(*model, test, Device::Cpu(), 3, 0);
  EXPECT_DOUBLE_EQ(all.accuracy, 0.25);
  const EvalResult within = Evaluate(*model, test, Device::Cpu(), 3, 0, {0, 1});
  EXPECT_DOUBLE_EQ(within.accuracy, 0.75);
  EXPECT_EQ(within.examples, 4);
  EXPECT_NEAR(within.loss, ScoredLossByHand(), 1e-6);
  // The list's order and repeats do not matter; ids the model has no output for are ignored.
  const EvalResult shuffled = Evaluate(*model, test, Device::Cpu(), 4, 0, {1, 0, 1, 9, -2});
  EXPECT_DOUBLE_EQ(shuffled.accuracy, 0.75);
  EXPECT_NEAR(shuffled.loss, ScoredLossByHand(), 1e-6);
  // A limit scores the first examples: rows 1 and 2, both right among {0, 1}.
  EXPECT_DOUBLE_EQ(Evaluate(*model, test, Device::Cpu(), 3, 2, {0, 1}).accuracy, 1.0);
}

TEST(ScoredClassesTest, ALabelOutsideTheListIsWrongAndTiesGoToTheSmallestId) {
  // Label 2 is not among {0, 1}: wrong although output 2 is the largest; its loss is over outputs 0, 1 and 2:
  // log(e^0 + e^0 + e^5) - 5 = log(1 + 2e^-5). Row 2: a tie between 0 and 1 goes to 0, so label 1 is wrong;
  // its loss log(2e^2) - 2 = log 2.
  const Rows test({{0, 0, 5}, {2, 2, 3}}, {2, 1});
  auto model = IdentityModel(3);
  const EvalResult r = Evaluate(*model, test, Device::Cpu(), 8, 0, {0, 1});
  EXPECT_DOUBLE_EQ(r.accuracy, 0.0);
  EXPECT_NEAR(r.loss, (std::log(1 + 2 * std::exp(-5.0)) + std::log(2.0)) / 2, 1e-6);
  // Label 0 of the tie is right.
  EXPECT_DOUBLE_EQ(Evaluate(*model, Rows({{2, 2, 3}}, {0}), Device::Cpu(), 8, 0, {1, 0}).accuracy, 1.0);
}

TEST(ScoredClassesTest, ProbabilitiesAreASoftmaxOverTheListedOutputs) {
  const Rows input({{1, 3, 5, 0}}, {1});
  auto model = IdentityModel(4);
  int64_t classes = 0;
  const std::vector<float> p = PredictProbabilities(*model, input, Device::Cpu(), 8, &classes, {1, 0});
  ASSERT_EQ(classes, 4);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_NEAR(p[0], 1 / (1 + std::exp(2.0)), 1e-6);  // e^1 / (e^1 + e^3)
  EXPECT_NEAR(p[1], 1 / (1 + std::exp(-2.0)), 1e-6);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_EQ(p[3], 0.0f);
  // Without a list: the softmax over all four, e^5 / (e^0 + e^1 + e^3 + e^5) for output 2.
  const std::vector<float> all = PredictProbabilities(*model, input, Device::Cpu(), 8, &classes);
  EXPECT_NEAR(all[2], std::exp(5.0) / (1 + std::exp(1.0) + std::exp(3.0) + std::exp(5.0)), 1e-6);
}

TEST(ScoredClassesTest, TheRecipeKeyNeedsItsFlagAndTheTrainerScoresWithIt) {
  data::DataConfig dc;
  dc.classes = {0, 1};
  EXPECT_TRUE(ScoredClasses(dc).empty());  // data.classes alone filters the data; scoring stays over all outputs
  dc.score_within_classes = true;
  EXPECT_EQ(ScoredClasses(dc), (std::vector<int64_t>{0, 1}));

  // The trainer's evaluations score with TrainerOptions::scored_classes. A base rate of 0 keeps the identity.
  auto data = std::make_shared<Rows>(FourExamples());
  auto model = IdentityModel(4);
  nn::OptimizerConfig oc;
  oc.name = "sgd";
  oc.lr = 0.1f;  // replaced by the schedule's 0 before every step
  auto opt = std::move(nn::CreateOptimizer(oc)).value();
  data::LoaderOptions lo;
  lo.batch_size = 2;
  lo.prefetch = 0;
  data::DataLoader loader(data, lo);
  for (const std::vector<int64_t>& scored : {std::vector<int64_t>{}, std::vector<int64_t>{0, 1}}) {
    TrainerOptions o;
    o.training.epochs = 1;
    o.base_lr = 0.0f;
    o.scored_classes = scored;
    Trainer t(o, model.get(), opt.get(), &loader, data.get(), nullptr, nullptr);
    TrainState s;
    ASSERT_TRUE(t.Run(&s).ok());
    EXPECT_DOUBLE_EQ(s.final_accuracy, scored.empty() ? 0.25 : 0.75);
    if (!scored.empty()) {
      EXPECT_NEAR(s.final_test_loss, ScoredLossByHand(), 1e-6);
    }
  }
}

}  // namespace
}  // namespace geomx::train
