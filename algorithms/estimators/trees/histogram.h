// Gradient/hessian histograms of the histogram tree learner: for one tree node, per feature and bin, the sums of the
// gradient and hessian of the node's rows whose value falls in that bin (binning.h), missing values in the
// feature's last slot. A node's best split is found on its histogram alone (split.h).
//
// Layout: one histogram is 2 x Size() doubles, (g, h) interleaved; feature f's slots start at Offset(f) and hold
// cuts.Slots(f) pairs (value bins, then the missing slot). Building is multi-threaded over features (each thread
// adds every row of the node into its own range of features: no per-thread copies to reduce, and every slot sums its
// rows in row order, so the result does not depend on the thread count). The sibling of a built child is parent -
// child (histogram subtraction).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/estimators/trees/binning.h"

namespace geomx::algorithms::trees {

// The gradient and hessian of one row for the tree being grown (zeros: the row is left out, e.g. not sampled).
struct GradPair {
  float g = 0;
  float h = 0;
};

// Where each feature's slots lie in a histogram. Immutable; shared by every histogram of a fit.
class HistLayout {
 public:
  HistLayout() = default;
  explicit HistLayout(const BinCuts& cuts);
  int64_t Offset(int64_t f) const { return offset_[static_cast<size_t>(f)]; }
  int64_t Size() const { return offset_.back(); }  // (g, h) slots in all
  int64_t features() const { return static_cast<int64_t>(offset_.size()) - 1; }
  const std::vector<int32_t>& offsets32() const { return offset32_; }

 private:
  std::vector<int64_t> offset_;    // features + 1
  std::vector<int32_t> offset32_;  // the same as int32 for the inner loop
};

// Builds histograms with up to `threads` threads. Not thread-safe (one per grower).
class HistBuilder {
 public:
  HistBuilder(const HistLayout* layout, int threads) : layout_(layout), threads_(threads < 1 ? 1 : threads) {}
  // out[0 .. 2 * Size()) <- the histogram of `rows` (indices into bins / gpair).
  void Build(const BinMatrix& bins, const GradPair* gpair, std::span<const int32_t> rows, double* out);

 private:
  const HistLayout* layout_;  // not owned; outlives the builder
  int threads_;
};

// out <- parent - child, element-wise over `n` doubles (out may alias parent).
void SubtractHistogram(const double* parent, const double* child, double* out, int64_t n);

}  // namespace geomx::algorithms::trees
