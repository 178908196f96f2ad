// Random forests (Breiman 2001) on the histogram tree learner's bins: the grower of one randomised, fully grown
// classification or regression tree, the forest model (trees plus per-leaf class distributions), its model-file
// sections and the serialisation that carries trees between workers. The "random-forest" and
// "random-forest-regressor" estimators (random_forest.cc) fit with FitForest().
// Implemented in forest.cc (the grower, FitForest) and forest_model.cc (Forest, the tree serialisation).
//
// Growing one tree (scikit-learn's RandomForest semantics, on quantile bins as LightGBM's rf mode):
//  - Bootstrap: round(max_samples x rows) draws with replacement (BootstrapCounts); a row's weight is its draw count
//    times its table weight; rows drawn 0 times (or of weight 0) are out of bag. Without bootstrap every row counts
//    once.
//  - Depth-first growth. A node becomes a leaf at max_depth (when > 0), with fewer than min_samples_split distinct
//    rows or fewer than 2 x min_samples_leaf, or when pure (one class; zero target variance). Otherwise features are
//    drawn without replacement in random order; a feature constant on the node's rows does not count, and the
//    search stops after max_features non-constant ones (as scikit-learn). For each feature the node's rows are
//    grouped by bin (a class-weight histogram of the sampled feature only: dense over the feature's bins for large
//    nodes, a sort of the node's bin ids for small ones) and every boundary between occupied bins is scored.
//  - Split score: classification gini sum_c L_c^2 / W_L + sum_c R_c^2 / W_R or entropy sum_c L_c ln L_c -
//    W_L ln W_L + (same for R), regression S_L^2 / W_L + S_R^2 / W_R (L_c, R_c: class weights of the children, W their
//    weights, S their weighted target sums): scikit-learn's proxy impurity improvements. The best (first on ties:
//    lowest drawn position, then lowest bin) split with both children holding >= min_samples_leaf distinct rows wins.
//  - Missing values (NaN) sit in the bin after every value bin, so they go right (default_left = false); a split
//    may separate present from missing values (threshold +inf).
//  - A node's gain is the weighted impurity decrease W_t i_t - W_L i_L - W_R i_R (gini, entropy in bits, variance),
//    its cover the weight W_t: Importance() is scikit-learn's mean decrease in impurity.
//  - Leaves: classification the class weights / W (predict_proba averages them over the trees, the class is the
//    argmax, first on ties), regression the weighted mean target (TreeNode::value).
//
// Determinism: tree t is grown from ForestTreeSeed(seed, t) alone, one tree per thread, so the forest is the same
// for any thread count. Across workers (FitForest with a collective) worker r grows the trees t with t % world == r
// on its own shard, binned with its own shard's cuts (a tree's thresholds are raw values, so trees from different
// cuts mix freely), and the trees are gathered (AllGather of SerializeTrees) and ordered by t: every worker holds
// the same forest, equal to the trees grown on each shard by a single process with the same seeds.
//
// Model file (version 1; docs/algorithms.md, "Random forest"), prefix P (the estimator name):
//   P.forest.meta        i64 [1 (version), features, classes (0: regression), trees, has_oob (0/1)]
//   P.forest.trees.*     the trees as tree.h's Ensemble sections (one group, base margin 0; leaf value: the
//                        regression mean, or the majority class for classification)
//   P.forest.leaf_proba  f32, classification only: per tree in order, per leaf in node order, `classes` values
//   P.forest.oob         f64, the out-of-bag score (when has_oob)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/tree.h"

namespace geomx::algorithms::trees {

enum class ForestCriterion : uint8_t { kGini, kEntropy, kSquaredError };
enum class MaxFeaturesRule : uint8_t { kSqrt, kLog2, kFraction };

struct ForestOptions {
  std::string name = "random-forest";  // error prefix and model-file prefix
  ForestCriterion criterion = ForestCriterion::kGini;
  int64_t trees = 100;
  int max_depth = 0;               // 0 = no limit (grow until pure or too small)
  int64_t min_samples_split = 2;   // distinct rows a node needs to split (>= 2)
  int64_t min_samples_leaf = 1;    // distinct rows each child needs (>= 1)
  MaxFeaturesRule max_features_rule = MaxFeaturesRule::kSqrt;
  double max_features = 1;         // kFraction: share of the features per split, in (0, 1]
  bool bootstrap = true;
  double max_samples = 1;          // bootstrap draws = max(1, round(max_samples x rows)), in (0, 1]
  bool oob_score = false;          // compute the out-of-bag score (needs bootstrap)
  int max_bin = 256;               // quantile bins per feature (binning.h caps value bins at 255)
  bool classification() const { return criterion != ForestCriterion::kSquaredError; }
};

// Features each split examines (non-constant ones) out of `features`: sqrt and log2 as int(f(features)),
// a fraction as int(fraction x features), at least 1 (scikit-learn).
int64_t FeaturesPerSplit(const ForestOptions& options, int64_t features);
// The seed of tree t of a forest fitted with `seed`.
uint64_t ForestTreeSeed(uint64_t seed, int64_t t);
// The draw counts of a tree's bootstrap over `rows` rows (max(1, round(max_samples x rows)) uniform draws).
std::vector<uint32_t> BootstrapCounts(int64_t rows, double max_samples, uint64_t tree_seed);

// A fitted forest. A value; any number of threads may predict at once.
struct Forest {
  int64_t features = 0;
  int32_t classes = 0;  // 0: regression
  std::vector<Tree> trees;
  // Classification: per tree, its leaves' class distributions (leaves in node order, `classes` values each).
  std::vector<std::vector<float>> leaf_proba;
  // Per tree, node id -> its leaf's ordinal (-1 for a split): derived by IndexLeaves().
  std::vector<std::vector<int32_t>> leaf_slot;

  void IndexLeaves();
  // Adds tree t's output for dense row x to out[0 .. max(classes, 1)).
  void AddTreeOutput(size_t t, const float* x, double* out) const;
  // rows x classes mean class distributions, or rows mean values (regression), of `table` (same column count:
  // checked by the caller).
  std::vector<float> Predict(const data::Table& table, int threads) const;
  // Mean decrease in impurity per feature: each tree's gains normalised to sum 1, averaged, normalised to sum 1.
  std::vector<double> Importance() const;

  void Save(const std::string& prefix, double oob, bool has_oob, ModelWriter* out) const;
  // kDataLoss naming the section for anything malformed. `oob` <- the stored score or NaN.
  Status Load(const std::string& prefix, const ModelReader& in, double* oob);
};

// Trees (with their leaf distributions, `classes` per leaf) as floats and back, for AllGather: per tree
// [id, nodes, leaves, then per node left, right, feature, bin, default_left, depth, threshold, value, gain, cover,
// then leaves x classes]. Node counts, ids and features must be below 2^24 (exact in a float): kInvalidArgument.
Result<std::vector<float>> SerializeTrees(const std::vector<int64_t>& ids, const std::vector<Tree>& trees,
                                          const std::vector<std::vector<float>>& leaf_proba, int classes);
// Appends the decoded trees to ids / trees / leaf_proba; kInternal for a malformed stream.
Status DeserializeTrees(const std::vector<float>& data, int classes, int64_t features, std::vector<int64_t>* ids,
                        std::vector<Tree>* trees, std::vector<std::vector<float>>* leaf_proba);

// Grows trees of one forest over one binned table. Grow() is const and may run on several threads at once.
class ForestGrower {
 public:
  // `table` (labels or targets, weights) and `cuts` are borrowed and outlive the grower; `bins` is read here (the
  // grower keeps a feature-major copy). `classes` is the number of classes (classification) or 0.
  ForestGrower(const data::Table* table, const BinMatrix* bins, const BinCuts* cuts, const ForestOptions& options,
               int classes);
  // Grows one tree from `tree_seed` (bootstrap, feature draws). proba <- its leaves' distributions (classification);
  // counts <- the bootstrap's draw counts per row (all 1 without bootstrap).
  void Grow(uint64_t tree_seed, Tree* tree, std::vector<float>* proba, std::vector<uint32_t>* counts) const;

 private:
  struct Workspace;
  struct Best;
  void FindSplit(Workspace& ws, int64_t begin, int64_t end, const double* totals, double weight, Best* best) const;
  void ScoreFeature(Workspace& ws, int32_t f, int64_t begin, int64_t end, const double* totals, double weight,
                    Best* best, bool* constant) const;
  double Proxy(const double* left, const double* totals, double wl, double w) const;

  const data::Table* table_;
  int64_t rows_, features_;
  const BinCuts* cuts_;
  ForestOptions o_;
  int classes_;
  int stats_;                    // values per bin: classes, or 2 (weight, weighted target sum)
  int64_t per_split_ = 1;        // FeaturesPerSplit
  std::vector<uint8_t> columns_;  // bins feature-major (features x rows): a node's rows of one feature
};

struct ForestFit {
  Forest forest;
  bool has_oob = false;
  double oob = 0;  // accuracy or R^2 over the rows out of bag for at least one tree
  int64_t oob_rows = 0;
};

// Checks the table (kInvalidArgument naming the problem), bins it, grows the forest (across the collective's
// workers when `context.collective` is set: see above) and computes the out-of-bag score when asked.
Result<ForestFit> FitForest(const ForestOptions& options, const data::Table& train, const FitContext& context);

}  // namespace geomx::algorithms::trees
