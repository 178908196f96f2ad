// PartitionIndices: every rank computes the whole partition from the same seed and keeps its part, so the
// parts are disjoint and cover the dataset without any communication.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "datasets/loader.h"
#include "engine/base/check.h"

namespace geomx::data {
namespace {

void Shuffle(std::vector<int64_t>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
}

// Rank r's contiguous share of n items: [n*r/world, n*(r+1)/world), sizes differ by at most one.
std::pair<size_t, size_t> Share(size_t n, int rank, int world) {
  return {n * static_cast<size_t>(rank) / static_cast<size_t>(world),
          n * static_cast<size_t>(rank + 1) / static_cast<size_t>(world)};
}

// IID: a seeded shuffle, then contiguous equal shares. Ranking data (query ids) is dealt by whole queries, so no
// query's pairs straddle two workers.
std::vector<int64_t> IidPart(const Dataset& d, int rank, int world, Rng& rng) {
  const int64_t n = d.size();
  if (n > 0 && d.QueryId(0) >= 0) {
    std::map<int64_t, std::vector<int64_t>> queries;
    for (int64_t i = 0; i < n; ++i) queries[d.QueryId(i)].push_back(i);
    std::vector<int64_t> keys;
    for (const auto& [q, members] : queries) keys.push_back(q);
    Shuffle(keys, rng);
    // Deal queries greedily to the rank with the fewest examples so far (balanced by examples, not queries).
    std::vector<int64_t> load(static_cast<size_t>(world), 0);
    std::vector<int64_t> mine;
    for (int64_t q : keys) {
      const auto r = std::min_element(load.begin(), load.end()) - load.begin();
      const auto& members = queries[q];
      load[static_cast<size_t>(r)] += static_cast<int64_t>(members.size());
      if (r == rank) mine.insert(mine.end(), members.begin(), members.end());
    }
    return mine;
  }
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  Shuffle(all, rng);
  const auto [b, e] = Share(all.size(), rank, world);
  return {all.begin() + static_cast<std::ptrdiff_t>(b), all.begin() + static_cast<std::ptrdiff_t>(e)};
}

// By class (GeoMX --split-by-class): indices sorted by label (stable: by index inside a class), then cut into
// contiguous equal shares, so each rank sees about num_classes/world classes.
std::vector<int64_t> ByClassPart(const Dataset& d, int rank, int world) {
  std::vector<int64_t> all(static_cast<size_t>(d.size()));
  std::iota(all.begin(), all.end(), 0);
  std::stable_sort(all.begin(), all.end(), [&](int64_t a, int64_t b) { return d.Label(a) < d.Label(b); });
  const auto [b, e] = Share(all.size(), rank, world);
  return {all.begin() + static_cast<std::ptrdiff_t>(b), all.begin() + static_cast<std::ptrdiff_t>(e)};
}

// Dirichlet(alpha): for each class, proportions p ~ Dir(alpha, ..., alpha) over the ranks; the class's
// (shuffled) examples are cut at the cumulative proportions. Small alpha: skewed; large alpha: close to IID.
// Draws are repeated (deterministically) while some rank would get no example at all, up to a limit.
std::vector<int64_t> DirichletPart(const Dataset& d, float alpha, int rank, int world, Rng& rng) {
  GEOMX_CHECK_GT(alpha, 0.0f) << "dirichlet alpha";
  std::map<int64_t, std::vector<int64_t>> by_class;
  for (int64_t i = 0; i < d.size(); ++i) by_class[d.Label(i)].push_back(i);
  for (auto& [c, members] : by_class) Shuffle(members, rng);

  const bool can_fill = d.size() >= world;
  std::vector<std::vector<int64_t>> parts;
  for (int attempt = 0; attempt < 100; ++attempt) {
    parts.assign(static_cast<size_t>(world), {});
    for (const auto& [c, members] : by_class) {
      std::vector<double> p(static_cast<size_t>(world));
      double total = 0;
      for (double& x : p) total += (x = rng.Gamma(alpha));
      if (!(total > 0)) {  // all draws underflowed (tiny alpha): give the class to one random rank
        std::fill(p.begin(), p.end(), 0.0);
        p[rng.Below(static_cast<uint64_t>(world))] = total = 1.0;
      }
      double cum = 0;
      size_t begin = 0;
      for (int r = 0; r < world; ++r) {
        cum += p[static_cast<size_t>(r)];
        const size_t end =
            r == world - 1
                ? members.size()
                : std::min(members.size(),
                           static_cast<size_t>(std::llround(cum / total * static_cast<double>(members.size()))));
        auto& part = parts[static_cast<size_t>(r)];
        part.insert(part.end(), members.begin() + static_cast<std::ptrdiff_t>(begin),
                    members.begin() + static_cast<std::ptrdiff_t>(std::max(begin, end)));
        begin = std::max(begin, end);
      }
    }
    if (!can_fill || std::none_of(parts.begin(), parts.end(), [](const auto& p) { return p.empty(); })) break;
  }
  auto mine = std::move(parts[static_cast<size_t>(rank)]);
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace

std::vector<int64_t> PartitionIndices(const Dataset& dataset, PartitionKind kind, float alpha, int rank, int world,
                                      uint64_t seed) {
  GEOMX_CHECK(world >= 1 && rank >= 0 && rank < world) << "rank " << rank << " of world " << world;
  Rng rng(seed ^ 0x7061727469746e00ULL);  // "partitn": a stream apart from the loader's shuffles
  switch (kind) {
    case PartitionKind::kIid:
      return IidPart(dataset, rank, world, rng);
    case PartitionKind::kByClass:
      return ByClassPart(dataset, rank, world);
    case PartitionKind::kDirichlet:
      return DirichletPart(dataset, alpha, rank, world, rng);
  }
  GEOMX_CHECK(false) << "unknown PartitionKind";
  return {};
}

}  // namespace geomx::data
