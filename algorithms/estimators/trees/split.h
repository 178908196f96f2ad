// Split finding of the histogram tree learner: XGBoost's regularised objective (Chen & Guestrin 2016) on the
// (g, h) sums of a node.
//
// A leaf holding gradient sum G and hessian sum H takes the weight w = -T_alpha(G) / (H + lambda), T_alpha the soft
// threshold (L1), clamped to [-max_delta_step, max_delta_step] when max_delta_step > 0; a node with H <
// min_child_weight (or H <= 0) takes weight 0. Its score is the objective reduction
//     Score(G, H) = -(2 G w + (H + lambda) w^2 + 2 alpha |w|),
// which equals T_alpha(G)^2 / (H + lambda) when w is not clamped (XGBoost's scale: no factor 1/2). A split's gain
// (XGBoost's loss_chg) is Score(left) + Score(right) - Score(node); it is taken only when both children have
// H >= min_child_weight and H > 0, and the gain exceeds gamma (min_split_loss).
//
// Missing values: when the node has rows with a missing value of feature f (the missing slot's hessian sum exceeds
// 1e-9 x the node's: a subtracted histogram carries rounding noise), every threshold is tried with the missing rows
// sent left and sent right, and the better direction becomes the node's default; otherwise the default is left.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/estimators/trees/binning.h"
#include "algorithms/estimators/trees/histogram.h"

namespace geomx::algorithms::trees {

struct SplitParams {
  double lambda = 1;            // L2 on leaf weights
  double alpha = 0;             // L1 on leaf weights
  double gamma = 0;             // minimum gain of a split (min_split_loss)
  double min_child_weight = 1;  // minimum hessian sum of a child
  double max_delta_step = 0;    // |leaf weight| cap; 0 = none
};

// The leaf weight and score above.
double LeafWeight(const SplitParams& p, double g, double h);
double LeafScore(const SplitParams& p, double g, double h);

// The best split of one node.
struct SplitCandidate {
  int32_t feature = -1;  // -1: no valid split
  int32_t bin = -1;      // rows with bin <= this go left
  bool default_left = true;
  double gain = 0;  // loss_chg (before gamma is subtracted)
  double left_g = 0, left_h = 0, right_g = 0, right_h = 0;
  bool valid() const { return feature >= 0; }
};

// The best split of a node with histogram `hist` (layout of `cuts`) and totals (g, h), among `features` (ascending
// order; ties keep the first feature, then the lowest bin, then missing-right). No split beats gamma: invalid.
SplitCandidate FindBestSplit(const double* hist, const HistLayout& layout, const BinCuts& cuts,
                             const std::vector<int32_t>& features, double g, double h, const SplitParams& params);

}  // namespace geomx::algorithms::trees
