// The tree model of the ensembles: regression trees over raw feature values, an ensemble of them grouped by output
// (one group per class for softmax boosting), their model-file sections and their JSON dump.
//
// A node either splits (feature, threshold: a row goes left iff x < threshold; a missing value (NaN) goes the
// node's default direction) or is a leaf with a value added to its group's margin. Nodes are stored in creation
// order, children after their parent (node 0 is the root), which Load checks, so a walk always ends.
//
// JSON dump (format "geomx-trees", version 1; docs/algorithms.md, "Tree ensembles"):
//   {"format": "geomx-trees", "version": 1, "num_feature": D, "num_group": K, "base_margin": [K numbers],
//    "trees": [{"group": k, "nodes": [NODE, ...]}, ...]}
//   NODE, split: {"id": i, "depth": d, "feature": f, "threshold": t, "default_left": true|false, "left": id,
//                 "right": id, "gain": g, "cover": c}
//   NODE, leaf:  {"id": i, "depth": d, "leaf": v, "cover": c}
// The margin of a row in group k is base_margin[k] plus the leaf values of the group's trees; "cover" is the
// hessian sum of the training rows that reached the node, "gain" the split's loss change (split.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/estimators/model_file.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms::trees {

struct TreeNode {
  int32_t left = -1;  // children (-1: a leaf)
  int32_t right = -1;
  int32_t feature = -1;
  int32_t bin = 0;           // training rows: left iff their bin <= this (binning.h)
  float threshold = 0;       // raw values: left iff x < threshold
  bool default_left = true;  // where a missing value goes
  int32_t depth = 0;
  float value = 0;  // leaf: its contribution to the margin
  float gain = 0;   // split: loss change
  float cover = 0;  // hessian sum of the training rows reaching it
  bool is_leaf() const { return left < 0; }
};

struct Tree {
  std::vector<TreeNode> nodes;
  int32_t group = 0;
  // The leaf a dense row (all features present, NaN = missing) reaches.
  int32_t LeafOf(const float* x) const {
    int32_t i = 0;
    while (!nodes[static_cast<size_t>(i)].is_leaf()) {
      const TreeNode& n = nodes[static_cast<size_t>(i)];
      const float v = x[n.feature];
      i = (v != v) ? (n.default_left ? n.left : n.right) : (v < n.threshold ? n.left : n.right);
    }
    return i;
  }
  int32_t Leaves() const;
};

enum class ImportanceKind : uint8_t { kWeight, kGain, kCover, kTotalGain, kTotalCover };

// Trees plus the base margins: everything prediction needs. A value; any number of threads may predict at once.
struct Ensemble {
  int64_t features = 0;
  int32_t groups = 1;
  std::vector<float> base_margin;  // groups
  std::vector<Tree> trees;

  // rows x groups margins of `table` (same column count, checked by the caller) using the first `max_trees` trees
  // (-1: all).
  std::vector<float> PredictMargins(const data::Table& table, int threads, int64_t max_trees = -1) const;
  // Adds tree `t`'s leaf values to `margins` (rows x groups) for every row of `table`.
  void AddTree(const data::Table& table, const Tree& t, int threads, std::vector<float>* margins) const;

  // Per feature, as XGBoost's get_score: weight (splits on it), gain / cover (mean over its splits), total_gain /
  // total_cover (sums).
  std::vector<double> Importance(ImportanceKind kind) const;
  std::string DumpJson() const;
  // "feature,weight,gain,cover,total_gain,total_cover" then one line per feature (its column index): Importance of
  // every kind.
  std::string ImportanceCsv() const;

  // Model-file sections "<prefix>.trees.*".
  void Save(const std::string& prefix, ModelWriter* out) const;
  // kDataLoss naming the section for anything malformed (counts, child links, feature ids).
  Status Load(const std::string& prefix, const ModelReader& in);
};

}  // namespace geomx::algorithms::trees
