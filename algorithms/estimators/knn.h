// k-nearest-neighbour classification ("knn"): the neighbour queries behind the estimator, and its query-broadcast
// distributed form.
//
// The estimator itself is created by name (CreateEstimator("knn", ...)); this header exposes what callers need
// beyond Estimator::Predict:
//  - KnnKNeighbors: the k nearest training rows of every query (as scikit-learn's kneighbors), for tests and tools.
//  - KnnKNeighborsDistributed / KnnPredictDistributed: "the data never moves". Each worker holds a model fitted
//    on its own shard; the same query table is given to every worker, each finds its local top-k, and the lists
//    are merged per query by the collective (Collective::AllMergeTopK: across data centres the local and global
//    servers merge, so every link carries queries x k entries of 24 bytes). Over contiguous shards in rank order the merged neighbours are exactly the
//    ones a single model over the whole table finds (same distances, same tie order).
//
// Neighbour order: nearest first; equal distances (compared as floats) go to the smaller training row index, and
// across workers to the smaller (rank, index). Reported distances are recomputed exactly (double accumulation) for
// the rows kept, so they do not depend on the GEMM blocking. All functions are thread-compatible, like Predict.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "algorithms/estimators/estimator.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms {

// The neighbours of `queries` query rows, k per row, row-major (entry q * k + j is the j-th nearest of query q).
struct KnnNeighbors {
  int64_t queries = 0;
  int64_t k = 0;
  std::vector<float> distance;  // Euclidean (not squared) or Manhattan distance, as the model's metric
  std::vector<int64_t> index;   // training row within the worker's shard (the whole training set when local)
  std::vector<int32_t> rank;    // the worker whose shard holds the row (0 for a local query)
  std::vector<int32_t> label;   // the row's class id
};

// The k nearest training rows of each row of `queries` under `model` (a fitted or loaded "knn" estimator).
// kInvalidArgument when `model` is not a knn estimator or the column counts differ; kFailedPrecondition before
// Fit/Load.
Result<KnnNeighbors> KnnKNeighbors(const Estimator& model, const data::Table& queries, int threads);

// The global k nearest rows: `local` is this worker's model over its shard; every worker calls this with the same
// `queries` and its own `collective` member (two collective calls: a header gather, then the top-k lists).
// A shard with fewer than k rows contributes what it has. Every worker gets the same answer; an error on any
// worker (bad columns, different k) is reported by all of them.
Result<KnnNeighbors> KnnKNeighborsDistributed(const Estimator& local, const data::Table& queries,
                                              Collective* collective, int threads);

// KnnKNeighborsDistributed followed by the model's vote (uniform or 1/distance): the prediction a single model over
// the union of the shards makes.
Result<Prediction> KnnPredictDistributed(const Estimator& local, const data::Table& queries, Collective* collective,
                                         int threads);

}  // namespace geomx::algorithms
