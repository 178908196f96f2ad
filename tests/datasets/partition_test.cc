#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "datasets/loader.h"

namespace geomx::data {
namespace {

// n examples, label i * classes / n (sorted by class, like a freshly read MNIST would not be) or i % classes.
class LabelsOnly final : public Dataset {
 public:
  LabelsOnly(int64_t n, int classes, bool blocked, std::vector<int64_t> qids = {})
      : n_(n), classes_(classes), blocked_(blocked), qids_(std::move(qids)) {
    info_.example_shape = {1};
    info_.num_classes = classes;
  }
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return n_; }
  int64_t Label(int64_t i) const override { return blocked_ ? i * classes_ / n_ : i % classes_; }
  void Get(int64_t i, float* out, Rng*) const override { out[0] = static_cast<float>(i); }
  int64_t QueryId(int64_t i) const override { return qids_.empty() ? -1 : qids_[static_cast<size_t>(i)]; }

 private:
  DatasetInfo info_;
  int64_t n_;
  int classes_;
  bool blocked_;
  std::vector<int64_t> qids_;
};

struct Case {
  PartitionKind kind;
  float alpha;
};

class PartitionCoverTest : public ::testing::TestWithParam<Case> {};

TEST_P(PartitionCoverTest, EveryIndexGoesToExactlyOneRank) {
  const LabelsOnly d(1003, 10, /*blocked=*/false);
  for (int world : {1, 2, 3, 4, 7}) {
    std::vector<int> owner(1003, -1);
    for (int rank = 0; rank < world; ++rank) {
      const auto part = PartitionIndices(d, GetParam().kind, GetParam().alpha, rank, world, /*seed=*/42);
      EXPECT_EQ(part, PartitionIndices(d, GetParam().kind, GetParam().alpha, rank, world, 42)) << "deterministic";
      for (int64_t i : part) {
        ASSERT_TRUE(i >= 0 && i < 1003);
        EXPECT_EQ(owner[static_cast<size_t>(i)], -1) << "index " << i << " given twice";
        owner[static_cast<size_t>(i)] = rank;
      }
    }
    EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0) << "world " << world;
  }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, PartitionCoverTest,
                         ::testing::Values(Case{PartitionKind::kIid, 0}, Case{PartitionKind::kByClass, 0},
                                           Case{PartitionKind::kDirichlet, 0.1f}, Case{PartitionKind::kDirichlet, 0.5f},
                                           Case{PartitionKind::kDirichlet, 100.0f}));

std::set<int64_t> ClassesOf(const Dataset& d, const std::vector<int64_t>& part) {
  std::set<int64_t> s;
  for (int64_t i : part) s.insert(d.Label(i));
  return s;
}

TEST(PartitionTest, IidIsBalancedAndMixesClassesAndDependsOnSeed) {
  const LabelsOnly d(1000, 10, true);
  for (int rank = 0; rank < 4; ++rank) {
    const auto part = PartitionIndices(d, PartitionKind::kIid, 0, rank, 4, 1);
    EXPECT_EQ(part.size(), 250u);
    EXPECT_EQ(ClassesOf(d, part).size(), 10u);
  }
  EXPECT_NE(PartitionIndices(d, PartitionKind::kIid, 0, 0, 4, 1), PartitionIndices(d, PartitionKind::kIid, 0, 0, 4, 2));
}

TEST(PartitionTest, ByClassGivesEachRankFewClasses) {
  // GeoMX's non-IID split: 10 classes over 4 workers, about 2.5 classes each.
  const LabelsOnly d(6000, 10, /*blocked=*/false);
  for (int rank = 0; rank < 4; ++rank) {
    const auto part = PartitionIndices(d, PartitionKind::kByClass, 0, rank, 4, 7);
    EXPECT_EQ(part.size(), 1500u);
    EXPECT_LE(ClassesOf(d, part).size(), 4u);
  }
  // 10 ranks: one class each.
  for (int rank = 0; rank < 10; ++rank) {
    const auto part = PartitionIndices(d, PartitionKind::kByClass, 0, rank, 10, 7);
    EXPECT_EQ(ClassesOf(d, part), (std::set<int64_t>{rank}));
  }
}

// Mean over ranks of the largest class share in a rank's part: 1/classes for IID, up to 1 for fully skewed.
double MeanTopShare(const Dataset& d, PartitionKind kind, float alpha, int world) {
  double total = 0;
  for (int rank = 0; rank < world; ++rank) {
    const auto part = PartitionIndices(d, kind, alpha, rank, world, 3);
    std::vector<int64_t> counts(10);
    for (int64_t i : part) ++counts[static_cast<size_t>(d.Label(i))];
    total += part.empty() ? 1.0 : static_cast<double>(*std::max_element(counts.begin(), counts.end())) / part.size();
  }
  return total / world;
}

TEST(PartitionTest, DirichletSkewFollowsAlpha) {
  const LabelsOnly d(10000, 10, false);
  const double skewed = MeanTopShare(d, PartitionKind::kDirichlet, 0.05f, 5);
  const double mild = MeanTopShare(d, PartitionKind::kDirichlet, 1000.0f, 5);
  EXPECT_GT(skewed, 0.4);
  EXPECT_LT(mild, 0.15);
  // Every rank gets some data even at tiny alpha.
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_FALSE(PartitionIndices(d, PartitionKind::kDirichlet, 0.01f, rank, 8, 11).empty()) << rank;
  }
}

TEST(PartitionTest, IidKeepsQueriesWhole) {
  std::vector<int64_t> qids;
  for (int q = 0; q < 30; ++q) {
    for (int k = 0; k < 1 + q % 4; ++k) qids.push_back(q);
  }
  const LabelsOnly d(static_cast<int64_t>(qids.size()), 3, false, qids);
  std::vector<int> owner_of_query(30, -1);
  size_t total = 0;
  for (int rank = 0; rank < 3; ++rank) {
    const auto part = PartitionIndices(d, PartitionKind::kIid, 0, rank, 3, 5);
    total += part.size();
    for (int64_t i : part) {
      int& owner = owner_of_query[static_cast<size_t>(qids[static_cast<size_t>(i)])];
      EXPECT_TRUE(owner == -1 || owner == rank);
      owner = rank;
    }
  }
  EXPECT_EQ(total, qids.size());
}

}  // namespace
}  // namespace geomx::data
