#include "algorithms/estimators/rank_ensembles.h"

#include <algorithm>
#include <cmath>

namespace geomx::algorithms {

namespace {

std::string Source(const data::Table& t) { return t.source.empty() ? std::string("the training table") : t.source; }

}  // namespace

Status CheckRankingTable(const std::string& name, const data::Table& train) {
  if (train.rows == 0) return Status::Ok();
  if (!train.has_targets() || train.qids.empty()) {
    return Status::InvalidArgument(name + " needs relevance labels and query ids (qid:); " + Source(train) +
                                   " lacks them");
  }
  if (static_cast<int64_t>(train.targets.size()) != train.rows ||
      static_cast<int64_t>(train.qids.size()) != train.rows) {
    return Status::InvalidArgument(name + ": " + Source(train) + " has " + std::to_string(train.targets.size()) +
                                   " relevance labels and " + std::to_string(train.qids.size()) + " qids for " +
                                   std::to_string(train.rows) + " rows");
  }
  for (size_t i = 0; i < train.targets.size(); ++i) {
    if (!std::isfinite(train.targets[i])) {
      return Status::InvalidArgument(name + ": the relevance label of row " + std::to_string(i) + " of " +
                                     Source(train) + " is not a finite number");
    }
  }
  for (float w : train.weights) {
    if (!(w >= 0) || !std::isfinite(w)) {
      return Status::InvalidArgument(name + ": row weights must be finite and >= 0 (" + Source(train) + ")");
    }
  }
  return Status::Ok();
}

double QueryMetric(RankMetric metric, int k, const std::vector<int64_t>& rows, const std::vector<double>& scores,
                   const std::vector<float>& relevance) {
  std::vector<int64_t> order = rows;
  // Descending score, equal scores by ascending relevance (metrics.cc's pessimistic order), then table order.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const double sa = scores[static_cast<size_t>(a)], sb = scores[static_cast<size_t>(b)];
    if (sa != sb) return sa > sb;
    return relevance[static_cast<size_t>(a)] < relevance[static_cast<size_t>(b)];
  });
  if (metric == RankMetric::kMap) {
    int64_t relevant = 0, seen = 0;
    double sum = 0;
    for (int64_t i : order) {
      ++seen;
      if (relevance[static_cast<size_t>(i)] > 0) {
        ++relevant;
        sum += static_cast<double>(relevant) / static_cast<double>(seen);
      }
    }
    return relevant > 0 ? sum / static_cast<double>(relevant) : 0.0;
  }
  auto dcg_of = [&](const std::vector<float>& rel_in_order) {
    double dcg = 0;
    for (size_t r = 0; r < rel_in_order.size() && r < static_cast<size_t>(k); ++r) {
      dcg += (std::pow(2.0, rel_in_order[r]) - 1.0) / std::log2(static_cast<double>(r) + 2.0);
    }
    return dcg;
  };
  std::vector<float> ranked, ideal;
  for (int64_t i : order) ranked.push_back(relevance[static_cast<size_t>(i)]);
  ideal = ranked;
  std::sort(ideal.begin(), ideal.end(), std::greater<float>());
  const double idcg = dcg_of(ideal);
  return idcg > 0 ? dcg_of(ranked) / idcg : 1.0;
}

Result<RankJobShape> ExchangeRankJobShape(const std::string& name, const data::Table& train, int64_t units,
                                          const std::string& what_missing, Collective* collective) {
  const std::vector<float> mine = {static_cast<float>(train.rows), static_cast<float>(units),
                                   static_cast<float>(train.cols)};
  std::vector<float> all = mine;
  if (collective != nullptr && collective->world() > 1) {
    GEOMX_ASSIGN_OR_RETURN(all, collective->AllGather(name + "/shape", mine));
    if (all.size() != 3 * static_cast<size_t>(collective->world())) {
      return Status::Internal(name + ": malformed shape exchange (" + std::to_string(all.size()) + " values)");
    }
  }
  RankJobShape shape;
  // Workers holding no row (a shard without queries) have no say in the column count.
  float cols = -1;
  for (size_t w = 0; w < all.size(); w += 3) {
    shape.rows += static_cast<int64_t>(all[w]);
    shape.units += static_cast<int64_t>(all[w + 1]);
    if (all[w] == 0) continue;
    if (cols >= 0 && all[w + 2] != cols) {
      return Status::InvalidArgument(name + ": the workers' tables have different column counts (" +
                                     std::to_string(static_cast<int64_t>(cols)) + " and " +
                                     std::to_string(static_cast<int64_t>(all[w + 2])) + ")");
    }
    cols = all[w + 2];
  }
  if (shape.rows == 0) return Status::InvalidArgument(name + ": " + Source(train) + " is empty");
  if (cols < 1) return Status::InvalidArgument(name + ": " + Source(train) + " has no feature columns");
  if (shape.units == 0) return Status::InvalidArgument(name + ": " + Source(train) + " has " + what_missing);
  return shape;
}

}  // namespace geomx::algorithms
