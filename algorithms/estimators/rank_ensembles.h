// What the two boosted ranking ensembles, rankboost (rankboost.cc) and adarank (adarank.cc), share: the checks of a
// ranking table, the rows of each query, the per-query metric AdaRank boosts on, the job-wide shape every worker
// agrees on before the first round, and their test seams (docs/algorithms.md#rankboost, #adarank).
//
// Everything here is a pure function of its arguments (thread-compatible); the collective calls are made by every
// worker of a job in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "algorithms/estimators/estimator.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms {

// kInvalidArgument naming `name` and the table for what a ranking fit cannot use: no relevance labels or no qids
// (also a size mismatch), a relevance label that is NaN or infinite, a row weight that is negative or not finite.
// An empty table passes (the job-wide counts decide; one worker may hold no query).
Status CheckRankingTable(const std::string& name, const data::Table& train);

// The metric AdaRank boosts on, for one query: NDCG@k or average precision with exactly the definitions of
// MeanNdcgAt / MeanAveragePrecision (estimator.h): equal scores ranked pessimistically, NDCG of a query whose ideal
// DCG is 0 = 1, AP of a query without relevant rows = 0 (such queries are left out of training).
enum class RankMetric : uint8_t { kNdcg, kMap };
double QueryMetric(RankMetric metric, int k, const std::vector<int64_t>& rows, const std::vector<double>& scores,
                   const std::vector<float>& relevance);

// What every worker knows about the job's table after the first exchange (an AllGather of three numbers).
struct RankJobShape {
  int64_t rows = 0;   // all workers
  int64_t units = 0;  // all workers: crucial pairs (rankboost) or informative queries (adarank)
};
// kInvalidArgument naming `name` when the workers' column counts differ, the job's table is empty, or `units` sum to
// zero (`what_missing` says why, e.g. "no query holds two different relevance levels").
Result<RankJobShape> ExchangeRankJobShape(const std::string& name, const data::Table& train, int64_t units,
                                          const std::string& what_missing, Collective* collective);

// Test seams (tests/algorithms/estimators/rank_ensembles_test.cc).
// The crucial pairs (i more relevant than j, row indices of the training table) of a fitted rankboost and their
// distribution D after its last round, normalised to sum 1 over this worker's pairs. kFailedPrecondition for another
// estimator or a model that was loaded rather than fitted.
struct RankBoostPairWeights {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<double> weights;
};
Result<RankBoostPairWeights> RankBoostPairWeightsForTesting(const Estimator& estimator);
// The query weights P(q) of a fitted adarank after its last round, one per informative query of this worker in order
// of first appearance, normalised to sum 1, with those queries' qids. kFailedPrecondition as above.
struct AdaRankQueryWeights {
  std::vector<int64_t> qids;
  std::vector<double> weights;
};
Result<AdaRankQueryWeights> AdaRankQueryWeightsForTesting(const Estimator& estimator);

}  // namespace geomx::algorithms
