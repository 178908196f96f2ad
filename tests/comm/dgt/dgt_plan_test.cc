// DGT's block planner and error feedback (comm/dgt/dgt_plan.h), against hand-computed rankings, moving averages
// and channel bins, and the error-feedback invariant under random block loss.
#include "comm/dgt/dgt_plan.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

// A key of `magnitudes.size()` blocks of 2 floats each: block b holds +-magnitudes[b].
std::vector<float> Blocks(const std::vector<float>& magnitudes) {
  std::vector<float> v;
  for (float m : magnitudes) {
    v.push_back(m);
    v.push_back(-m);
  }
  return v;
}

DgtOptions Small(float k0, int channels, bool adaptive = false) {
  DgtOptions o;
  o.block_elements = 2;
  o.alpha = 0.5f;
  o.k0 = k0;
  o.k_min = std::min(0.1f, k0);
  o.adaptive_k = adaptive;
  o.channels = channels;
  return o;
}

TEST(DgtPlanTest, DefaultBlocksFitOneEthernetFrame) {
  DgtPlanner p{DgtOptions{}};
  EXPECT_EQ(p.options().block_elements * sizeof(float), 1400u);
  EXPECT_EQ(p.NumBlocks(0), 0u);
  EXPECT_EQ(p.NumBlocks(350), 1u);
  EXPECT_EQ(p.NumBlocks(351), 2u);
  EXPECT_EQ(p.NumBlocks(1000), 3u);
}

// Eight blocks, magnitudes chosen so the ranking is 5, 2, 0, 6, 1, 3 (block 4 is all zeros, block 7 is last).
// k = 0.5 of the 6 ranked blocks: 3 reliable (5, 2, 0); the other 3 over 3 channels: 6 -> 1, 1 -> 2, 3 -> 3.
TEST(DgtPlanTest, RanksBlocksByContributionAndBinsTheRest) {
  DgtPlanner p(Small(0.5f, 3));
  auto ch = p.Plan(7, Blocks({4, 2, 9, 1, 0, 10, 3, 0.5f}));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  EXPECT_EQ(*ch, (std::vector<int>{0, 2, 0, 3, DgtPlanner::kNotSent, 0, 1, 0}));
  // The contributions after one round: (1 - alpha) * mean |block| = half the magnitude.
  EXPECT_EQ(p.Contributions(7), (std::vector<float>{2, 1, 4.5f, 0.5f, 0, 5, 1.5f, 0.25f}));
}

// The moving average, not this round's magnitudes, decides: block 0 was large and is small now, block 1 the other
// way round. Round 2's contributions: b0 = 0.5 * 5 + 0.5 * 1 = 3, b1 = 0.5 * 0.5 + 0.5 * 4 = 2.25: b0 still ranks
// first although this round's |g| is smaller.
TEST(DgtPlanTest, TheMovingAverageDecides) {
  DgtPlanner p(Small(0.5f, 1));
  ASSERT_TRUE(p.Plan(1, Blocks({10, 1, 0.1f})).ok());
  auto ch = p.Plan(1, Blocks({1, 4, 0.1f}));
  ASSERT_TRUE(ch.ok());
  EXPECT_EQ(p.Contributions(1)[0], 3.0f);
  EXPECT_EQ(p.Contributions(1)[1], 2.25f);
  EXPECT_EQ(*ch, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(p.Plan(1, Blocks({1, 2})).status().code(), StatusCode::kInvalidArgument);  // the key's length changed
}

// More channels than unreliable blocks: the bins never run past channel C (GeoMX's formula gave C + 1 to the
// least important block). Four unreliable blocks over 3 channels: ranks 0..3 -> 1, 1, 2, 3.
TEST(DgtPlanTest, ChannelBinsStayWithinTheChannels) {
  DgtPlanner p(Small(0.0f, 3));
  auto ch = p.Plan(2, Blocks({4, 3, 2, 1, 1}));
  ASSERT_TRUE(ch.ok());
  EXPECT_EQ(*ch, (std::vector<int>{1, 1, 2, 3, 0}));
  DgtPlanner seven(Small(0.0f, 7));
  auto two = seven.Plan(2, Blocks({4, 3, 1}));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<int>{1, 4, 0}));  // ranks 0, 1 of 2 over 7 channels: 1 + 0, 1 + 7 / 2
}

TEST(DgtPlanTest, AdaptiveKFollowsTheLossDownToItsFloor) {
  DgtPlanner adaptive(Small(0.8f, 3, /*adaptive=*/true));
  EXPECT_NEAR(adaptive.k(), 0.8, 1e-6);
  adaptive.SetLoss(2.0);  // the reference loss
  EXPECT_NEAR(adaptive.k(), 0.8, 1e-6);
  adaptive.SetLoss(1.0);
  EXPECT_NEAR(adaptive.k(), 0.4, 1e-6);
  adaptive.SetLoss(0.1);
  EXPECT_NEAR(adaptive.k(), 0.1, 1e-6);  // 0.04 is below k_min
  adaptive.SetLoss(std::nan(""));          // ignored
  EXPECT_NEAR(adaptive.k(), 0.1, 1e-6);
  // Ten ranked blocks at k = 0.4: four reliable.
  adaptive.SetLoss(1.0);
  auto ch = adaptive.Plan(3, Blocks({10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1}));
  ASSERT_TRUE(ch.ok());
  EXPECT_EQ(std::count(ch->begin(), ch->end() - 1, 0), 4);
  DgtPlanner fixed(Small(0.8f, 3, /*adaptive=*/false));
  fixed.SetLoss(2.0);
  fixed.SetLoss(0.5);
  EXPECT_NEAR(fixed.k(), 0.8, 1e-6);
}

TEST(DgtPlanTest, BadOptionsNameTheKey) {
  DgtOptions o;
  o.channels = 8;
  EXPECT_NE(ValidateDgtOptions(o).message().find("accelerators.dgt.channels"), std::string::npos);
  o = DgtOptions{};
  o.k_min = 0.9f;
  EXPECT_NE(ValidateDgtOptions(o).message().find("accelerators.dgt.k_min"), std::string::npos);
  o = DgtOptions{};
  o.alpha = 1;
  EXPECT_NE(ValidateDgtOptions(o).message().find("accelerators.dgt.alpha"), std::string::npos);
  EXPECT_TRUE(ValidateDgtOptions(DgtOptions{}).ok());
}

// Error feedback under loss: every round pushes gradient + residual, a random half of the blocks is lost, and what
// was lost is pushed again next round. Over all rounds, delivered + final residual = the sum of the gradients
// (exactly, up to float rounding), which a sender that forgot lost blocks would miss by the lost mass.
TEST(DgtPlanTest, DeliveredPlusResidualEqualsPushed) {
  constexpr size_t kBlock = 4, kElements = 22;  // six blocks, the last one short
  DgtResidual ef(kBlock);
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0, 1);
  std::vector<double> pushed_sum(kElements, 0), delivered_sum(kElements, 0);
  int lost = 0;
  for (int round = 0; round < 50; ++round) {
    std::vector<float> grad(kElements);
    for (float& x : grad) x = g(rng);
    for (size_t i = 0; i < kElements; ++i) pushed_sum[i] += grad[i];
    const std::vector<float> push = ef.Compose(9, grad);
    std::vector<bool> delivered(6);
    for (size_t b = 0; b < 6; ++b) {
      delivered[b] = (rng() % 2) == 0 || b == 5;  // the last block is reliable
      lost += delivered[b] ? 0 : 1;
    }
    for (size_t i = 0; i < kElements; ++i) {
      if (delivered[i / kBlock]) delivered_sum[i] += push[i];
    }
    ef.Settle(9, push, delivered);
  }
  const auto residual = ef.residual(9);
  ASSERT_EQ(residual.size(), kElements);
  for (size_t i = 0; i < kElements; ++i) {
    EXPECT_NEAR(delivered_sum[i] + residual[i], pushed_sum[i], 1e-4) << "element " << i;
  }
  EXPECT_GT(lost, 100);  // about half of 5 x 50 blocks: the invariant was tested under real loss
}

}  // namespace
}  // namespace geomx::comm
