// The averaging modes' outer optimizer (algorithms/sync/averaging.h) against hand computations.
#include "algorithms/sync/averaging.h"

#include <vector>

#include <gtest/gtest.h>

#include "algorithms/ps/server_state.h"

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

// diloco's sparse answer (AnswerSparsifier, k = 1 of 4) by hand, lr 1, momentum 0.5 (update = -(g + 0.5 v)):
//   t0  delta (0.4,-0.2,0.1,0): g = -delta, v = g, update (0.6,-0.3,0.15,0); answer (0.6,0,0,0), residual
//       (0,-0.3,0.15,0)
//   t1  delta 0: v = 0.5 v = (-0.2,0.1,-0.05,0), update (0.1,-0.05,0.025,0); update + residual =
//       (0.1,-0.35,0.175,0): answer (0,-0.35,0,0), residual (0.1,0,0.175,0)
// Answers + residual = the updates; the residual survives a checkpoint and the next answer is the same.
TEST(OuterOptimizerTest, SparseAnswersKeepTheRestInTheResidual) {
  AnswerSparsifier sparsifier;
  sparsifier.enabled = true;
  sparsifier.size_lower_bound = 4;
  sparsifier.bsc.ratio = 0.25f;
  const OuterRule rule{.lr = 1.0f, .momentum = 0.5f, .sparse_answer = true};
  auto outer = OuterOptimizer::Create(rule, sparsifier);
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  const std::vector<float> w0 = {1.0f, 1.0f, 1.0f, 1.0f};
  (*outer)->InitKey(7, w0);
  auto near = [](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << what << " element " << i;
  };
  auto a0 = (*outer)->Apply(7, std::vector<float>{0.4f, -0.2f, 0.1f, 0.0f}, 0);
  ASSERT_TRUE(a0.ok()) << a0.status().ToString();
  near(*a0, {0.6f, 0, 0, 0}, "answer 0");
  near((*outer)->Residual(7), {0, -0.3f, 0.15f, 0}, "residual 0");
  auto a1 = (*outer)->Apply(7, std::vector<float>(4, 0.0f), 1);
  ASSERT_TRUE(a1.ok());
  near(*a1, {0, -0.35f, 0, 0}, "answer 1");
  near((*outer)->Residual(7), {0.1f, 0, 0.175f, 0}, "residual 1");
  near(*(*outer)->Weights(7), {1.7f, 0.65f, 1.175f, 1.0f}, "global model");  // w0 + both updates

  ps::StateTensors state;
  ASSERT_TRUE((*outer)->SaveState("g/", &state).ok());
  auto restored = OuterOptimizer::Create(rule, sparsifier);
  ASSERT_TRUE(restored.ok());
  ASSERT_TRUE((*restored)->RestoreState("g/", state).ok());
  near((*restored)->Residual(7), {0.1f, 0, 0.175f, 0}, "restored residual");
  // t2, delta 0: v = (-0.1,0.05,-0.025,0), update (0.05,-0.025,0.0125,0), + residual: index 2 (0.1875) goes.
  auto a2 = (*outer)->Apply(7, std::vector<float>(4, 0.0f), 2);
  auto r2 = (*restored)->Apply(7, std::vector<float>(4, 0.0f), 2);
  ASSERT_TRUE(a2.ok() && r2.ok());
  near(*a2, {0, 0, 0.1875f, 0}, "answer 2");
  EXPECT_EQ(*r2, *a2);
  // A slice below the bound is answered whole; without the sparsifier the update is the answer.
  (*outer)->InitKey(8, std::vector<float>{0.0f, 0.0f});
  auto small = (*outer)->Apply(8, std::vector<float>{0.2f, -0.1f}, 0);
  ASSERT_TRUE(small.ok());
  near(*small, {0.3f, -0.15f}, "small slice");
  EXPECT_EQ((*outer)->Residual(8), std::vector<float>(2, 0.0f));
}

}  // namespace
}  // namespace geomx::sync
