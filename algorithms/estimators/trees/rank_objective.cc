#include "algorithms/estimators/trees/rank_objective.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "algorithms/estimators/estimator.h"

namespace geomx::algorithms::trees {
namespace {

constexpr double kMinHessian = 1e-16;
constexpr int kPieceBits = 22;  // a qid travels as three 22-bit pieces: each exact in a float

double Gain(float y) { return std::exp2(static_cast<double>(y)) - 1.0; }

// log(1 + exp(-d)) without overflow.
double SoftplusNeg(double d) { return d > 0 ? std::log1p(std::exp(-d)) : -d + std::log1p(std::exp(d)); }

// One query's gradients into g, h (double, its m rows in `rows` order).
void QueryGradients(const RankGradientOptions& o, const data::Table& t, const int64_t* rows, int64_t m,
                    const float* scores, std::vector<int64_t>* order_buf, std::vector<double>* g,
                    std::vector<double>* h) {
  g->assign(static_cast<size_t>(m), 0.0);
  h->assign(static_cast<size_t>(m), 0.0);
  std::vector<int64_t>& order = *order_buf;  // local indices by descending score, ties in row order
  order.resize(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[rows[a]] > scores[rows[b]]; });
  const bool ndcg = o.loss == RankLoss::kNdcg;
  const int64_t k = ndcg && o.ndcg_truncation > 0 ? std::min<int64_t>(o.ndcg_truncation, m) : m;
  double inv_idcg = 1;
  if (ndcg) {
    std::vector<double> gains(static_cast<size_t>(m));
    for (int64_t a = 0; a < m; ++a) gains[static_cast<size_t>(a)] = Gain(t.targets[static_cast<size_t>(rows[a])]);
    std::sort(gains.begin(), gains.end(), std::greater<>());
    double idcg = 0;
    for (int64_t p = 0; p < k; ++p) idcg += gains[static_cast<size_t>(p)] / std::log2(static_cast<double>(p) + 2);
    if (!(idcg > 0)) return;
    inv_idcg = 1 / idcg;
  }
  auto discount = [&](int64_t p) { return p < k ? 1 / std::log2(static_cast<double>(p) + 2) : 0.0; };
  // Pairs (positions pa < pb) with pa in the top k: every other pair has delta NDCG@k = 0.
  for (int64_t pa = 0; pa < (ndcg ? k : m); ++pa) {
    const int64_t a = order[static_cast<size_t>(pa)];
    const float ya = t.targets[static_cast<size_t>(rows[a])];
    for (int64_t pb = pa + 1; pb < m; ++pb) {
      const int64_t b = order[static_cast<size_t>(pb)];
      const float yb = t.targets[static_cast<size_t>(rows[b])];
      if (ya == yb) continue;
      const int64_t hi = ya > yb ? a : b, lo = ya > yb ? b : a;
      double z = 1;
      if (ndcg) {
        z = std::fabs((Gain(ya) - Gain(yb)) * (discount(pa) - discount(pb))) * inv_idcg;
        if (z == 0) continue;
      }
      const double w = 0.5 * (t.weight(rows[hi]) + t.weight(rows[lo])) * z;
      const double d = static_cast<double>(scores[rows[hi]]) - scores[rows[lo]];
      const double p = 1 / (1 + std::exp(-d));
      const double lambda = w * (p - 1);
      const double hess = 2 * w * std::max(p * (1 - p), kMinHessian);
      (*g)[static_cast<size_t>(hi)] += lambda;
      (*g)[static_cast<size_t>(lo)] -= lambda;
      (*h)[static_cast<size_t>(hi)] += hess;
      (*h)[static_cast<size_t>(lo)] += hess;
    }
  }
}

}  // namespace

QueryGroups GroupQueries(const std::vector<int64_t>& qids) {
  std::unordered_map<int64_t, int64_t> at;
  std::vector<int64_t> query_of(qids.size());
  std::vector<int64_t> counts;
  for (size_t i = 0; i < qids.size(); ++i) {
    auto [it, fresh] = at.emplace(qids[i], static_cast<int64_t>(counts.size()));
    if (fresh) counts.push_back(0);
    query_of[i] = it->second;
    ++counts[static_cast<size_t>(it->second)];
  }
  QueryGroups out;
  out.ptr.assign(counts.size() + 1, 0);
  for (size_t q = 0; q < counts.size(); ++q) out.ptr[q + 1] = out.ptr[q] + counts[q];
  out.rows.resize(qids.size());
  std::vector<int64_t> next(out.ptr.begin(), out.ptr.end() - 1);
  for (size_t i = 0; i < qids.size(); ++i) {
    out.rows[static_cast<size_t>(next[static_cast<size_t>(query_of[i])]++)] = static_cast<int64_t>(i);
  }
  return out;
}

void RankGradients(const RankGradientOptions& options, const data::Table& table, const QueryGroups& groups,
                   const float* scores, int threads, std::vector<float>* g, std::vector<float>* h) {
  g->assign(static_cast<size_t>(table.rows), 0.0f);
  h->assign(static_cast<size_t>(table.rows), 0.0f);
  const int64_t queries = groups.size();
#pragma omp parallel num_threads(std::max(1, threads)) if (queries >= 64)
  {
    std::vector<int64_t> order;
    std::vector<double> qg, qh;
#pragma omp for schedule(dynamic, 16)
    for (int64_t q = 0; q < queries; ++q) {
      const int64_t begin = groups.ptr[static_cast<size_t>(q)], m = groups.ptr[static_cast<size_t>(q) + 1] - begin;
      const int64_t* rows = groups.rows.data() + begin;
      QueryGradients(options, table, rows, m, scores, &order, &qg, &qh);
      for (int64_t a = 0; a < m; ++a) {
        (*g)[static_cast<size_t>(rows[a])] = static_cast<float>(qg[static_cast<size_t>(a)]);
        (*h)[static_cast<size_t>(rows[a])] = static_cast<float>(qh[static_cast<size_t>(a)]);
      }
    }
  }
}

void PairwiseLogLoss(const data::Table& table, const QueryGroups& groups, const float* scores, double* loss,
                     double* weight) {
  double l = 0, w = 0;
  for (int64_t q = 0; q < groups.size(); ++q) {
    for (int64_t x = groups.ptr[static_cast<size_t>(q)]; x < groups.ptr[static_cast<size_t>(q) + 1]; ++x) {
      const int64_t a = groups.rows[static_cast<size_t>(x)];
      for (int64_t z = x + 1; z < groups.ptr[static_cast<size_t>(q) + 1]; ++z) {
        const int64_t b = groups.rows[static_cast<size_t>(z)];
        const float ya = table.targets[static_cast<size_t>(a)], yb = table.targets[static_cast<size_t>(b)];
        if (ya == yb) continue;
        const int64_t hi = ya > yb ? a : b, lo = ya > yb ? b : a;
        const double pw = 0.5 * (table.weight(hi) + table.weight(lo));
        l += pw * SoftplusNeg(static_cast<double>(scores[hi]) - scores[lo]);
        w += pw;
      }
    }
  }
  *loss = l;
  *weight = w;
}

double SumNdcgAt(const data::Table& table, const QueryGroups& groups, const std::vector<float>& scores, int k) {
  if (groups.size() == 0) return 0;
  return MeanNdcgAt(scores, table.targets, table.qids, k) * static_cast<double>(groups.size());
}

Status CheckRankingTable(const std::string& name, const data::Table& table, RankLoss loss) {
  if (table.rows == 0) return Status::Ok();
  if (table.qids.empty()) {
    return Status::InvalidArgument(name + ": a ranking objective needs query ids (qid: in LIBSVM/SVMlight files); " +
                                   (table.source.empty() ? std::string("the training table") : table.source) +
                                   " has none");
  }
  if (static_cast<int64_t>(table.qids.size()) != table.rows) {
    return Status::InvalidArgument(name + ": the training table has " + std::to_string(table.qids.size()) +
                                   " query ids for " + std::to_string(table.rows) + " rows");
  }
  if (static_cast<int64_t>(table.targets.size()) != table.rows) {
    return Status::InvalidArgument(name + ": the training table has no relevance labels (targets)");
  }
  for (size_t i = 0; i < table.targets.size(); ++i) {
    const float y = table.targets[i];
    if (!std::isfinite(y)) {
      return Status::InvalidArgument(name + ": row " + std::to_string(i) + " has a NaN or infinite relevance label");
    }
    if (loss == RankLoss::kNdcg && (y < 0 || y > 31)) {
      return Status::InvalidArgument(name + ": row " + std::to_string(i) + " has relevance " + std::to_string(y) +
                                     "; NDCG's gain 2^relevance - 1 needs relevance in [0, 31]");
    }
  }
  return Status::Ok();
}

Status CheckWholeQueries(const std::string& name, const data::Table& table, Collective* collective) {
  std::vector<int64_t> mine = table.qids;
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  constexpr uint64_t kMask = (uint64_t{1} << kPieceBits) - 1;
  std::vector<float> pieces;
  pieces.reserve(mine.size() * 3 + 1);
  pieces.push_back(static_cast<float>(mine.size()));  // exact up to 2^24 queries per worker
  for (int64_t q : mine) {
    const uint64_t u = static_cast<uint64_t>(q);
    for (int s = 0; s < 3; ++s) pieces.push_back(static_cast<float>((u >> (s * kPieceBits)) & kMask));
  }
  GEOMX_ASSIGN_OR_RETURN(const std::vector<float> all, collective->AllGather(name + ".qids", pieces));
  std::unordered_map<int64_t, int> owner;
  size_t at = 0;
  for (int r = 0; r < collective->world(); ++r) {
    if (at >= all.size()) return Status::Internal(name + ": the query-id exchange came back short");
    const size_t n = static_cast<size_t>(all[at++]);
    if (at + 3 * n > all.size()) return Status::Internal(name + ": the query-id exchange came back short");
    for (size_t i = 0; i < n; ++i, at += 3) {
      uint64_t u = 0;
      for (int s = 0; s < 3; ++s) u |= static_cast<uint64_t>(all[at + static_cast<size_t>(s)]) << (s * kPieceBits);
      const int64_t q = static_cast<int64_t>(u);
      auto [it, fresh] = owner.emplace(q, r);
      if (!fresh) {
        return Status::InvalidArgument(name + ": query " + std::to_string(q) + " has rows on workers " +
                                       std::to_string(it->second) + " and " + std::to_string(r) +
                                       "; a ranking objective needs every query whole on one worker (shard by "
                                       "query, as the job's ShardOf does)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace geomx::algorithms::trees
