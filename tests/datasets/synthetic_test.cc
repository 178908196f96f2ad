#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "datasets/dataset.h"

namespace geomx::data {
namespace {

DataConfig Synthetic(uint64_t seed) {
  DataConfig c;
  c.name = "synthetic";
  c.synthetic_train = 300;
  c.synthetic_test = 100;
  c.synthetic_classes = 4;
  c.synthetic_shape = {2, 3, 4};
  c.synthetic_seed = seed;
  return c;
}

std::vector<float> Example(const Dataset& d, int64_t i) {
  std::vector<float> out(24);
  d.Get(i, out.data(), nullptr);
  return out;
}

TEST(SyntheticTest, ShapesSizesAndBalancedLabels) {
  auto s = OpenDataset(Synthetic(1));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train->size(), 300);
  EXPECT_EQ(s->test->size(), 100);
  EXPECT_EQ(s->train->info().example_shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(s->train->info().num_classes, 4);
  std::vector<int> counts(4);
  for (int64_t i = 0; i < 300; ++i) ++counts[static_cast<size_t>(s->train->Label(i))];
  for (int c : counts) EXPECT_EQ(c, 75);
}

TEST(SyntheticTest, DeterministicPerSeedAndSplitsDiffer) {
  auto a = OpenDataset(Synthetic(5)), b = OpenDataset(Synthetic(5)), c = OpenDataset(Synthetic(6));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (int64_t i : {0, 17, 99}) {
    EXPECT_EQ(Example(*a->train, i), Example(*b->train, i));
    EXPECT_NE(Example(*a->train, i), Example(*c->train, i));
    EXPECT_NE(Example(*a->train, i), Example(*a->test, i));
    EXPECT_EQ(Example(*a->train, i), Example(*a->train, i));  // Get() is a pure function of i
  }
}

TEST(SyntheticTest, ClassesAreSeparableByNearestCentroid) {
  auto s = OpenDataset(Synthetic(9));
  ASSERT_TRUE(s.ok());
  std::vector<std::vector<double>> centroid(4, std::vector<double>(24));
  for (int64_t i = 0; i < 300; ++i) {
    const auto x = Example(*s->train, i);
    for (size_t k = 0; k < 24; ++k) centroid[static_cast<size_t>(s->train->Label(i))][k] += x[k] / 75.0;
  }
  int correct = 0;
  for (int64_t i = 0; i < 100; ++i) {
    const auto x = Example(*s->test, i);
    int best = -1;
    double best_d = 1e300;
    for (int c = 0; c < 4; ++c) {
      double d = 0;
      for (size_t k = 0; k < 24; ++k)
        d += (x[k] - centroid[static_cast<size_t>(c)][k]) * (x[k] - centroid[static_cast<size_t>(c)][k]);
      if (d < best_d) best_d = d, best = c;
    }
    correct += best == s->test->Label(i);
  }
  EXPECT_GE(correct, 95);
}

TEST(SyntheticTest, RejectsBadConfigs) {
  DataConfig c = Synthetic(1);
  c.synthetic_classes = 1;
  EXPECT_EQ(OpenDataset(c).status().code(), StatusCode::kInvalidArgument);
  c = Synthetic(1);
  c.synthetic_shape = {};
  EXPECT_EQ(OpenDataset(c).status().code(), StatusCode::kInvalidArgument);
  c = Synthetic(1);
  c.synthetic_train = 0;
  EXPECT_EQ(OpenDataset(c).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::data
