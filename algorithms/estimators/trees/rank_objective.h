// Learning-to-rank objectives of the tree boosters (docs/algorithms.md, "LambdaMART", "GBrank", "xgboost-ranker"):
// the rows of each query, the per-query pairwise gradients (RankNet and LambdaRank) and the checks a ranking table
// must pass, alone and across workers.
//
// For a query with rows a, b of relevance y_a > y_b and current scores s_a, s_b (the pair's weight w is the mean of
// the two rows' weights), with p = sigmoid(s_a - s_b):
//   g_a += w Z (p - 1),   g_b -= w Z (p - 1),   h_a += h_b += 2 w Z max(p (1 - p), 1e-16)
// (the gradients of w Z log(1 + exp(-(s_a - s_b))); the hessian has XGBoost's factor 2). Z is 1 for the pairwise
// objective (XGBoost's rank:pairwise, RankNet), which takes every pair of the query with different relevance. For
// LambdaRank (rank:ndcg, LambdaMART) Z = |delta NDCG@k| of swapping a and b in the current ranking: rows ranked by
// descending score (ties in row order), gain 2^y - 1, discount 1 / log2(position + 2) for positions < k and 0
// beyond, divided by the query's ideal DCG@k; k = 0 (or k >= the query's size) is the whole list. A query whose
// ideal DCG is 0 (no relevant row) gives no gradient. Only pairs with a row in the top k can have Z > 0, so the
// work per query is O(k x rows).
//
// Distributed: gradients depend on one query only, so a worker that holds whole queries computes them alone;
// CheckWholeQueries proves that it does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms::trees {

// The rows of every query: queries in order of first appearance, each query's rows ascending. A value.
struct QueryGroups {
  std::vector<int64_t> rows;  // all rows, query by query
  std::vector<int64_t> ptr;   // size() + 1: query q holds rows[ptr[q], ptr[q + 1])
  int64_t size() const { return ptr.empty() ? 0 : static_cast<int64_t>(ptr.size()) - 1; }
};
QueryGroups GroupQueries(const std::vector<int64_t>& qids);

enum class RankLoss : uint8_t {
  kPairwise,  // RankNet on every pair with different relevance (rank:pairwise)
  kNdcg,      // LambdaRank: RankNet gradients times |delta NDCG@k| (rank:ndcg)
};

struct RankGradientOptions {
  RankLoss loss = RankLoss::kNdcg;
  int ndcg_truncation = 0;  // k of NDCG@k in the lambdas; 0 = the whole list
};

// Per-row gradients and hessians (above) of `table` (its targets are the relevance, its weights the row weights)
// under `scores` (one per row), written to g and h (resized to table.rows; rows of no pair get 0). `groups` is
// GroupQueries(table.qids). Queries are independent: `threads` share them.
void RankGradients(const RankGradientOptions& options, const data::Table& table, const QueryGroups& groups,
                   const float* scores, int threads, std::vector<float>* g, std::vector<float>* h);

// The pairwise logistic loss: sum over every pair with y_a > y_b of w log(1 + exp(-(s_a - s_b))) (into *loss) and
// the sum of the pairs' weights (into *weight).
void PairwiseLogLoss(const data::Table& table, const QueryGroups& groups, const float* scores, double* loss,
                     double* weight);

// The sum over the queries of `table` of NDCG@k under `scores` (MeanNdcgAt's definition times the query count).
double SumNdcgAt(const data::Table& table, const QueryGroups& groups, const std::vector<float>& scores, int k);

// Checks one worker's ranking table: one finite relevance target and one qid per row, relevance >= 0 for `loss`
// kNdcg (gain 2^y - 1). Returns kInvalidArgument prefixed "<name>: " naming the problem (and the row).
Status CheckRankingTable(const std::string& name, const data::Table& table, RankLoss loss);

// Across workers (every worker calls it, `collective` not null): kInvalidArgument naming the query and the two
// workers when some query has rows on more than one worker (a ranking objective needs whole queries per worker;
// fit_job's ShardOf keeps them whole). The same verdict on every worker. Gathers 3 floats per local query.
Status CheckWholeQueries(const std::string& name, const data::Table& table, Collective* collective);

}  // namespace geomx::algorithms::trees
