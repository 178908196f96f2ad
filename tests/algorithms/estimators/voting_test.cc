// The voting tree learner (trees/grower.h, "voting" mode) over workers in data centres (ThreadCollectiveGroup with
// centre sizes): the data centres' votes against a brute-force gain computation on hand-built shards, where the
// globally best feature is no data centre's favourite; voting with room for every feature against the
// single-process tree; one data centre against exact mode.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <numeric>
#include <thread>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/grower.h"
#include "algorithms/estimators/trees/split.h"
#include "engine/base/rng.h"

namespace geomx::algorithms::trees {
namespace {

// One shard per worker: the rows and the gradient pairs of each.
struct Shards {
  data::Table all;                         // the union, worker by worker
  std::vector<std::vector<int64_t>> rows;  // per worker, indices into `all`
  std::vector<GradPair> gpair;             // per row of `all`
};

struct Grown {
  std::vector<Tree> trees;  // per worker
  std::vector<int64_t> summed;
};

// Grows one tree per worker over `centres` (sizes) with the union's cuts.
Grown GrowAll(const Shards& s, const std::vector<int>& centres, const GrowerOptions& o) {
  auto cuts = ComputeCuts(s.all, {}, SketchOptions{}, nullptr, 1);
  EXPECT_TRUE(cuts.ok());
  const int world = std::accumulate(centres.begin(), centres.end(), 0);
  ThreadCollectiveGroup group(centres);
  Grown out;
  out.trees.resize(static_cast<size_t>(world));
  out.summed.resize(static_cast<size_t>(world));
  std::vector<Status> status(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int w = 0; w < world; ++w) {
    threads.emplace_back([&, w] {
      const std::vector<int64_t>& mine = s.rows[static_cast<size_t>(w)];
      const BinMatrix bins = BinTable(s.all.Select(mine), *cuts, 1);
      std::vector<GradPair> gp;
      for (int64_t r : mine) gp.push_back(s.gpair[static_cast<size_t>(r)]);
      TreeGrower grower(&bins, &*cuts, o, group.Worker(w), 1);
      std::vector<int32_t> leaf;
      status[static_cast<size_t>(w)] = grower.Grow(gp, 7, &out.trees[static_cast<size_t>(w)], &leaf);
      out.summed[static_cast<size_t>(w)] = grower.summed_floats();
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& st : status) EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

void ExpectSameTree(const Tree& a, const Tree& b, double tol) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].feature, b.nodes[i].feature) << "node " << i;
    EXPECT_EQ(a.nodes[i].bin, b.nodes[i].bin) << "node " << i;
    EXPECT_NEAR(a.nodes[i].value, b.nodes[i].value, tol) << "node " << i;
  }
}

// The squared-error gain of splitting `rows` on binary feature f (x < 0.5 left), unit hessians, lambda 1.
double NaiveGain(const Shards& s, const std::vector<int64_t>& rows, int f) {
  double gl = 0, hl = 0, gr = 0, hr = 0;
  for (int64_t r : rows) {
    const bool left = s.all.dense[static_cast<size_t>(r * s.all.cols + f)] < 0.5f;
    (left ? gl : gr) += s.gpair[static_cast<size_t>(r)].g;
    (left ? hl : hr) += s.gpair[static_cast<size_t>(r)].h;
  }
  const double g = gl + gr, h = hl + hr;
  return gl * gl / (hl + 1) + gr * gr / (hr + 1) - g * g / (h + 1);
}

// Two data centres of two workers, 400 rows each, 8 binary features, target y = +-1 (gradient -y, hessian 1).
// Feature 2 agrees with y on 80% of the rows everywhere; feature 0 on 95% in data centre A and 50% in B; feature 1
// the reverse; features 3..7 are noise. So A's favourite is 0, B's is 1, and the job's best is 2.
Shards TwoFavourites() {
  Shards s;
  s.all.cols = 8;
  Rng rng(3);
  const double agree[2][3] = {{0.95, 0.5, 0.8}, {0.5, 0.95, 0.8}};
  s.rows.resize(4);
  for (int dc = 0; dc < 2; ++dc) {
    for (int i = 0; i < 400; ++i) {
      const bool y = i % 2 == 0;
      for (int f = 0; f < 8; ++f) {
        const double a = f < 3 ? agree[dc][f] : 0.5;
        const bool x = rng.Uniform() < a ? y : !y;
        s.all.dense.push_back(x ? 1.0f : 0.0f);
      }
      s.gpair.push_back(GradPair{y ? -1.0f : 1.0f, 1.0f});
      s.rows[static_cast<size_t>(2 * dc + i % 2)].push_back(s.all.rows++);
    }
  }
  return s;
}

TEST(VotingLearnerTest, EachDataCentreVotesForItsFavouriteAndOnlyVotedFeaturesCanSplit) {
  const Shards s = TwoFavourites();
  // The premise, by brute force over the raw rows.
  std::vector<int64_t> dc_a = s.rows[0], dc_b = s.rows[2], all(static_cast<size_t>(s.all.rows));
  dc_a.insert(dc_a.end(), s.rows[1].begin(), s.rows[1].end());
  dc_b.insert(dc_b.end(), s.rows[3].begin(), s.rows[3].end());
  std::iota(all.begin(), all.end(), 0);
  auto best = [&](const std::vector<int64_t>& rows, std::vector<int> among) {
    int b = among[0];
    for (int f : among) {
      if (NaiveGain(s, rows, f) > NaiveGain(s, rows, b)) b = f;
    }
    return b;
  };
  ASSERT_EQ(best(dc_a, {0, 1, 2, 3, 4, 5, 6, 7}), 0);
  ASSERT_EQ(best(dc_b, {0, 1, 2, 3, 4, 5, 6, 7}), 1);
  ASSERT_EQ(best(all, {0, 1, 2, 3, 4, 5, 6, 7}), 2);
  // Each data centre's second choice is feature 2.
  ASSERT_EQ(best(dc_a, {1, 2, 3, 4, 5, 6, 7}), 2);
  ASSERT_EQ(best(dc_b, {0, 2, 3, 4, 5, 6, 7}), 2);

  GrowerOptions o;
  o.max_depth = 1;
  o.split.min_child_weight = 0;
  const Grown exact = GrowAll(s, {2, 2}, o);
  o.learner = TreeLearner::kVoting;
  o.top_k = 1;
  const Grown one = GrowAll(s, {2, 2}, o);
  o.top_k = 2;
  const Grown two = GrowAll(s, {2, 2}, o);
  for (int w = 0; w < 4; ++w) {
    SCOPED_TRACE(w);
    EXPECT_EQ(exact.trees[static_cast<size_t>(w)].nodes[0].feature, 2);
    // top_k 1: the votes are {0} and {1}: the split is the better of the two on the job's sums.
    const int want = best(all, {0, 1});
    ASSERT_EQ(one.trees[static_cast<size_t>(w)].nodes.size(), 3u);
    EXPECT_EQ(one.trees[static_cast<size_t>(w)].nodes[0].feature, want);
    // Its leaves take the weights of the job's (not a data centre's) sums: -G / (H + 1) of each side.
    double g[2] = {0, 0}, h[2] = {0, 0};
    for (int64_t r : all) {
      const int side = s.all.dense[static_cast<size_t>(r * s.all.cols + want)] < 0.5f ? 0 : 1;
      g[side] += s.gpair[static_cast<size_t>(r)].g;
      h[side] += s.gpair[static_cast<size_t>(r)].h;
    }
    const Tree& t = one.trees[static_cast<size_t>(w)];
    EXPECT_NEAR(t.nodes[static_cast<size_t>(t.nodes[0].left)].value, -g[0] / (h[0] + 1), 1e-6);
    EXPECT_NEAR(t.nodes[static_cast<size_t>(t.nodes[0].right)].value, -g[1] / (h[1] + 1), 1e-6);
    // top_k 2: both vote for feature 2 as well, and it wins on the job's sums.
    EXPECT_EQ(two.trees[static_cast<size_t>(w)].nodes[0].feature, 2);
    // Every worker builds the same tree.
    ExpectSameTree(one.trees[0], one.trees[static_cast<size_t>(w)], 0);
    // Fewer floats cross the job: 2 features' histograms and 8 votes instead of 8 histograms.
    EXPECT_LT(one.summed[static_cast<size_t>(w)], exact.summed[static_cast<size_t>(w)]);
  }
}

// rows x cols small integers with exactly representable gradient sums (as trees_test.cc).
Shards IntShards(int64_t rows, int64_t cols, int world, uint64_t seed) {
  Shards s;
  Rng rng(seed);
  s.all.cols = cols;
  s.rows.resize(static_cast<size_t>(world));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) s.all.dense.push_back(static_cast<float>(rng.Below(8)));
    s.gpair.push_back(GradPair{static_cast<float>(static_cast<int>(rng.Below(33)) - 16) / 8.0f,
                               static_cast<float>(1 + rng.Below(8)) / 4.0f});
    s.rows[static_cast<size_t>(i % world)].push_back(s.all.rows++);
  }
  return s;
}

TEST(VotingLearnerTest, VotingWithRoomForEveryFeatureGrowsTheSingleProcessTree) {
  // top_k >= the features: every data centre votes for every feature with a valid split, so the vote restricts
  // nothing and the tree must be the single-process one, node for node, at every depth (the subtraction at both
  // levels, the per-level votes and the chosen features' sums all have to be right for that).
  const Shards s = IntShards(3000, 12, 4, 21);
  auto cuts = ComputeCuts(s.all, {}, SketchOptions{}, nullptr, 1);
  ASSERT_TRUE(cuts.ok());
  for (GrowPolicy policy : {GrowPolicy::kDepthwise, GrowPolicy::kLossguide}) {
    GrowerOptions o;
    o.policy = policy;
    o.max_depth = policy == GrowPolicy::kDepthwise ? 4 : 0;
    o.max_leaves = policy == GrowPolicy::kDepthwise ? 0 : 12;
    o.split.min_child_weight = 0;
    o.colsample_bynode = 0.75;
    const BinMatrix bins = BinTable(s.all, *cuts, 1);
    TreeGrower single(&bins, &*cuts, o, nullptr, 1);
    Tree want;
    std::vector<int32_t> leaf;
    ASSERT_TRUE(single.Grow(s.gpair, 7, &want, &leaf).ok());
    o.learner = TreeLearner::kVoting;
    o.top_k = 12;
    const Grown got = GrowAll(s, {2, 2}, o);
    for (const Tree& t : got.trees) ExpectSameTree(want, t, 1e-5);
    EXPECT_GT(want.Leaves(), 8);
  }
}

TEST(VotingLearnerTest, OneDataCentreIsExactMode) {
  const Shards s = IntShards(2000, 10, 3, 5);
  GrowerOptions o;
  o.max_depth = 3;
  o.split.min_child_weight = 0;
  const Grown exact = GrowAll(s, {3}, o);
  o.learner = TreeLearner::kVoting;
  o.top_k = 1;
  const Grown voting = GrowAll(s, {3}, o);
  for (size_t w = 0; w < 3; ++w) {
    ExpectSameTree(exact.trees[w], voting.trees[w], 0);
    EXPECT_EQ(exact.summed[w], voting.summed[w]) << "one data centre: no votes";
  }
}

// Collects each round's summed_mb.
class SummedObserver final : public FitObserver {
 public:
  void OnStep(int64_t, const Metrics& m) override { mb.push_back(MetricValue(m, "summed_mb")); }
  std::vector<double> mb;
};

// Binary labels from 3 of 60 features.
data::Table WideTable(int64_t rows, uint64_t seed) {
  Rng rng(seed);
  data::Table t;
  t.cols = 60;
  t.num_classes = 2;
  for (int64_t i = 0; i < rows; ++i) {
    double score = 0;
    for (int j = 0; j < 60; ++j) {
      const double x = rng.Normal();
      t.dense.push_back(static_cast<float>(x));
      if (j < 3) score += j == 2 ? -x : x;
    }
    t.labels.push_back(score > 0 ? 1 : 0);
    ++t.rows;
  }
  return t;
}

TEST(VotingLearnerTest, GbdtVotesAwayMostOfTheSummedBytesAndKeepsItsAccuracy) {
  const data::Table train = WideTable(2400, 1), test = WideTable(600, 2);
  double accuracy[2] = {0, 0};
  std::vector<double> mb[2];
  for (int voting = 0; voting < 2; ++voting) {
    std::map<std::string, std::string> params = {{"max_iter", "5"}, {"max_leaf_nodes", "8"}};
    if (voting == 1) {
      params["tree_learner"] = "voting";
      params["top_k"] = "3";
    }
    ThreadCollectiveGroup group({2, 2});
    std::vector<std::unique_ptr<Estimator>> models;
    std::vector<SummedObserver> observers(4);
    std::vector<Status> status(4);
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w) {
      auto made = CreateEstimator("gbdt", params);
      ASSERT_TRUE(made.ok()) << made.status().ToString();
      models.push_back(std::move(*made));
    }
    for (int w = 0; w < 4; ++w) {
      threads.emplace_back([&, w] {
        std::vector<int64_t> rows;
        for (int64_t i = w; i < train.rows; i += 4) rows.push_back(i);
        FitContext c;
        c.collective = group.Worker(w);
        c.observer = &observers[static_cast<size_t>(w)];
        status[static_cast<size_t>(w)] = models[static_cast<size_t>(w)]->Fit(train.Select(rows), c);
      });
    }
    for (auto& t : threads) t.join();
    for (const Status& st : status) ASSERT_TRUE(st.ok()) << st.ToString();
    Result<Prediction> p = models[0]->Predict(test, 1);
    ASSERT_TRUE(p.ok());
    int correct = 0;
    for (int64_t i = 0; i < test.rows; ++i) {
      correct += static_cast<int>(p->value[static_cast<size_t>(i)]) == test.labels[static_cast<size_t>(i)];
    }
    accuracy[voting] = static_cast<double>(correct) / static_cast<double>(test.rows);
    mb[voting] = observers[0].mb;
    ASSERT_EQ(mb[voting].size(), 5u);
  }
  EXPECT_GT(accuracy[0], 0.8);
  EXPECT_NEAR(accuracy[1], accuracy[0], 0.03);
  for (size_t r = 0; r < 5; ++r) {
    EXPECT_GT(mb[1][r], 0) << r;
    // 6 of 60 features' histograms (plus 60 votes) per node instead of 60: well under a third.
    EXPECT_LT(mb[1][r] * 3, mb[0][r]) << "round " << r;
  }
}

TEST(VotingLearnerTest, DataCentreSumsOfTheThreadCollectiveStayInTheirCentre) {
  ThreadCollectiveGroup group({2, 1});
  std::vector<std::vector<float>> got(3);
  std::vector<Placement> where(3);
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      std::vector<float> v = {static_cast<float>((w + 1) * (w + 1)), static_cast<float>(100 + w)};
      EXPECT_TRUE(group.Worker(w)->DataCentreSum("t", v).ok());
      got[static_cast<size_t>(w)] = v;
      where[static_cast<size_t>(w)] = group.Worker(w)->placement();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(got[0], (std::vector<float>{5, 201}));  // 1 + 4, 100 + 101
  EXPECT_EQ(got[1], (std::vector<float>{5, 201}));
  EXPECT_EQ(got[2], (std::vector<float>{9, 102}));  // alone in its data centre
  EXPECT_EQ(where[1].centre, 0);
  EXPECT_EQ(where[1].centre_rank, 1);
  EXPECT_EQ(where[1].centre_size, 2);
  EXPECT_EQ(where[2].centre, 1);
  EXPECT_EQ(where[2].centre_rank, 0);
  EXPECT_EQ(where[2].centres, 2);
}

}  // namespace
}  // namespace geomx::algorithms::trees
