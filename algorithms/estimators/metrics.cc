// The task metrics of estimators (declared in estimator.h): accuracy; rmse, mae, r2; NDCG@k and MAP; purity and NMI.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>

#include "algorithms/estimators/estimator.h"

namespace geomx::algorithms {
namespace {


// Rows of `rows` by descending score; ties broken by ascending relevance (the pessimistic order, so a constant
// scorer does not get credit for the file's order).
std::vector<int64_t> RankRows(std::vector<int64_t> rows, const std::vector<float>& scores,
                              const std::vector<float>& relevance) {
  std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return relevance[a] < relevance[b];
  });
  return rows;
}

}  // namespace

std::vector<std::vector<int64_t>> GroupByQuery(const std::vector<int64_t>& qids) {
  std::vector<std::vector<int64_t>> groups;
  std::unordered_map<int64_t, size_t> where;
  for (size_t i = 0; i < qids.size(); ++i) {
    auto [it, fresh] = where.emplace(qids[i], groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(static_cast<int64_t>(i));
  }
  return groups;
}

double MeanNdcgAt(const std::vector<float>& scores, const std::vector<float>& relevance,
                  const std::vector<int64_t>& qids, int k) {
  const auto groups = GroupByQuery(qids);
  if (groups.empty()) return 0;
  double total = 0;
  for (const auto& rows : groups) {
    auto dcg_of = [&](const std::vector<int64_t>& order) {
      double dcg = 0;
      for (size_t r = 0; r < order.size() && r < static_cast<size_t>(k); ++r) {
        dcg += (std::pow(2.0, relevance[order[r]]) - 1.0) / std::log2(static_cast<double>(r) + 2.0);
      }
      return dcg;
    };
    std::vector<int64_t> ideal = rows;
    std::sort(ideal.begin(), ideal.end(), [&](int64_t a, int64_t b) { return relevance[a] > relevance[b]; });
    const double idcg = dcg_of(ideal);
    total += idcg > 0 ? dcg_of(RankRows(rows, scores, relevance)) / idcg : 1.0;
  }
  return total / static_cast<double>(groups.size());
}

double MeanAveragePrecision(const std::vector<float>& scores, const std::vector<float>& relevance,
                            const std::vector<int64_t>& qids) {
  double total = 0;
  int64_t counted = 0;
  for (const auto& rows : GroupByQuery(qids)) {
    int64_t relevant = 0, seen = 0;
    double sum = 0;
    for (int64_t i : RankRows(rows, scores, relevance)) {
      ++seen;
      if (relevance[i] > 0) {
        ++relevant;
        sum += static_cast<double>(relevant) / static_cast<double>(seen);
      }
    }
    if (relevant > 0) {
      total += sum / static_cast<double>(relevant);
      ++counted;
    }
  }
  return counted > 0 ? total / static_cast<double>(counted) : 0.0;
}

double ClusterPurity(const std::vector<float>& clusters, const std::vector<int32_t>& labels) {
  std::map<int64_t, std::map<int32_t, int64_t>> counts;
  for (size_t i = 0; i < clusters.size() && i < labels.size(); ++i) ++counts[static_cast<int64_t>(clusters[i])][labels[i]];
  int64_t majority = 0;
  for (const auto& [c, per_label] : counts) {
    int64_t best = 0;
    for (const auto& [l, n] : per_label) best = std::max(best, n);
    majority += best;
  }
  return labels.empty() ? 0.0 : static_cast<double>(majority) / static_cast<double>(labels.size());
}

double NormalizedMutualInfo(const std::vector<float>& clusters, const std::vector<int32_t>& labels) {
  const size_t n = std::min(clusters.size(), labels.size());
  if (n == 0) return 0;
  std::map<std::pair<int64_t, int32_t>, double> joint;
  std::map<int64_t, double> pc;
  std::map<int32_t, double> pl;
  for (size_t i = 0; i < n; ++i) {
    const int64_t c = static_cast<int64_t>(clusters[i]);
    joint[{c, labels[i]}] += 1;
    pc[c] += 1;
    pl[labels[i]] += 1;
  }
  const double N = static_cast<double>(n);
  double mi = 0, hc = 0, hl = 0;
  for (const auto& [key, count] : joint) {
    mi += count / N * std::log(count * N / (pc[key.first] * pl[key.second]));
  }
  for (const auto& [c, count] : pc) hc -= count / N * std::log(count / N);
  for (const auto& [l, count] : pl) hl -= count / N * std::log(count / N);
  const double denom = 0.5 * (hc + hl);
  if (denom <= 0) return 1.0;  // both partitions are one block: identical
  return std::max(0.0, mi / denom);
}

Metrics EvaluateTask(data::TableTask task, const data::Table& truth, const Prediction& p) {
  Metrics out;
  const size_t n = std::min(p.value.size(), static_cast<size_t>(truth.rows));
  switch (task) {
    case data::TableTask::kClassification: {
      if (!truth.has_labels() || n == 0) break;
      int64_t right = 0;
      for (size_t i = 0; i < n; ++i) right += static_cast<int32_t>(p.value[i]) == truth.labels[i];
      out.push_back({"accuracy", static_cast<double>(right) / static_cast<double>(n)});
      break;
    }
    case data::TableTask::kRegression: {
      if (!truth.has_targets() || n == 0) break;
      double se = 0, ae = 0, mean = 0, var = 0;
      for (size_t i = 0; i < n; ++i) mean += truth.targets[i];
      mean /= static_cast<double>(n);
      for (size_t i = 0; i < n; ++i) {
        const double e = static_cast<double>(p.value[i]) - truth.targets[i];
        se += e * e;
        ae += std::fabs(e);
        var += (truth.targets[i] - mean) * (truth.targets[i] - mean);
      }
      out.push_back({"rmse", std::sqrt(se / static_cast<double>(n))});
      out.push_back({"mae", ae / static_cast<double>(n)});
      out.push_back({"r2", var > 0 ? 1.0 - se / var : 0.0});
      break;
    }
    case data::TableTask::kRanking: {
      if (!truth.has_targets() || truth.qids.size() != truth.targets.size() || n != truth.targets.size()) break;
      out.push_back({"ndcg@10", MeanNdcgAt(p.value, truth.targets, truth.qids, 10)});
      out.push_back({"map", MeanAveragePrecision(p.value, truth.targets, truth.qids)});
      break;
    }
    case data::TableTask::kClustering: {
      if (!truth.has_labels() || n == 0) break;
      out.push_back({"purity", ClusterPurity(p.value, truth.labels)});
      out.push_back({"nmi", NormalizedMutualInfo(p.value, truth.labels)});
      break;
    }
    case data::TableTask::kControl: {
      // A prediction is the return of the episode from the row's start state: their mean.
      if (n == 0) break;
      double sum = 0;
      for (size_t i = 0; i < n; ++i) sum += p.value[i];
      out.push_back({"return", sum / static_cast<double>(n)});
      break;
    }
  }
  return out;
}

}  // namespace geomx::algorithms
