// k-means clustering ("kmeans"): the Lloyd step behind the estimator, exposed so that a test can check one step
// against a hand computation and the distributed step against the single-process one.
//
// The estimator is created by name (CreateEstimator("kmeans", ...)): Lloyd's algorithm or mini-batch k-means
// (Sculley 2010), initialised by k-means++ (greedy, as scikit-learn) or k-means|| (Bahmani et al. 2012, as Spark).
// Across workers each Lloyd step sums the per-cluster (sum vector, weight, SSE) of every shard, so every worker
// computes the same new centres; the initialisations sample with shared random draws and gathered candidates so
// that every worker also starts from the same centres.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms {

struct KMeansStep {
  std::vector<float> centres;       // k x cols: each cluster's weighted mean; a cluster left empty keeps its centre
  std::vector<double> weights;      // k: each cluster's summed row weights (row counts when the table has none)
  double inertia = 0;               // sum of w_i ||x_i - c(x_i)||^2 under the given centres (before the update),
                                    // from the GEMM distances: within about 1e-6 relative of the exact sum
  std::vector<int32_t> assignment;  // this shard's rows: the nearest given centre (equal distances: smaller id)
};

// One Lloyd step of `shard` from `centres` (k rows of shard.cols floats, row-major). With a collective, every
// worker passes its own shard and the same centres and gets the same result (one AllReduceSum of k * (cols + 2) + 2
// floats: the sums, weights and SSE per cluster, the changed-assignment count and an interrupt flag). Sums travel
// as floats, as they do in the estimator. kInvalidArgument for a centre matrix of the wrong size (checked before any
// collective call: every worker must then fail alike).
Result<KMeansStep> KMeansLloydStep(const data::Table& shard, const std::vector<float>& centres, int64_t k,
                                   Collective* collective, int threads);

}  // namespace geomx::algorithms
