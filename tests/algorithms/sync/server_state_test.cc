// Server state behind one save/restore interface (algorithms/ps/server_state.h): a server saved to a file and
// restored into a fresh one continues exactly as the original (the same next answers), for the global server's
// optimizer (weights + Adam moments + step), DC-ASGD's backups and mean squares, and the averaging modes' outer
// optimizer; bad files are refused naming the file.
#include <filesystem>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/ps/server_state.h"
#include "algorithms/sync/averaging.h"
#include "algorithms/sync/dcasgd.h"
#include "algorithms/sync/server_optimizer.h"
#include "tests/testutil.h"

namespace geomx::sync {
namespace {

nn::OptimizerConfig Adam() {
  nn::OptimizerConfig c;
  c.name = "adam";
  c.lr = 0.05f;
  return c;
}

std::vector<float> Floats(const Result<Bytes>& b) {
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? std::vector<float>(b->as<float>(), b->as<float>() + b->count<float>()) : std::vector<float>();
}

TEST(ServerStateTest, RestoredOptimizerContinuesLikeTheOriginal) {
  testing::ScratchDir dir;
  ServerOptimizer original(nn::LrScheduleConfig{}, 10, 100);
  ASSERT_TRUE(original.SetRule(Adam()).ok());
  original.InitKey(5, std::vector<float>{1.0f, -2.0f, 0.5f});
  original.InitKey(9, std::vector<float>{3.0f});
  for (int64_t round = 0; round < 3; ++round) {
    ASSERT_TRUE(original.Step(5, std::vector<float>{0.1f * round, -0.3f, 0.2f}, round).ok());
    ASSERT_TRUE(original.Step(9, std::vector<float>{1.0f}, round).ok());
  }
  const std::filesystem::path file = dir / "gs0.state";
  ASSERT_TRUE(ps::SaveServerState(file, original).ok());

  ServerOptimizer restored(nn::LrScheduleConfig{}, 10, 100);
  ASSERT_TRUE(restored.SetRule(Adam()).ok());
  ASSERT_TRUE(ps::LoadServerState(file, &restored).ok());
  EXPECT_EQ(restored.Weights(5).value(), original.Weights(5).value());
  // The next steps (Adam's moments and bias correction included) give the same weights, bit for bit.
  for (int64_t round = 3; round < 5; ++round) {
    const std::vector<float> g = {0.5f, 0.25f * round, -1.0f};
    EXPECT_EQ(Floats(restored.Step(5, g, round)), Floats(original.Step(5, g, round))) << "round " << round;
  }
  // A fresh optimizer would have diverged from them: the state mattered.
  ServerOptimizer fresh(nn::LrScheduleConfig{}, 10, 100);
  ASSERT_TRUE(fresh.SetRule(Adam()).ok());
  fresh.InitKey(9, original.Weights(9).value());
  EXPECT_NE(Floats(fresh.Step(9, std::vector<float>{1.0f}, 5)), Floats(original.Step(9, std::vector<float>{1.0f}, 5)));

  ServerOptimizer no_rule(nn::LrScheduleConfig{}, 10, 100);
  EXPECT_EQ(ps::LoadServerState(file, &no_rule).code(), StatusCode::kFailedPrecondition);
}

TEST(ServerStateTest, DcAsgdBackupsAndMeanSquaresRoundTrip) {
  testing::ScratchDir dir;
  const DcAsgdOptions options{.lambda = 2.0f, .adaptive = true, .decay = 0.9f};
  DcAsgd original(options, 2);
  original.InitKey(3, std::vector<float>{1.0f, 2.0f});
  original.Record(1, 3, std::vector<float>{1.5f, 2.5f});
  std::vector<float> g = {0.4f, -0.2f};
  original.Compensate(0, 3, g, std::vector<float>{2.0f, 2.0f});  // fills the mean square
  ASSERT_TRUE(ps::SaveServerState(dir / "dc.state", original).ok());
  DcAsgd restored(options, 2);
  ASSERT_TRUE(ps::LoadServerState(dir / "dc.state", &restored).ok());
  EXPECT_EQ(restored.BackupForTesting(0, 3), original.BackupForTesting(0, 3));
  EXPECT_EQ(restored.BackupForTesting(1, 3), (std::vector<float>{1.5f, 2.5f}));
  std::vector<float> a = {0.3f, 0.1f}, b = a;
  original.Compensate(1, 3, a, std::vector<float>{2.0f, 3.0f});
  restored.Compensate(1, 3, b, std::vector<float>{2.0f, 3.0f});
  EXPECT_EQ(a, b);  // same mean square history
}

TEST(ServerStateTest, OuterOptimizerKeepsTheGlobalModelAndItsMomentum) {
  testing::ScratchDir dir;
  auto original = std::move(OuterOptimizer::Create(OuterRule{0.7f, 0.9f})).value();
  original->InitKey(1, std::vector<float>{1.0f, 2.0f});
  ASSERT_TRUE(original->Apply(1, std::vector<float>{0.1f, -0.1f}, 0).ok());
  ASSERT_TRUE(ps::SaveServerState(dir / "outer.state", *original).ok());
  auto restored = std::move(OuterOptimizer::Create(OuterRule{0.7f, 0.9f})).value();
  ASSERT_TRUE(ps::LoadServerState(dir / "outer.state", restored.get()).ok());
  EXPECT_EQ(restored->Weights(1).value(), original->Weights(1).value());
  const std::vector<float> delta = {0.2f, 0.05f};
  EXPECT_EQ(restored->Apply(1, delta, 1).value(), original->Apply(1, delta, 1).value());  // momentum restored
}

TEST(ServerStateTest, BadFilesAreRefusedNamingTheFile) {
  testing::ScratchDir dir;
  ServerOptimizer opt(nn::LrScheduleConfig{}, 1, 1);
  ASSERT_TRUE(opt.SetRule(Adam()).ok());
  testing::WriteFile(dir / "garbage.state", "not a tensor file");
  Status s = ps::LoadServerState(dir / "garbage.state", &opt);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("garbage.state"), std::string::npos) << s.ToString();
  EXPECT_FALSE(ps::LoadServerState(dir / "missing.state", &opt).ok());
}

}  // namespace
}  // namespace geomx::sync
