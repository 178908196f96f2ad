// DC-ASGD (algorithms/sync/dcasgd.h) and the mixed global server's sink (algorithms/sync/mixed.h) without a
// cluster: the compensation with each data centre's own backup, against hand computations.
#include "algorithms/sync/mixed.h"

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace geomx::sync {
namespace {

// ---- DC-ASGD ----

nn::OptimizerConfig Sgd(float lr) {
  nn::OptimizerConfig c;
  c.name = "sgd";
  c.lr = lr;
  return c;
}

TEST(DcAsgdTest, CompensatesWithThePushingDataCentresBackup) {
  DcAsgd d({.lambda = 0.5f}, 2);
  const std::vector<float> w0 = {1.0f, 2.0f};
  d.InitKey(7, w0);
  d.Record(1, 7, std::vector<float>{3.0f, 5.0f});  // dc 1 read newer weights; dc 0 still has w0
  std::vector<float> g = {2.0f, -1.0f};
  const std::vector<float> w_now = {4.0f, 4.0f};
  d.Compensate(0, 7, g, w_now);
  EXPECT_FLOAT_EQ(g[0], 2.0f + 0.5f * 4.0f * (4.0f - 1.0f));
  EXPECT_FLOAT_EQ(g[1], -1.0f + 0.5f * 1.0f * (4.0f - 2.0f));
  std::vector<float> g1 = {2.0f, -1.0f};
  d.Compensate(1, 7, g1, w_now);
  EXPECT_FLOAT_EQ(g1[0], 2.0f + 0.5f * 4.0f * (4.0f - 3.0f));
  EXPECT_FLOAT_EQ(g1[1], -1.0f + 0.5f * 1.0f * (4.0f - 5.0f));
}

TEST(DcAsgdTest, AdaptiveDividesLambdaByTheRootMeanSquare) {
  DcAsgd d({.lambda = 2.0f, .adaptive = true, .decay = 0.9f, .eps = 0.0f}, 1);
  d.InitKey(0, std::vector<float>{0.0f});
  std::vector<float> g = {2.0f};
  d.Compensate(0, 0, g, std::vector<float>{1.0f});
  const float ms = 0.1f * 4.0f;
  EXPECT_NEAR(g[0], 2.0f + 2.0f / std::sqrt(ms) * 4.0f * 1.0f, 1e-4f);
  std::vector<float> g2 = {1.0f};
  d.Compensate(0, 0, g2, std::vector<float>{1.0f});
  const float ms2 = 0.9f * ms + 0.1f * 1.0f;
  EXPECT_NEAR(g2[0], 1.0f + 2.0f / std::sqrt(ms2) * 1.0f * 1.0f, 1e-4f);
}

// Through the global server's sink: dc 0 read w0; dc 1 updates twice; dc 0's update is compensated with
// (w_now - w0), its own backup, not with the weights before the last update (GeoMX's one w_prev per key), and
// dc 1's second update with its backup w1 (no change since it read: no compensation).
TEST(DcAsgdTest, MixedSinkUsesTheRightBackupPerDataCentre) {
  ServerOptimizer opt(nn::LrScheduleConfig{}, 100, 1000);
  ASSERT_TRUE(opt.SetRule(Sgd(0.1f)).ok());
  const float lambda = 0.5f;
  MixedSink sink(&opt, std::make_unique<DcAsgd>(DcAsgdOptions{.lambda = lambda}, 2));
  ASSERT_TRUE(sink.Init(3, std::vector<float>{1.0f}));
  ASSERT_TRUE(sink.Read(3, 0).ok());
  ASSERT_TRUE(sink.Read(3, 1).ok());
  auto value = [](const Result<Bytes>& b) { return b.ok() ? b->as<float>()[0] : NAN; };
  // num_merged 2: the mean gradient is sum / 2.
  const float w1 = value(sink.Apply(3, 1, 0, std::vector<float>{2.0f}, 2));  // g = 1, no delay: w0 - 0.1
  EXPECT_FLOAT_EQ(w1, 0.9f);
  const float w2 = value(sink.Apply(3, 1, 1, std::vector<float>{2.0f}, 2));  // backup w1 == w_now
  EXPECT_FLOAT_EQ(w2, 0.8f);
  const float g = 1.0f;
  const float compensated = g + lambda * g * g * (w2 - 1.0f);  // dc 0's backup: w0 = 1
  const float w3 = value(sink.Apply(3, 0, 0, std::vector<float>{2.0f}, 2));
  EXPECT_NEAR(w3, w2 - 0.1f * compensated, 1e-6f);
  const float geomx = g + lambda * g * g * (w2 - w1);  // what one w_prev per key would give
  EXPECT_GT(std::fabs(w3 - (w2 - 0.1f * geomx)), 1e-4f);
  EXPECT_FLOAT_EQ(sink.dcasgd()->BackupForTesting(0, 3).value()[0], w3);
  EXPECT_FLOAT_EQ(sink.dcasgd()->BackupForTesting(1, 3).value()[0], w2);
}

}  // namespace
}  // namespace geomx::sync
