#include "algorithms/estimators/trees/histogram.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace geomx::algorithms::trees {
namespace {

// Nodes with fewer rows than this are built on one thread.
constexpr int64_t kParallelRows = 512;

// Adds the (g, h) of `rows` into hist, features [f0, f1) only. Each feature's slots receive the rows in the order
// of `rows`, so the sums do not depend on how the features are divided among threads.
void Accumulate(const BinMatrix& bins, const GradPair* gpair, std::span<const int32_t> rows, int64_t f0, int64_t f1,
                const int32_t* offset, double* hist) {
  const int64_t count = static_cast<int64_t>(rows.size());
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = rows[static_cast<size_t>(k)];
    const GradPair gp = gpair[r];
    if (gp.g == 0.0f && gp.h == 0.0f) continue;  // a row left out of this tree
    const double g = gp.g, h = gp.h;
    const uint8_t* b = bins.Row(r);
    if (k + 8 < count) __builtin_prefetch(bins.Row(rows[static_cast<size_t>(k + 8)]) + f0);
    for (int64_t f = f0; f < f1; ++f) {
      double* slot = hist + 2 * (static_cast<int64_t>(offset[f]) + b[f]);
      slot[0] += g;
      slot[1] += h;
    }
  }
}

}  // namespace

HistLayout::HistLayout(const BinCuts& cuts) {
  offset_.assign(static_cast<size_t>(cuts.features) + 1, 0);
  for (int64_t f = 0; f < cuts.features; ++f) {
    offset_[static_cast<size_t>(f) + 1] = offset_[static_cast<size_t>(f)] + cuts.Slots(f);
  }
  offset32_.assign(offset_.begin(), offset_.end() - 1);
}

void HistBuilder::Build(const BinMatrix& bins, const GradPair* gpair, std::span<const int32_t> rows, double* out) {
  const int64_t n = 2 * layout_->Size();
  const int64_t d = bins.features;
  std::memset(out, 0, static_cast<size_t>(n) * sizeof(double));
  const int team =
      static_cast<int64_t>(rows.size()) >= kParallelRows ? static_cast<int>(std::min<int64_t>(threads_, d)) : 1;
  if (team <= 1) {
    Accumulate(bins, gpair, rows, 0, d, layout_->offsets32().data(), out);
    return;
  }
#pragma omp parallel num_threads(team)
  {
    const int t = omp_get_thread_num();
    Accumulate(bins, gpair, rows, d * t / team, d * (t + 1) / team, layout_->offsets32().data(), out);
  }
}

void SubtractHistogram(const double* parent, const double* child, double* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = parent[j] - child[j];
}

}  // namespace geomx::algorithms::trees
