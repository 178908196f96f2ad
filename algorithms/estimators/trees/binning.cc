#include "algorithms/estimators/trees/binning.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <utility>

namespace geomx::algorithms::trees {
namespace {

using Point = std::pair<float, double>;

// Sorts the points of one feature and merges equal values (weights added); drops NaN and zero-weight points.
void SortAndMerge(std::vector<Point>* pts) {
  std::erase_if(*pts, [](const Point& p) { return std::isnan(p.first) || !(p.second > 0); });
  std::sort(pts->begin(), pts->end(), [](const Point& a, const Point& b) { return a.first < b.first; });
  size_t out = 0;
  for (size_t i = 0; i < pts->size(); ++i) {
    if (out > 0 && (*pts)[out - 1].first == (*pts)[i].first) {
      (*pts)[out - 1].second += (*pts)[i].second;
    } else {
      (*pts)[out++] = (*pts)[i];
    }
  }
  pts->resize(out);
}

// At most `size` points of about equal weight, each the largest value of its run and the run's weight. Input: the
// sorted, merged points of one feature.
std::vector<Point> Summarise(const std::vector<Point>& pts, int size) {
  if (static_cast<int64_t>(pts.size()) <= size) return pts;
  double total = 0;
  for (const Point& p : pts) total += p.second;
  std::vector<Point> out;
  out.reserve(static_cast<size_t>(size) + 1);
  double cum = 0, run = 0;
  int group = 1;
  for (size_t i = 0; i < pts.size(); ++i) {
    cum += pts[i].second;
    run += pts[i].second;
    if (cum >= total * group / size || i + 1 == pts.size()) {
      out.push_back({pts[i].first, run});
      run = 0;
      while (group < size && cum >= total * group / size) ++group;
    }
  }
  return out;
}

// A threshold t with a < t <= b (a < b): the midpoint when it is representable and finite, else b.
float Between(float a, float b) {
  const float m = a + (b - a) * 0.5f;
  return (m > a && m <= b && std::isfinite(m)) ? m : b;
}

}  // namespace

int BinCuts::BinOf(int64_t f, float x) const {
  if (std::isnan(x)) return MissingBin(f);
  const float* begin = values.data() + ptr[f];
  const float* end = values.data() + ptr[f + 1];
  return static_cast<int>(std::upper_bound(begin, end, x) - begin);
}

BinCuts CutsFromPoints(std::vector<std::vector<Point>> points, int max_bin) {
  const int bins = std::clamp(max_bin, 2, kMaxValueBins);
  BinCuts cuts;
  cuts.features = static_cast<int64_t>(points.size());
  cuts.ptr.assign(points.size() + 1, 0);
  for (size_t f = 0; f < points.size(); ++f) {
    std::vector<Point>& pts = points[f];
    SortAndMerge(&pts);
    std::vector<float> t;
    if (static_cast<int64_t>(pts.size()) <= bins) {
      for (size_t i = 0; i + 1 < pts.size(); ++i) t.push_back(Between(pts[i].first, pts[i + 1].first));
    } else {
      double total = 0;
      for (const Point& p : pts) total += p.second;
      double cum = 0;
      int j = 1;
      for (size_t i = 0; i + 1 < pts.size() && j < bins; ++i) {
        cum += pts[i].second;
        if (cum >= total * j / bins) {
          t.push_back(Between(pts[i].first, pts[i + 1].first));
          while (j < bins && cum >= total * j / bins) ++j;
        }
      }
    }
    cuts.values.insert(cuts.values.end(), t.begin(), t.end());
    cuts.ptr[f + 1] = static_cast<int64_t>(cuts.values.size());
  }
  return cuts;
}

Result<BinCuts> ComputeCuts(const data::Table& table, const std::vector<float>& row_weights,
                            const SketchOptions& options, Collective* collective, int threads) {
  const int64_t d = table.cols;
  if (d < 1) return Status::InvalidArgument("binning: the table has no feature columns");
  if (!row_weights.empty() && static_cast<int64_t>(row_weights.size()) != table.rows) {
    return Status::InvalidArgument("binning: " + std::to_string(row_weights.size()) + " row weights for " +
                                   std::to_string(table.rows) + " rows");
  }
  const int max_bin = std::clamp(options.max_bin, 2, kMaxValueBins);
  const int size = options.summary_size > 0 ? options.summary_size : 8 * max_bin;
  auto weight = [&](int64_t i) {
    return static_cast<double>(table.weight(i)) * (row_weights.empty() ? 1.0 : row_weights[static_cast<size_t>(i)]);
  };
  std::vector<std::vector<Point>> summary(static_cast<size_t>(d));
  if (!table.sparse) {
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(dynamic, 8)
    for (int64_t f = 0; f < d; ++f) {
      std::vector<Point> pts(static_cast<size_t>(table.rows));
      for (int64_t i = 0; i < table.rows; ++i) pts[static_cast<size_t>(i)] = {table.dense[i * d + f], weight(i)};
      SortAndMerge(&pts);
      summary[static_cast<size_t>(f)] = Summarise(pts, size);
    }
  } else {
    // Columns of the CSR table; the absent entries of a column are one point (0, their total weight).
    std::vector<std::vector<Point>> cols(static_cast<size_t>(d));
    std::vector<double> explicit_weight(static_cast<size_t>(d), 0.0);
    double total = 0;
    for (int64_t i = 0; i < table.rows; ++i) {
      const double w = weight(i);
      total += w;
      for (int64_t k = table.row_ptr[i]; k < table.row_ptr[i + 1]; ++k) {
        const size_t c = static_cast<size_t>(table.col_index[static_cast<size_t>(k)]);
        cols[c].push_back({table.values[static_cast<size_t>(k)], w});
        explicit_weight[c] += w;
      }
    }
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(dynamic, 8)
    for (int64_t f = 0; f < d; ++f) {
      std::vector<Point>& pts = cols[static_cast<size_t>(f)];
      const double zeros = total - explicit_weight[static_cast<size_t>(f)];
      if (zeros > 0) pts.push_back({0.0f, zeros});
      SortAndMerge(&pts);
      summary[static_cast<size_t>(f)] = Summarise(pts, size);
    }
  }
  if (collective != nullptr && collective->world() > 1) {
    // [feature count][per feature: n, then n (value, weight) pairs]
    std::vector<float> mine = {static_cast<float>(d)};
    for (const auto& pts : summary) {
      mine.push_back(static_cast<float>(pts.size()));
      for (const Point& p : pts) {
        mine.push_back(p.first);
        mine.push_back(static_cast<float>(p.second));
      }
    }
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> all, collective->AllGather("trees.sketch", mine));
    std::vector<std::vector<Point>> merged(static_cast<size_t>(d));
    size_t pos = 0;
    for (int r = 0; r < collective->world(); ++r) {
      if (pos >= all.size() || all[pos] != static_cast<float>(d)) {
        return Status::InvalidArgument("binning: worker " + std::to_string(r) + " has a different column count");
      }
      ++pos;
      for (int64_t f = 0; f < d; ++f) {
        if (pos >= all.size()) return Status::Internal("binning: truncated sketch from worker " + std::to_string(r));
        const size_t n = static_cast<size_t>(all[pos++]);
        if (n > static_cast<size_t>(size) + 1 || pos + 2 * n > all.size()) {
          return Status::Internal("binning: malformed sketch from worker " + std::to_string(r));
        }
        for (size_t k = 0; k < n; ++k, pos += 2) merged[static_cast<size_t>(f)].push_back({all[pos], all[pos + 1]});
      }
    }
    return CutsFromPoints(std::move(merged), max_bin);
  }
  return CutsFromPoints(std::move(summary), max_bin);
}

BinMatrix BinTable(const data::Table& table, const BinCuts& cuts, int threads) {
  BinMatrix m;
  m.rows = table.rows;
  m.features = cuts.features;
  m.bins.resize(static_cast<size_t>(m.rows * m.features));
  const int64_t d = m.features;
  if (!table.sparse) {
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
    for (int64_t i = 0; i < m.rows; ++i) {
      const float* x = table.Row(i);
      uint8_t* out = m.bins.data() + i * d;
      for (int64_t f = 0; f < d; ++f) out[f] = static_cast<uint8_t>(cuts.BinOf(f, x[f]));
    }
    return m;
  }
  std::vector<uint8_t> zero_bin(static_cast<size_t>(d));
  for (int64_t f = 0; f < d; ++f) zero_bin[static_cast<size_t>(f)] = static_cast<uint8_t>(cuts.BinOf(f, 0.0f));
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
  for (int64_t i = 0; i < m.rows; ++i) {
    uint8_t* out = m.bins.data() + i * d;
    std::copy(zero_bin.begin(), zero_bin.end(), out);
    for (int64_t k = table.row_ptr[i]; k < table.row_ptr[i + 1]; ++k) {
      const int64_t f = table.col_index[static_cast<size_t>(k)];
      if (f < d) out[f] = static_cast<uint8_t>(cuts.BinOf(f, table.values[static_cast<size_t>(k)]));
    }
  }
  return m;
}

}  // namespace geomx::algorithms::trees
