// Tests of the histogram tree learner (algorithms/estimators/trees/) against independent computations: cuts and
// bin ids against their definition, histograms against a naive sum, subtraction against a direct build, shard
// histograms against the union's, split finding against a brute-force search over every threshold and missing
// direction on the raw rows, merged sketches against the union's cuts, the JSON dump against a naive walk.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <vector>

#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/grower.h"
#include "algorithms/estimators/trees/histogram.h"
#include "algorithms/estimators/trees/split.h"
#include "algorithms/estimators/trees/tree.h"
#include "engine/base/rng.h"

namespace geomx::algorithms::trees {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// rows x cols small integers 0..levels-1, with NaN at rate `missing`.
data::Table IntTable(int64_t rows, int64_t cols, int levels, double missing, uint64_t seed) {
  Rng rng(seed);
  data::Table t;
  t.rows = rows;
  t.cols = cols;
  for (int64_t i = 0; i < rows * cols; ++i) {
    t.dense.push_back(rng.Uniform() < missing ? kNaN : static_cast<float>(rng.Below(static_cast<uint64_t>(levels))));
  }
  return t;
}

// Gradients that are multiples of 1/8 and hessians multiples of 1/4 (every sum below is exact in float and double).
std::vector<GradPair> ExactPairs(int64_t rows, uint64_t seed) {
  Rng rng(seed);
  std::vector<GradPair> g(static_cast<size_t>(rows));
  for (GradPair& p : g) {
    p.g = static_cast<float>(static_cast<int>(rng.Below(33)) - 16) / 8.0f;
    p.h = static_cast<float>(1 + rng.Below(8)) / 4.0f;
  }
  return g;
}

std::vector<int32_t> AllRows(int64_t n) {
  std::vector<int32_t> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

TEST(TreeBinningTest, CutsAreMidpointsOfFewDistinctValuesAndBinsCountThresholds) {
  data::Table t = IntTable(500, 3, 7, 0.1, 1);
  auto cuts = ComputeCuts(t, {}, SketchOptions{}, nullptr, 2);
  ASSERT_TRUE(cuts.ok()) << cuts.status().ToString();
  for (int64_t f = 0; f < 3; ++f) {
    ASSERT_EQ(cuts->ValueBins(f), 7);
    for (int b = 0; b < 6; ++b) EXPECT_FLOAT_EQ(cuts->Threshold(f, b), b + 0.5f);
    EXPECT_EQ(cuts->MissingBin(f), 7);
  }
  const BinMatrix m = BinTable(t, *cuts, 2);
  for (int64_t i = 0; i < t.rows; ++i) {
    for (int64_t f = 0; f < 3; ++f) {
      const float x = t.dense[static_cast<size_t>(i * 3 + f)];
      int want = 0;  // the number of thresholds <= x, or the missing slot
      if (std::isnan(x)) {
        want = 7;
      } else {
        for (int b = 0; b < 6; ++b) want += cuts->Threshold(f, b) <= x ? 1 : 0;
      }
      EXPECT_EQ(m.Row(i)[f], want);
    }
  }
}

TEST(TreeBinningTest, ManyValuesGiveAtMostMaxBinWeightedQuantileBins) {
  Rng rng(3);
  data::Table t;
  t.rows = 20000;
  t.cols = 1;
  for (int64_t i = 0; i < t.rows; ++i) t.dense.push_back(static_cast<float>(rng.Normal()));
  SketchOptions o;
  o.max_bin = 16;
  auto cuts = ComputeCuts(t, {}, o, nullptr, 1);
  ASSERT_TRUE(cuts.ok());
  ASSERT_LE(cuts->ValueBins(0), 16);
  ASSERT_GE(cuts->ValueBins(0), 15);
  const BinMatrix m = BinTable(t, *cuts, 1);
  std::vector<int> count(16, 0);
  for (uint8_t b : m.bins) ++count[b];
  for (int b = 0; b < cuts->ValueBins(0); ++b) EXPECT_NEAR(count[static_cast<size_t>(b)], 20000 / 16, 150) << b;
}

TEST(TreeBinningTest, SparseAbsentEntriesAreZeros) {
  data::Table dense = IntTable(300, 4, 5, 0.0, 7);
  const data::Table sparse = dense.ToSparse();
  ASSERT_TRUE(sparse.sparse);
  auto a = ComputeCuts(dense, {}, SketchOptions{}, nullptr, 1);
  auto b = ComputeCuts(sparse, {}, SketchOptions{}, nullptr, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->values, b->values);
  EXPECT_EQ(BinTable(dense, *a, 1).bins, BinTable(sparse, *b, 2).bins);
}

TEST(TreeBinningTest, MergedSketchesOfShardsGiveTheUnionsCuts) {
  const data::Table t = IntTable(900, 5, 40, 0.05, 11);
  SketchOptions o;
  o.max_bin = 16;  // fewer bins than distinct values: real quantile cuts
  auto whole = ComputeCuts(t, {}, o, nullptr, 1);
  ASSERT_TRUE(whole.ok());
  for (int world : {2, 4}) {
    ThreadCollectiveGroup group(world);
    std::vector<Result<BinCuts>> got(static_cast<size_t>(world), Status::Internal("not run"));
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r] {
        std::vector<int64_t> rows;
        for (int64_t i = r; i < t.rows; i += world) rows.push_back(i);
        got[static_cast<size_t>(r)] = ComputeCuts(t.Select(rows), {}, o, group.Worker(r), 1);
      });
    }
    for (auto& th : threads) th.join();
    for (const auto& c : got) {
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      EXPECT_EQ(c->ptr, whole->ptr) << world;
      EXPECT_EQ(c->values, whole->values) << world;
    }
  }
}

TEST(TreeHistogramTest, BuildMatchesNaiveSumsAndThreadCounts) {
  const data::Table t = IntTable(5000, 6, 9, 0.1, 5);
  auto cuts = ComputeCuts(t, {}, SketchOptions{}, nullptr, 1);
  ASSERT_TRUE(cuts.ok());
  const BinMatrix m = BinTable(t, *cuts, 1);
  const HistLayout layout(*cuts);
  const std::vector<GradPair> gp = ExactPairs(t.rows, 2);
  std::vector<int32_t> rows;
  for (int32_t i = 0; i < 5000; i += 1 + i % 3) rows.push_back(i);  // a subset, as a node holds
  std::vector<double> naive(static_cast<size_t>(2 * layout.Size()), 0.0);
  for (int32_t r : rows) {
    for (int64_t f = 0; f < 6; ++f) {
      const size_t s = static_cast<size_t>(layout.Offset(f) + cuts->BinOf(f, t.dense[static_cast<size_t>(r * 6 + f)]));
      naive[2 * s] += gp[static_cast<size_t>(r)].g;
      naive[2 * s + 1] += gp[static_cast<size_t>(r)].h;
    }
  }
  for (int threads : {1, 2, 3}) {
    HistBuilder builder(&layout, threads);
    std::vector<double> h(naive.size());
    builder.Build(m, gp.data(), rows, h.data());
    EXPECT_EQ(h, naive) << threads << " threads";
  }
}

TEST(TreeHistogramTest, SubtractionEqualsADirectBuildOfTheSibling) {
  const data::Table t = IntTable(3000, 4, 12, 0.05, 8);
  auto cuts = ComputeCuts(t, {}, SketchOptions{}, nullptr, 1);
  ASSERT_TRUE(cuts.ok());
  const BinMatrix m = BinTable(t, *cuts, 1);
  const HistLayout layout(*cuts);
  const std::vector<GradPair> gp = ExactPairs(t.rows, 4);
  std::vector<int32_t> left, right;
  for (int32_t i = 0; i < 3000; ++i) (m.Row(i)[2] <= 4 ? left : right).push_back(i);
  HistBuilder builder(&layout, 2);
  const size_t n = static_cast<size_t>(2 * layout.Size());
  std::vector<double> parent(n), l(n), r(n), derived(n);
  builder.Build(m, gp.data(), AllRows(3000), parent.data());
  builder.Build(m, gp.data(), left, l.data());
  builder.Build(m, gp.data(), right, r.data());
  SubtractHistogram(parent.data(), l.data(), derived.data(), static_cast<int64_t>(n));
  EXPECT_EQ(derived, r);  // exact: every sum is a multiple of 1/8
}

TEST(TreeHistogramTest, SummedHistogramsOfShardsEqualTheUnions) {
  const data::Table t = IntTable(4000, 5, 10, 0.1, 21);
  auto cuts = ComputeCuts(t, {}, SketchOptions{}, nullptr, 1);
  ASSERT_TRUE(cuts.ok());
  const HistLayout layout(*cuts);
  const std::vector<GradPair> gp = ExactPairs(t.rows, 6);
  const size_t n = static_cast<size_t>(2 * layout.Size());
  std::vector<double> whole(n), sum(n, 0.0), part(n);
  HistBuilder builder(&layout, 2);
  builder.Build(BinTable(t, *cuts, 1), gp.data(), AllRows(t.rows), whole.data());
  for (int r = 0; r < 3; ++r) {
    std::vector<int64_t> rows;
    std::vector<GradPair> sgp;
    for (int64_t i = r; i < t.rows; i += 3) {
      rows.push_back(i);
      sgp.push_back(gp[static_cast<size_t>(i)]);
    }
    const data::Table shard = t.Select(rows);
    builder.Build(BinTable(shard, *cuts, 1), sgp.data(), AllRows(shard.rows), part.data());
    for (size_t j = 0; j < n; ++j) sum[j] += part[j];
  }
  EXPECT_EQ(sum, whole);
}

// The best split by brute force: every feature, every threshold between distinct values, missing rows left and
// right, sums taken over the raw rows.
SplitCandidate BruteForce(const data::Table& t, const BinCuts& cuts, const std::vector<GradPair>& gp,
                          const SplitParams& p) {
  double G = 0, H = 0;
  for (const GradPair& x : gp) {
    G += x.g;
    H += x.h;
  }
  SplitCandidate best;
  for (int32_t f = 0; f < t.cols; ++f) {
    for (int b = 0; b + 1 < cuts.ValueBins(f); ++b) {
      const float thr = cuts.Threshold(f, b);
      bool any_missing = false;
      for (int64_t i = 0; i < t.rows; ++i) any_missing |= std::isnan(t.dense[static_cast<size_t>(i * t.cols + f)]);
      for (int dir = 0; dir < 2; ++dir) {
        double lg = 0, lh = 0;
        for (int64_t i = 0; i < t.rows; ++i) {
          const float x = t.dense[static_cast<size_t>(i * t.cols + f)];
          const bool missing = std::isnan(x);
          if (missing ? dir == 1 : x < thr) {
            lg += gp[static_cast<size_t>(i)].g;
            lh += gp[static_cast<size_t>(i)].h;
          }
        }
        if (dir == 1 && !any_missing) continue;
        const double rg = G - lg, rh = H - lh;
        if (lh < p.min_child_weight || rh < p.min_child_weight || lh <= 0 || rh <= 0) continue;
        const double gain = LeafScore(p, lg, lh) + LeafScore(p, rg, rh) - LeafScore(p, G, H);
        if (gain > best.gain + 1e-9 && gain > p.gamma + 1e-6) {
          best.feature = f;
          best.bin = b;
          best.default_left = dir == 1 || !any_missing;  // no missing rows: left by definition
          best.gain = gain;
          best.left_g = lg;
          best.left_h = lh;
        }
      }
    }
  }
  return best;
}

TEST(TreeSplitTest, BestSplitMatchesBruteForce) {
  std::vector<SplitParams> params(5);
  params[1].lambda = 0;
  params[1].min_child_weight = 0;
  params[2].alpha = 1.5;
  params[2].lambda = 3;
  params[3].max_delta_step = 0.3;
  params[3].min_child_weight = 5;
  params[4].gamma = 4;
  int found = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const data::Table t = IntTable(60, 4, 6, seed % 2 == 0 ? 0.2 : 0.0, seed);
    auto cuts = ComputeCuts(t, {}, SketchOptions{}, nullptr, 1);
    ASSERT_TRUE(cuts.ok());
    const HistLayout layout(*cuts);
    const std::vector<GradPair> gp = ExactPairs(t.rows, seed * 7);
    std::vector<double> hist(static_cast<size_t>(2 * layout.Size()));
    HistBuilder(&layout, 1).Build(BinTable(t, *cuts, 1), gp.data(), AllRows(t.rows), hist.data());
    double G = 0, H = 0;
    for (const GradPair& x : gp) {
      G += x.g;
      H += x.h;
    }
    for (const SplitParams& p : params) {
      const SplitCandidate want = BruteForce(t, *cuts, gp, p);
      const SplitCandidate got = FindBestSplit(hist.data(), layout, *cuts, {0, 1, 2, 3}, G, H, p);
      ASSERT_EQ(got.valid(), want.valid()) << "seed " << seed;
      if (!want.valid()) continue;
      ++found;
      EXPECT_NEAR(got.gain, want.gain, 1e-9) << "seed " << seed;
      // Equal gains can come from different splits; the chosen one must reach the best gain with its own sums.
      const double check =
          LeafScore(p, got.left_g, got.left_h) + LeafScore(p, G - got.left_g, H - got.left_h) - LeafScore(p, G, H);
      EXPECT_NEAR(check, want.gain, 1e-9);
      if (std::fabs(got.gain - want.gain) < 1e-12 && got.feature == want.feature && got.bin == want.bin) {
        EXPECT_EQ(got.default_left, want.default_left);
      }
    }
  }
  EXPECT_GT(found, 30);
}

TEST(TreeSplitTest, LeafWeightAndScoreFollowXgboost) {
  SplitParams p;
  p.lambda = 1;
  EXPECT_DOUBLE_EQ(LeafWeight(p, -6, 2), 2.0);
  EXPECT_DOUBLE_EQ(LeafScore(p, -6, 2), 12.0);  // G^2 / (H + lambda)
  p.alpha = 2;
  EXPECT_DOUBLE_EQ(LeafWeight(p, -6, 2), 4.0 / 3.0);
  EXPECT_NEAR(LeafScore(p, -6, 2), 16.0 / 3.0, 1e-12);  // (|G| - alpha)^2 / (H + lambda)
  p.alpha = 0;
  p.max_delta_step = 0.5;
  EXPECT_DOUBLE_EQ(LeafWeight(p, -6, 2), 0.5);
  EXPECT_DOUBLE_EQ(LeafScore(p, -6, 2), -(2 * -6 * 0.5 + 3 * 0.25));
  p.min_child_weight = 3;
  EXPECT_EQ(LeafWeight(p, -6, 2), 0.0);
}

TEST(TreeGrowerTest, DepthwiseAndLossguideRespectTheirLimitsAndPartitionRows) {
  const data::Table t = IntTable(2000, 6, 20, 0.05, 31);
  auto cuts = ComputeCuts(t, {}, SketchOptions{}, nullptr, 1);
  ASSERT_TRUE(cuts.ok());
  const BinMatrix m = BinTable(t, *cuts, 1);
  const std::vector<GradPair> gp = ExactPairs(t.rows, 9);
  for (int policy = 0; policy < 2; ++policy) {
    GrowerOptions o;
    o.split.min_child_weight = 0;
    o.policy = policy == 0 ? GrowPolicy::kDepthwise : GrowPolicy::kLossguide;
    o.max_depth = policy == 0 ? 3 : 0;
    o.max_leaves = policy == 0 ? 0 : 5;
    TreeGrower grower(&m, &*cuts, o, nullptr, 2);
    Tree tree;
    std::vector<int32_t> leaf;
    ASSERT_TRUE(grower.Grow(gp, 1, &tree, &leaf).ok());
    if (policy == 0) {
      EXPECT_EQ(tree.Leaves(), 8);  // random gradients: every node of a depth-3 tree splits
    } else {
      EXPECT_EQ(tree.Leaves(), 5);
    }
    // Each row's leaf is where a walk on its raw values ends, and the leaf weight is that of its rows' sums.
    std::vector<double> g(tree.nodes.size(), 0.0), h(tree.nodes.size(), 0.0);
    for (int64_t i = 0; i < t.rows; ++i) {
      ASSERT_EQ(leaf[static_cast<size_t>(i)], tree.LeafOf(t.dense.data() + i * t.cols)) << i;
      g[static_cast<size_t>(leaf[static_cast<size_t>(i)])] += gp[static_cast<size_t>(i)].g;
      h[static_cast<size_t>(leaf[static_cast<size_t>(i)])] += gp[static_cast<size_t>(i)].h;
    }
    for (size_t id = 0; id < tree.nodes.size(); ++id) {
      if (!tree.nodes[id].is_leaf()) continue;
      EXPECT_NEAR(tree.nodes[id].value, LeafWeight(o.split, g[id], h[id]), 1e-6);
      EXPECT_LE(tree.nodes[id].depth, policy == 0 ? 3 : 4);
    }
  }
}

TEST(TreeGrowerTest, LearnsTheDefaultDirectionOfMissingValues) {
  // Target: +1 when x0 is missing or x0 >= 5, else -1. Squared-error gradients at margin 0.
  data::Table t = IntTable(1000, 2, 10, 0.3, 17);
  std::vector<GradPair> gp(static_cast<size_t>(t.rows));
  for (int64_t i = 0; i < t.rows; ++i) {
    const float x = t.dense[static_cast<size_t>(i * 2)];
    gp[static_cast<size_t>(i)] = {(std::isnan(x) || x >= 5) ? -1.0f : 1.0f, 1.0f};
  }
  auto cuts = ComputeCuts(t, {}, SketchOptions{}, nullptr, 1);
  ASSERT_TRUE(cuts.ok());
  const BinMatrix m = BinTable(t, *cuts, 1);
  GrowerOptions o;
  o.max_depth = 1;
  o.split.lambda = 0;
  TreeGrower grower(&m, &*cuts, o, nullptr, 1);
  Tree tree;
  std::vector<int32_t> leaf;
  ASSERT_TRUE(grower.Grow(gp, 1, &tree, &leaf).ok());
  ASSERT_EQ(tree.nodes.size(), 3u);
  EXPECT_EQ(tree.nodes[0].feature, 0);
  EXPECT_FLOAT_EQ(tree.nodes[0].threshold, 4.5f);
  EXPECT_FALSE(tree.nodes[0].default_left);  // missing rows join the x >= 5 side
  EXPECT_FLOAT_EQ(tree.nodes[static_cast<size_t>(tree.nodes[0].right)].value, 1.0f);
  const float missing[2] = {kNaN, 0};
  EXPECT_EQ(tree.LeafOf(missing), tree.nodes[0].right);
}

TEST(TreeGrowerTest, ColumnSamplingIsDeterministicAndSized) {
  std::vector<int32_t> all(100);
  std::iota(all.begin(), all.end(), 0);
  const auto a = SampleFeatures(all, 0.3, 5), b = SampleFeatures(all, 0.3, 5), c = SampleFeatures(all, 0.3, 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), 30u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(SampleFeatures(all, 0.001, 1).size(), 1u);
}

}  // namespace
}  // namespace geomx::algorithms::trees
