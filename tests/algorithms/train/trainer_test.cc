// The training loop in process: learning happens, stop conditions, evaluation cadence, interruption.
#include "algorithms/train/trainer.h"
#include "algorithms/train/target.h"

#include <atomic>
#include <memory>

#include <gtest/gtest.h>

#include "datasets/dataset.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"
#include "tests/testutil.h"

namespace geomx::train {
namespace {

struct Fixture {
  data::DatasetSplits splits;
  std::unique_ptr<nn::Module> model;
  std::unique_ptr<nn::Optimizer> opt;
  std::unique_ptr<data::DataLoader> loader;
};

Fixture Make(uint64_t seed = 7) {
  Fixture f;
  data::DataConfig dc;
  dc.name = "synthetic";
  dc.synthetic_train = 512;
  dc.synthetic_test = 256;
  dc.synthetic_classes = 4;
  dc.synthetic_shape = {16};
  auto splits = data::OpenDataset(dc);
  EXPECT_TRUE(splits.ok()) << splits.status().ToString();
  f.splits = std::move(splits).value();
  nn::ModelConfig mc;
  mc.name = "mlp";
  mc.hidden = {32};
  mc.in_channels = 1;
  mc.in_height = 1;
  mc.in_width = 16;
  mc.num_classes = 4;
  Rng rng(seed);
  f.model = std::move(nn::CreateModel(mc, rng)).value();
  nn::OptimizerConfig oc;
  oc.name = "adam";
  oc.lr = 0.01f;
  f.opt = std::move(nn::CreateOptimizer(oc)).value();
  data::LoaderOptions lo;
  lo.batch_size = 32;
  lo.seed = seed;
  lo.prefetch = 0;
  f.loader = std::make_unique<data::DataLoader>(f.splits.train, lo);
  return f;
}

class RecordingListener : public TrainerListener {
 public:
  Status OnEvaluation(const MetricsRow& row, const TrainState&) override {
    rows.push_back(row);
    return Status::Ok();
  }
  Status OnCheckpoint(const TrainState& s) override {
    checkpoints.push_back(s.iteration);
    return Status::Ok();
  }
  void OnIteration(const ProgressInfo&) override {
    ++iterations;
    if (stop_after > 0 && iterations == stop_after && flag) flag->store(true);
  }
  std::vector<MetricsRow> rows;
  std::vector<int64_t> checkpoints;
  int iterations = 0;
  int stop_after = 0;
  std::atomic<bool>* flag = nullptr;
};

TrainerOptions Options(int epochs) {
  TrainerOptions o;
  o.training.epochs = epochs;
  o.base_lr = 0.01f;
  return o;
}

TEST(TrainerTest, LearnsSeparableSyntheticData) {
  Fixture f = Make();
  const EvalResult before = Evaluate(*f.model, *f.splits.test, Device::Cpu(), 100, 0);
  RecordingListener l;
  Trainer t(Options(5), f.model.get(), f.opt.get(), f.loader.get(), f.splits.test.get(), &l, nullptr);
  TrainState s;
  auto r = t.Run(&s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, StopReason::kCompleted);
  EXPECT_EQ(s.iteration, 5 * 16);
  EXPECT_EQ(s.epoch, 5);
  EXPECT_GT(s.final_accuracy, before.accuracy + 0.2);
  EXPECT_GT(s.final_accuracy, 0.8);
  ASSERT_EQ(l.rows.size(), 5u);  // one full evaluation per epoch
  EXPECT_LT(l.rows.back().loss, l.rows.front().loss);
  EXPECT_EQ(l.checkpoints, (std::vector<int64_t>{16, 32, 48, 64, 80}));
}

TEST(TrainerTest, EvalEveryAndMaxIterations) {
  Fixture f = Make();
  RecordingListener l;
  TrainerOptions o = Options(10);
  o.training.eval_every = 5;
  o.training.max_iterations = 20;
  Trainer t(o, f.model.get(), f.opt.get(), f.loader.get(), f.splits.test.get(), &l, nullptr);
  TrainState s;
  auto r = t.Run(&s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, StopReason::kMaxIterations);
  EXPECT_EQ(s.iteration, 20);
  // evals at 5, 10, 15 (mid-epoch), 16 (epoch end), 20 (mid-epoch; the stop then needs no extra eval)
  std::vector<int64_t> its;
  for (const auto& row : l.rows) its.push_back(row.iteration);
  EXPECT_EQ(its, (std::vector<int64_t>{5, 10, 15, 16, 20}));
}

TEST(TrainerTest, InterruptStopsWithCheckpoint) {
  Fixture f = Make();
  std::atomic<bool> flag{false};
  RecordingListener l;
  l.stop_after = 7;
  l.flag = &flag;
  Trainer t(Options(3), f.model.get(), f.opt.get(), f.loader.get(), f.splits.test.get(), &l, &flag);
  TrainState s;
  auto r = t.Run(&s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, StopReason::kInterrupted);
  EXPECT_EQ(s.iteration, 7);
  EXPECT_EQ(s.epoch_iteration, 7);
  ASSERT_FALSE(l.checkpoints.empty());
  EXPECT_EQ(l.checkpoints.back(), 7);
}

TEST(TrainerTest, TargetAccuracyRecordsTimeAndCanStop) {
  Fixture f = Make();
  TrainerOptions o = Options(20);
  o.training.target_accuracy = 0.6f;
  o.training.stop_at_target = true;
  RecordingListener l;
  Trainer t(o, f.model.get(), f.opt.get(), f.loader.get(), f.splits.test.get(), &l, nullptr);
  TrainState s;
  auto r = t.Run(&s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, StopReason::kTargetReached);
  EXPECT_GE(s.time_to_target_s, 0.0);
  EXPECT_LT(s.epoch, 20);
  EXPECT_GE(s.final_accuracy, 0.6);
}

// Regression: the recipe's target is a float (0.85f is 0.8500000238) and an accuracy a fraction of examples; an
// evaluation of exactly 1700 / 2000 compared in double missed a target of 0.85.
TEST(TrainerTest, AnAccuracyEqualToTheTargetReachesIt) {
  const float target = 0.85f;
  EXPECT_LT(1700 / 2000.0, static_cast<double>(target));  // why the double comparison failed
  EXPECT_TRUE(ReachesTarget(1700 / 2000.0, target));
  EXPECT_FALSE(ReachesTarget(1699 / 2000.0, target));
  EXPECT_TRUE(ReachesTarget(0.9, target));
  EXPECT_TRUE(ReachesTarget(8500 / 10000.0, static_cast<double>(target)));  // as geomx bench reads it back
  EXPECT_FALSE(ReachesTarget(1.0, 0.0));                                     // no target
}

}  // namespace
}  // namespace geomx::train
