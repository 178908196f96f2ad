// The averaging modes' outer optimizer (algorithms/sync/averaging.h) against hand computations.
#include "algorithms/sync/averaging.h"

#include <vector>

#include <gtest/gtest.h>

namespace geomx::sync {
namespace {

// The outer step by hand: g = -mean_delta; v = mu v + g; w -= lr (g + mu v); the answer is new - old.
TEST(OuterOptimizerTest, NesterovStepsMatchAHandComputation) {
  auto outer = OuterOptimizer::Create(OuterRule{0.7f, 0.9f});
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  const std::vector<float> w0 = {1.0f, -2.0f, 0.5f};
  (*outer)->InitKey(3, w0);
  const std::vector<std::vector<float>> deltas = {{0.1f, 0.2f, -0.3f}, {-0.05f, 0.4f, 0.0f}, {0.2f, 0.0f, 0.1f}};
  std::vector<double> w(w0.begin(), w0.end()), v(3, 0.0);
  for (size_t t = 0; t < deltas.size(); ++t) {
    auto update = (*outer)->Apply(3, deltas[t], static_cast<int64_t>(t));
    ASSERT_TRUE(update.ok()) << update.status().ToString();
    for (size_t i = 0; i < 3; ++i) {
      const double g = -deltas[t][i];
      v[i] = 0.9 * v[i] + g;
      const double step = -0.7 * (g + 0.9 * v[i]);
      w[i] += step;
      EXPECT_NEAR((*update)[i], step, 1e-6) << "step " << t << " element " << i;
    }
  }
  auto weights = (*outer)->Weights(3);
  ASSERT_TRUE(weights.ok());
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR((*weights)[i], w[i], 1e-6);
}

// HFA's outer rule is plain averaging: w_g += mean delta.
TEST(OuterOptimizerTest, HfaAddsTheMeanDelta) {
  auto outer = OuterOptimizer::Create(OuterRule{1.0f, 0.0f});  // hfa's outer rule (algorithms/sync/hfa.cc)
  ASSERT_TRUE(outer.ok());
  (*outer)->InitKey(0, std::vector<float>{1.0f, 2.0f});
  auto update = (*outer)->Apply(0, std::vector<float>{0.25f, -0.5f}, 0);
  ASSERT_TRUE(update.ok());
  EXPECT_FLOAT_EQ((*update)[0], 0.25f);
  EXPECT_FLOAT_EQ((*update)[1], -0.5f);
  EXPECT_FALSE((*outer)->Apply(1, std::vector<float>{0.0f}, 0).ok());  // a key without initial weights
  auto wrong = (*outer)->Apply(0, std::vector<float>{0.0f}, 1);        // a delta of the wrong length
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::sync
