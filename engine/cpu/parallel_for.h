// ParallelFor: splits a loop of the CPU backend over the OpenMP thread pool that oneDNN already owns, so the
// loops never oversubscribe the cores the dense ops use. Only engine/cpu/ includes it.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace geomx::cpu {

// Below this many elements per thread a parallel region costs more than it saves (memory-bound loops run at
// roughly a nanosecond per element; forking the pool costs microseconds).
inline constexpr int64_t kGrain = 32 * 1024;

// Calls body(begin, end) over [0, n), split into contiguous chunks across the OpenMP pool when n is large enough
// (and we are not already inside a parallel region). `cost` scales the grain for heavier per-item work.
template <typename Body>
void ParallelFor(int64_t n, int64_t cost, const Body& body) {
#if defined(_OPENMP)
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cost));
  const int max_threads = omp_get_max_threads();
  if (n >= 2 * grain && max_threads > 1 && !omp_in_parallel()) {
    const int64_t threads = std::min<int64_t>(max_threads, n / grain);
#pragma omp parallel num_threads(static_cast<int>(threads))
    {
      const int64_t nt = omp_get_num_threads();
      const int64_t t = omp_get_thread_num();
      const int64_t chunk = (n + nt - 1) / nt;
      const int64_t begin = std::min(n, t * chunk);
      const int64_t end = std::min(n, begin + chunk);
      if (begin < end) body(begin, end);
    }
    return;
  }
#else
  (void)cost;
#endif
  if (n > 0) body(int64_t{0}, n);
}

}  // namespace geomx::cpu
