// The tree grower of the histogram tree learner: grows one regression tree on per-row (gradient, hessian) pairs over
// a binned table, depth-wise (level by level, as XGBoost's grow_policy=depthwise) or leaf-wise (always the open leaf
// of largest gain, as grow_policy=lossguide and LightGBM), with column sampling per tree, level and node.
//
// Rows are kept as one index array partitioned per node (each node owns a contiguous range, rows in ascending order),
// so a histogram reads only the node's rows. Of two siblings only the one with fewer rows is built; the other is
// its parent's histogram minus it.
//
// Distributed ("exact" mode, docs/algorithms.md): every worker holds a shard binned with the same cuts and grows
// with the same options and seed. Per step (a depth-wise level, or a leaf-wise expansion) the row counts of the new
// children and then the histograms of the built children are summed over the workers (AllReduceSum, as floats), so
// every worker finds the same splits on the same sums and all build the same tree. The sequence of collective calls
// depends only on summed values, so the workers stay in lock step.
//
// Distributed, "voting" mode (PV-Tree, Meng et al. 2016, LightGBM's voting learner, over the two tiers): the
// histograms of the built children are summed within each data centre only (Collective::DataCentreSum: LAN), the
// siblings derived by subtraction at both levels (own shard and data centre). For each new node every data centre
// ranks the node's features by the best split gain on its own histogram and votes for its top_k (one vote per data
// centre: its first worker's); the votes are summed over the job (F floats per node), and the 2 x top_k features
// with most votes (ties: lower feature id) are the only ones whose histograms are summed over the job (WAN). The
// node's split is the best on those exact sums, so every worker still builds the same tree; a split the voting
// missed is the approximation. Per node the WAN carries 2 x top_k features' histograms plus F votes instead of all
// F features' histograms. With one data centre, voting is exact mode.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/histogram.h"
#include "algorithms/estimators/trees/split.h"
#include "algorithms/estimators/trees/tree.h"
#include "engine/base/status.h"

namespace geomx::algorithms::trees {

enum class GrowPolicy : uint8_t { kDepthwise, kLossguide };
// How histograms cross data centres (above): all of them, or the voted features' only.
enum class TreeLearner : uint8_t { kExact, kVoting };

struct GrowerOptions {
  SplitParams split;
  int max_depth = 6;   // 0 = no limit (lossguide with max_leaves only)
  int max_leaves = 0;  // 0 = no limit
  GrowPolicy policy = GrowPolicy::kDepthwise;
  double colsample_bytree = 1;   // share of the features each tree may use
  double colsample_bylevel = 1;  // share of the tree's features each depth may use
  double colsample_bynode = 1;   // share of the level's features each split may use
  TreeLearner learner = TreeLearner::kExact;
  int top_k = 20;  // voting: the features each data centre votes for per node (>= 1)
};

// Grows trees over one binned table. Not thread-safe (one per fit); threads are used inside Grow.
class TreeGrower {
 public:
  // `bins` and `cuts` are borrowed and outlive the grower; `collective` may be null (one process).
  TreeGrower(const BinMatrix* bins, const BinCuts* cuts, const GrowerOptions& options, Collective* collective,
             int threads);

  // Grows one tree on `gpair` (one pair per row of the bins; a (0, 0) pair leaves the row out). The leaves get the
  // unscaled weights LeafWeight(G, H) of split.h; leaf_of_row[i] <- the node id of row i's leaf. `seed` drives the
  // column sampling and must be the same on every worker.
  Status Grow(const std::vector<GradPair>& gpair, uint64_t seed, Tree* tree, std::vector<int32_t>* leaf_of_row);

  // Floats this worker has summed through the collective so far (histograms and counts).
  int64_t summed_floats() const { return summed_floats_; }
  const HistLayout& layout() const { return layout_; }

 private:
  struct Node {
    int64_t begin = 0, end = 0;  // range in positions_
    double g = 0, h = 0;         // totals
    int32_t depth = 0;
    std::vector<double> hist;         // kept while the node may still split (voting: this worker's rows only)
    std::vector<double> centre_hist;  // voting: the data centre's histogram
    SplitCandidate split;
  };
  // Splits nodes `ids` (each has a valid split and a histogram): partitions their rows, sums the children's counts
  // and built histograms over the workers, derives the siblings, finds the children's splits. Appends the new ids.
  Status Expand(const std::vector<int32_t>& ids, const std::vector<GradPair>& gpair, uint64_t seed,
                std::vector<int32_t>* children);
  void FindSplit(int32_t id, uint64_t seed);
  // The features node `id` may split on (column sampling by tree, level and node), ascending.
  std::vector<int32_t> NodeFeatures(int32_t id, uint64_t seed) const;
  // Voting mode: the splits of `ids` (each with its own and data-centre histograms) through the vote above.
  Status VoteSplits(const std::vector<int32_t>& ids, uint64_t seed);
  bool voting() const { return voting_; }
  void DropHistograms(Node* n) const {
    n->hist = {};
    n->centre_hist = {};
  }
  bool CanSplitAt(int32_t depth) const { return options_.max_depth <= 0 || depth < options_.max_depth; }
  Status Sum(const std::string& key, std::vector<double>* values);
  Status CentreSum(const std::string& key, std::vector<double>* values);  // voting: within the data centre

  const BinMatrix* bins_;
  const BinCuts* cuts_;
  GrowerOptions options_;
  Collective* collective_;
  int threads_;
  HistLayout layout_;
  HistBuilder builder_;
  std::vector<int32_t> positions_;
  std::vector<Node> nodes_;
  Tree* tree_ = nullptr;
  std::vector<int32_t> tree_features_;
  int64_t summed_floats_ = 0;
  bool voting_ = false;  // learner kVoting with a collective over more than one data centre
};

// `from` (ascending) sampled down to max(1, round(fraction x size)) entries, ascending, drawn from Rng(key).
std::vector<int32_t> SampleFeatures(const std::vector<int32_t>& from, double fraction, uint64_t key);

}  // namespace geomx::algorithms::trees
