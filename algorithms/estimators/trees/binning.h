// Quantile binning for the histogram tree learner (docs/algorithms.md, "Tree ensembles"): every feature's values are
// cut into at most 255 bins at weighted quantiles, and the training table becomes a matrix of one-byte bin ids.
//
// Cuts: feature f has thresholds t_0 < t_1 < ... < t_{k-1} (k <= kMaxValueBins - 1); the bin of a value x is the
// number of thresholds <= x (0..k), so "bin <= b" is exactly "x < t_b", the test a tree node applies to raw floats.
// A missing value (NaN) has its own slot, bin k + 1 of that feature's histogram (MissingBin(f)). A CSR table's absent
// entries are the value 0 (LIBSVM's convention), binned like any 0.
//
// Sketch: each feature's non-missing values, with their row weights, are compressed into a summary of at most
// `summary_size` weighted points (contiguous runs of the sorted distinct values of about equal weight, each
// represented by its largest value). A summary of data with at most summary_size distinct values is exact.
// Across workers every summary is gathered (AllGather) and the concatenation merged by every worker with the same
// code, so all workers hold identical cuts; a single process merges its own summary with the same code.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms::trees {

// Value bins per feature at most (one byte holds these plus the missing slot).
constexpr int kMaxValueBins = 255;

// The thresholds of every feature. Immutable once built; any number of threads may read it.
struct BinCuts {
  int64_t features = 0;
  std::vector<int64_t> ptr;   // features + 1: thresholds of f are values[ptr[f], ptr[f+1])
  std::vector<float> values;  // thresholds, ascending per feature

  int ValueBins(int64_t f) const { return static_cast<int>(ptr[f + 1] - ptr[f]) + 1; }
  int MissingBin(int64_t f) const { return ValueBins(f); }
  // Slots of f in a histogram: its value bins and the missing slot.
  int Slots(int64_t f) const { return ValueBins(f) + 1; }
  // The bin of value x (NaN: the missing slot).
  int BinOf(int64_t f, float x) const;
  // The threshold between bins b and b + 1 of f (b < ValueBins(f) - 1).
  float Threshold(int64_t f, int b) const { return values[ptr[f] + b]; }
};

// The training table as bin ids: rows x features, row-major, one byte each.
struct BinMatrix {
  int64_t rows = 0;
  int64_t features = 0;
  std::vector<uint8_t> bins;
  const uint8_t* Row(int64_t i) const { return bins.data() + i * features; }
};

struct SketchOptions {
  int max_bin = 256;     // value bins per feature wanted (capped at kMaxValueBins)
  int summary_size = 0;  // points per feature in a worker's summary; 0 = 8 x max_bin
};

// The cuts of `table` (its row weights times `row_weights` when that is non-empty, e.g. hessians for XGBoost's
// weighted sketch). With `collective` set, the summaries of every worker are gathered and merged, so every worker
// gets the same cuts (every worker must call it, with the same options and column count).
Result<BinCuts> ComputeCuts(const data::Table& table, const std::vector<float>& row_weights,
                            const SketchOptions& options, Collective* collective, int threads);

// Cuts from already merged weighted points: `points[f]` are (value, weight) pairs of feature f in any order.
// Exposed for tests (the merge of summaries) and used by ComputeCuts.
BinCuts CutsFromPoints(std::vector<std::vector<std::pair<float, double>>> points, int max_bin);

// The bin ids of every row of `table` under `cuts` (same column count; checked by the caller).
BinMatrix BinTable(const data::Table& table, const BinCuts& cuts, int threads);

}  // namespace geomx::algorithms::trees
