// k-means clustering (kmeans.h). Lloyd or mini-batch steps over a dense view of the rows; the nearest-centre
// search is a GEMM per block of kBlock rows against the k centres (||x||^2 + ||c||^2 - 2 x.c), one block per thread.
//
// Distributed form: every collective call below is made by every worker in the same order with the same sizes,
// and every decision (convergence, which candidate, which run is best) is taken on summed or gathered values, so
// the workers stay in lock step and end with identical centres. Random draws that pick rows come from an Rng with
// the same seed on every worker and are resolved against the gathered per-worker masses; k-means|| keeps a row by a
// hash of (seed, round, global row index), so the candidates do not depend on how the rows are sharded.
#include "algorithms/estimators/kmeans.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/distance.h"
#include "algorithms/estimators/estimator.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

constexpr int64_t kBlock = 256;           // rows per GEMM block in the assignment passes
constexpr int kCandidateLloydIters = 30;  // k-means||: Lloyd iterations on the weighted candidates (as Spark)

// A dense, read-only view of the rows being clustered, with their squared norms and weights. Owns a dense copy
// when the source table is sparse. Move-only (x may point into `owned`).
struct Points {
  const float* x = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  const float* w = nullptr;  // per-row weights; null = all 1
  std::vector<float> owned;
  std::vector<float> norms;

  Points() = default;
  Points(Points&&) = default;
  Points& operator=(Points&&) = default;
  Points(const Points&) = delete;
  Points& operator=(const Points&) = delete;
  const float* row(int64_t i) const { return x + i * cols; }
  double weight(int64_t i) const { return w == nullptr ? 1.0 : static_cast<double>(w[i]); }
};

Points MakePoints(const float* x, int64_t rows, int64_t cols, const float* w, int threads) {
  Points p;
  p.x = x;
  p.rows = rows;
  p.cols = cols;
  p.w = w;
  p.norms.resize(static_cast<size_t>(rows));
  RowSquaredNorms(x, rows, cols, p.norms.data(), threads);
  return p;
}

Points MakePoints(const data::Table& t, int threads) {
  const float* w = t.weights.empty() ? nullptr : t.weights.data();
  if (!t.sparse) return MakePoints(t.dense.data(), t.rows, t.cols, w, threads);
  std::vector<float> dense(static_cast<size_t>(t.rows * t.cols));
  for (int64_t i = 0; i < t.rows; ++i) t.CopyRow(i, dense.data() + i * t.cols);
  Points p = MakePoints(dense.data(), t.rows, t.cols, w, threads);
  p.owned = std::move(dense);  // the buffer moves with its address, so p.x stays valid
  return p;
}

// The collective as the algorithm sees it: a null collective is a world of one (sums and gathers are identities).
class Comm {
 public:
  explicit Comm(Collective* c) : c_(c) {}
  int rank() const { return c_ == nullptr ? 0 : c_->rank(); }
  int world() const { return c_ == nullptr ? 1 : c_->world(); }
  Status Sum(const std::string& key, std::span<float> v) {
    return c_ == nullptr ? Status::Ok() : c_->AllReduceSum(key, v);
  }
  Result<std::vector<float>> Gather(const std::string& key, std::span<const float> v) {
    if (c_ == nullptr) return std::vector<float>(v.begin(), v.end());
    return c_->AllGather(key, v);
  }

 private:
  Collective* c_;
};

// Where each worker's rows sit in the union of the shards: rows of worker r are [start[r], start[r+1]).
struct Layout {
  std::vector<int64_t> start;
  int64_t total() const { return start.back(); }
};

// Nearest of the k centres for rows [r0, r0 + m) of p: best[i] (equal distances: smaller id) and its squared
// distance d2[i] in the GEMM form. `dots` holds m * k floats. Runs on the calling thread.
void NearestInBlock(const Points& p, int64_t r0, int64_t m, const float* centres, const float* cnorms, int64_t k,
                    float* dots, int32_t* best, float* d2) {
  DotBlock(p.row(r0), m, centres, k, p.cols, dots, 1);
  for (int64_t i = 0; i < m; ++i) {
    const float* dr = dots + i * k;
    int32_t b = 0;
    float bv = cnorms[0] - 2.0f * dr[0];
    for (int64_t c = 1; c < k; ++c) {
      const float v = cnorms[c] - 2.0f * dr[c];
      if (v < bv) {
        bv = v;
        b = static_cast<int32_t>(c);
      }
    }
    best[i] = b;
    d2[i] = std::max(0.0f, p.norms[static_cast<size_t>(r0 + i)] + bv);
  }
}

// Nearest centre and squared distance for every row of p. Fixed blocks, each computed whole by one thread, so the
// result does not depend on `threads`.
void Nearest(const Points& p, const float* centres, int64_t k, int threads, int32_t* best, float* d2) {
  std::vector<float> cn(static_cast<size_t>(k));
  RowSquaredNorms(centres, k, p.cols, cn.data(), 1);
  const int64_t blocks = (p.rows + kBlock - 1) / kBlock;
#pragma omp parallel num_threads(std::max(1, threads))
  {
    std::vector<float> dots(static_cast<size_t>(kBlock * k));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t r0 = b * kBlock;
      NearestInBlock(p, r0, std::min(kBlock, p.rows - r0), centres, cn.data(), k, dots.data(), best + r0, d2 + r0);
    }
  }
}

// out[i * m + j] = squared distance of row i of p to candidate j (GEMM form), for a handful of candidates.
void DistancesTo(const Points& p, const float* cands, int64_t m, int threads, float* out) {
  std::vector<float> cn(static_cast<size_t>(m));
  RowSquaredNorms(cands, m, p.cols, cn.data(), 1);
  const int64_t blocks = (p.rows + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = b * kBlock;
    SquaredL2Block(p.row(r0), p.norms.data() + r0, std::min(kBlock, p.rows - r0), cands, cn.data(), m, p.cols,
                   out + r0 * m, 1);
  }
}

// sum += w * x for one row (float, vectorised): the accumulation half of a Lloyd step. Callers add these float
// sums into double accumulators once per block of kBlock rows, so the rounding stays that of kBlock float adds.
GEOMX_AVX2_CLONES void AddScaledRow(const float* x, float w, int64_t d, float* sum) {
#pragma omp simd
  for (int64_t j = 0; j < d; ++j) sum[j] += w * x[j];
}

struct StepTotals {
  std::vector<float> centres;
  std::vector<double> weights;
  double inertia = 0;
  double changed = 0;
  bool interrupted = false;
};

// One Lloyd step (see KMeansLloydStep). `labels` (this shard's rows; -1 = none yet) is updated; `interrupted` is
// this worker's vote to stop, summed with the others'.
Status LloydStep(const Points& p, const std::vector<float>& centres, int64_t k, Comm& comm, int threads,
                 bool interrupted, std::vector<int32_t>* labels, StepTotals* out) {
  const int64_t d = p.cols;
  // Per thread: [k*d sums][k weights][k sse][changed].
  const int64_t stride = k * d + 2 * k + 1;
  const int team = std::max(1, threads);
  std::vector<double> acc(static_cast<size_t>(team * stride), 0.0);
  std::vector<float> cn(static_cast<size_t>(k));
  RowSquaredNorms(centres.data(), k, d, cn.data(), 1);
  const int64_t blocks = (p.rows + kBlock - 1) / kBlock;
#pragma omp parallel num_threads(team)
  {
    double* a = acc.data() + omp_get_thread_num() * stride;
    std::vector<float> dots(static_cast<size_t>(kBlock * k)), d2(static_cast<size_t>(kBlock));
    std::vector<int32_t> best(static_cast<size_t>(kBlock));
    std::vector<float> block_sums(static_cast<size_t>(k * d));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t r0 = b * kBlock, m = std::min(kBlock, p.rows - r0);
      NearestInBlock(p, r0, m, centres.data(), cn.data(), k, dots.data(), best.data(), d2.data());
      std::fill(block_sums.begin(), block_sums.end(), 0.0f);
      for (int64_t i = 0; i < m; ++i) {
        const int64_t row = r0 + i;
        const int32_t c = best[static_cast<size_t>(i)];
        int32_t& label = (*labels)[static_cast<size_t>(row)];
        if (label != c) a[stride - 1] += 1;
        label = c;
        const double w = p.weight(row);
        AddScaledRow(p.row(row), static_cast<float>(w), d, block_sums.data() + c * d);
        a[k * d + c] += w;
        a[k * d + k + c] += w * d2[static_cast<size_t>(i)];
      }
      for (int64_t j = 0; j < k * d; ++j) a[j] += block_sums[static_cast<size_t>(j)];
    }
  }
  std::vector<float> stats(static_cast<size_t>(stride + 1));
  for (int64_t j = 0; j < stride; ++j) {
    double s = 0;
    for (int t = 0; t < team; ++t) s += acc[static_cast<size_t>(t * stride + j)];
    stats[static_cast<size_t>(j)] = static_cast<float>(s);
  }
  stats[static_cast<size_t>(stride)] = interrupted ? 1.0f : 0.0f;
  GEOMX_RETURN_IF_ERROR(comm.Sum("kmeans.lloyd", stats));
  out->centres = centres;
  out->weights.assign(static_cast<size_t>(k), 0.0);
  out->inertia = 0;
  for (int64_t c = 0; c < k; ++c) {
    const double w = stats[static_cast<size_t>(k * d + c)];
    out->weights[static_cast<size_t>(c)] = w;
    out->inertia += stats[static_cast<size_t>(k * d + k + c)];
    if (w <= 0) continue;  // an empty cluster keeps its centre
    for (int64_t j = 0; j < d; ++j) {
      out->centres[static_cast<size_t>(c * d + j)] = static_cast<float>(stats[static_cast<size_t>(c * d + j)] / w);
    }
  }
  out->changed = stats[static_cast<size_t>(stride - 1)];
  out->interrupted = stats[static_cast<size_t>(stride)] > 0;
  return Status::Ok();
}

// Draws `count` rows of the union of the shards with probability proportional to `mass` (this shard's part), in
// draw order (count x cols). Every worker makes the same draws from `rng`; the owner of a drawn row contributes it
// to one gather. A zero total mass (every row already a centre) draws uniformly over the rows instead.
Result<std::vector<float>> SampleRows(const Points& p, const std::vector<double>& mass, int count, Rng& rng, Comm& comm,
                                      const Layout& layout, const std::string& key) {
  double local = 0;
  for (double v : mass) local += v;
  const float mine_mass = static_cast<float>(local);
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> masses, comm.Gather(key + ".mass", {&mine_mass, 1}));
  double total = 0;
  for (float v : masses) total += v;
  std::vector<float> records;  // [draw id, row...] for the rows this worker owns
  for (int t = 0; t < count; ++t) {
    int owner = -1;
    int64_t pick = -1;
    if (total > 0) {
      const double u = rng.Uniform() * total;
      double cum = 0;
      double target = 0;
      for (int r = 0; r < comm.world(); ++r) {
        if (masses[static_cast<size_t>(r)] <= 0) continue;
        owner = r;
        target = u - cum;
        if (u < cum + masses[static_cast<size_t>(r)]) break;
        cum += masses[static_cast<size_t>(r)];
      }
      if (owner == comm.rank()) {
        double running = 0;
        for (int64_t i = 0; i < p.rows; ++i) {
          if (mass[static_cast<size_t>(i)] <= 0) continue;
          pick = i;
          running += mass[static_cast<size_t>(i)];
          if (running > target) break;
        }
      }
    } else {
      const int64_t g = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(layout.total())));
      owner =
          static_cast<int>(std::upper_bound(layout.start.begin(), layout.start.end(), g) - layout.start.begin()) - 1;
      if (owner == comm.rank()) pick = std::min(p.rows - 1, g - layout.start[static_cast<size_t>(owner)]);
    }
    if (owner == comm.rank() && pick >= 0) {
      records.push_back(static_cast<float>(t));
      records.insert(records.end(), p.row(pick), p.row(pick) + p.cols);
    }
  }
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> all, comm.Gather(key + ".rows", records));
  const size_t rec = static_cast<size_t>(p.cols + 1);
  if (all.size() != rec * static_cast<size_t>(count)) {
    return Status::Internal("kmeans: " + key + ": gathered " + std::to_string(all.size() / rec) + " rows, expected " +
                            std::to_string(count));
  }
  std::vector<float> rows(static_cast<size_t>(count * p.cols));
  for (size_t r = 0; r < static_cast<size_t>(count); ++r) {
    const size_t t = static_cast<size_t>(all[r * rec]);
    std::copy(all.begin() + static_cast<int64_t>(r * rec + 1), all.begin() + static_cast<int64_t>((r + 1) * rec),
              rows.begin() + static_cast<int64_t>(t * static_cast<size_t>(p.cols)));
  }
  return rows;
}

// Greedy k-means++ (Arthur & Vassilvitskii 2007, with 2 + ln k trials per centre as scikit-learn): each centre is
// the best, by summed potential, of a few rows drawn with probability w * D^2.
Result<std::vector<float>> InitKMeansPlusPlus(const Points& p, int64_t k, Rng& rng, Comm& comm, const Layout& layout,
                                              int threads) {
  const int64_t d = p.cols;
  const size_t n = static_cast<size_t>(p.rows);
  std::vector<float> centres(static_cast<size_t>(k * d));
  std::vector<double> mass(n);
  for (size_t i = 0; i < n; ++i) mass[i] = p.weight(static_cast<int64_t>(i));
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> first, SampleRows(p, mass, 1, rng, comm, layout, "kmeans.init.pp"));
  std::copy(first.begin(), first.end(), centres.begin());
  std::vector<float> closest(n);
  DistancesTo(p, first.data(), 1, threads, closest.data());
  const int trials = 2 + static_cast<int>(std::log(static_cast<double>(k)));
  std::vector<float> dist(n * static_cast<size_t>(trials));
  for (int64_t c = 1; c < k; ++c) {
    for (size_t i = 0; i < n; ++i) mass[i] = p.weight(static_cast<int64_t>(i)) * closest[i];
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> cand, SampleRows(p, mass, trials, rng, comm, layout, "kmeans.init.pp"));
    DistancesTo(p, cand.data(), trials, threads, dist.data());
    std::vector<float> potential(static_cast<size_t>(trials));
    for (int t = 0; t < trials; ++t) {
      double s = 0;
      for (size_t i = 0; i < n; ++i)
        s += p.weight(static_cast<int64_t>(i)) * std::min(closest[i], dist[i * trials + t]);
      potential[static_cast<size_t>(t)] = static_cast<float>(s);
    }
    GEOMX_RETURN_IF_ERROR(comm.Sum("kmeans.init.pp.potential", potential));
    const int best = static_cast<int>(std::min_element(potential.begin(), potential.end()) - potential.begin());
    std::copy(cand.begin() + best * d, cand.begin() + (best + 1) * d, centres.begin() + c * d);
    for (size_t i = 0; i < n; ++i) closest[i] = std::min(closest[i], dist[i * trials + static_cast<size_t>(best)]);
  }
  return centres;
}

uint64_t Mix64(uint64_t z) {  // splitmix64's finaliser
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// A uniform draw in [0, 1) that depends only on (seed, round, global row): the same whatever the sharding.
double HashUniform(uint64_t seed, uint64_t round, uint64_t row) {
  return static_cast<double>(Mix64(Mix64(seed ^ Mix64(round)) ^ row) >> 11) * 0x1.0p-53;
}

struct KMeansOptions {
  int64_t k = 8;
  bool init_parallel = false;  // k-means|| instead of k-means++
  int64_t n_init = 1;
  int64_t max_iter = 300;
  double tol = 1e-4;
  bool minibatch = false;
  int64_t batch_size = 1024;
  int64_t max_no_improvement = 10;
  double oversampling_factor = 2.0;
  int64_t init_steps = 2;
};

// k-means|| (Bahmani et al. 2012): init_steps rounds keep each row with probability min(1, l w D^2 / phi),
// l = oversampling_factor * k; the candidates, weighted by the rows nearest to them, are reduced to k centres by
// weighted k-means++ and Lloyd, the same computation on every worker.
Result<std::vector<float>> InitKMeansParallel(const Points& p, const KMeansOptions& o, uint64_t seed, Rng& rng,
                                              Comm& comm, const Layout& layout, int threads) {
  const int64_t d = p.cols, k = o.k;
  const size_t n = static_cast<size_t>(p.rows);
  std::vector<double> mass(n);
  for (size_t i = 0; i < n; ++i) mass[i] = p.weight(static_cast<int64_t>(i));
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> cands, SampleRows(p, mass, 1, rng, comm, layout, "kmeans.init.par"));
  std::vector<float> closest(n);
  DistancesTo(p, cands.data(), 1, threads, closest.data());
  std::vector<int32_t> best(n);
  std::vector<float> d2(n);
  const int64_t offset = layout.start[static_cast<size_t>(comm.rank())];
  for (int64_t round = 0; round < o.init_steps; ++round) {
    double local = 0;
    for (size_t i = 0; i < n; ++i) local += p.weight(static_cast<int64_t>(i)) * closest[i];
    float phi = static_cast<float>(local);
    GEOMX_RETURN_IF_ERROR(comm.Sum("kmeans.init.par.phi", {&phi, 1}));
    if (phi <= 0) break;
    const double l = o.oversampling_factor * static_cast<double>(k);
    std::vector<float> picked;
    for (size_t i = 0; i < n; ++i) {
      const double prob = std::min(1.0, l * p.weight(static_cast<int64_t>(i)) * closest[i] / phi);
      if (HashUniform(seed, static_cast<uint64_t>(round), static_cast<uint64_t>(offset) + i) < prob) {
        picked.insert(picked.end(), p.row(static_cast<int64_t>(i)), p.row(static_cast<int64_t>(i)) + d);
      }
    }
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> fresh, comm.Gather("kmeans.init.par.rows", picked));
    const int64_t m = static_cast<int64_t>(fresh.size()) / d;
    if (m == 0) continue;
    Nearest(p, fresh.data(), m, threads, best.data(), d2.data());
    for (size_t i = 0; i < n; ++i) closest[i] = std::min(closest[i], d2[i]);
    cands.insert(cands.end(), fresh.begin(), fresh.end());
  }
  // Too few candidates (tiny or highly duplicated data): top up with D^2 draws, one row at a time.
  while (static_cast<int64_t>(cands.size()) / d < k) {
    for (size_t i = 0; i < n; ++i) mass[i] = p.weight(static_cast<int64_t>(i)) * closest[i];
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> extra, SampleRows(p, mass, 1, rng, comm, layout, "kmeans.init.par"));
    DistancesTo(p, extra.data(), 1, threads, d2.data());
    for (size_t i = 0; i < n; ++i) closest[i] = std::min(closest[i], d2[i]);
    cands.insert(cands.end(), extra.begin(), extra.end());
  }
  const int64_t m = static_cast<int64_t>(cands.size()) / d;
  std::vector<float> weights(static_cast<size_t>(m), 0.0f);
  {
    std::vector<double> local(static_cast<size_t>(m), 0.0);
    Nearest(p, cands.data(), m, threads, best.data(), d2.data());
    for (size_t i = 0; i < n; ++i) local[static_cast<size_t>(best[i])] += p.weight(static_cast<int64_t>(i));
    for (int64_t j = 0; j < m; ++j) weights[static_cast<size_t>(j)] = static_cast<float>(local[static_cast<size_t>(j)]);
  }
  GEOMX_RETURN_IF_ERROR(comm.Sum("kmeans.init.par.weights", weights));
  // The reduction of the candidates: no collective, one thread (bit-identical on every worker).
  Points cp = MakePoints(cands.data(), m, d, weights.data(), 1);
  Comm alone(nullptr);
  const Layout whole{{0, m}};
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> centres, InitKMeansPlusPlus(cp, k, rng, alone, whole, 1));
  std::vector<int32_t> labels(static_cast<size_t>(m), -1);
  for (int it = 0; it < kCandidateLloydIters; ++it) {
    StepTotals st;
    GEOMX_RETURN_IF_ERROR(LloydStep(cp, centres, k, alone, 1, false, &labels, &st));
    centres = std::move(st.centres);
    if (st.changed == 0) break;
  }
  return centres;
}

double SquaredShift(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double t = static_cast<double>(a[i]) - b[i];
    s += t * t;
  }
  return s;
}

// Exact inertia of `assignment` (sum of w_i ||x_i - c_{a_i}||^2): per-block sums added in block order, so the
// value does not depend on `threads`.
double ExactInertia(const Points& p, const std::vector<float>& centres, const int32_t* assignment, int threads) {
  const int64_t blocks = (p.rows + kBlock - 1) / kBlock;
  std::vector<double> part(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    double s = 0;
    for (int64_t i = b * kBlock; i < std::min(p.rows, (b + 1) * kBlock); ++i) {
      s += p.weight(i) * SquaredL2(p.row(i), centres.data() + assignment[i] * p.cols, p.cols);
    }
    part[static_cast<size_t>(b)] = s;
  }
  double total = 0;
  for (double v : part) total += v;
  return total;
}

// The mean over features of each feature's variance over the union of the shards, from the summed means and
// then the summed squared deviations (two collective sums of `cols` floats; centring first keeps the float sums
// accurate for features far from zero).
Result<double> MeanFeatureVariance(const Points& p, Comm& comm, int64_t total, int threads) {
  const int64_t d = p.cols;
  const int team = std::max(1, threads);
  std::vector<double> part(static_cast<size_t>(team * d));
  std::vector<float> mean(static_cast<size_t>(d), 0.0f), dev(static_cast<size_t>(d), 0.0f);
  for (int pass = 0; pass < 2; ++pass) {
    std::fill(part.begin(), part.end(), 0.0);
#pragma omp parallel num_threads(team)
    {
      double* acc = part.data() + omp_get_thread_num() * d;
#pragma omp for schedule(static)
      for (int64_t i = 0; i < p.rows; ++i) {
        const float* x = p.row(i);
        for (int64_t j = 0; j < d; ++j) {
          const double v = static_cast<double>(x[j]) - (pass == 0 ? 0.0 : mean[static_cast<size_t>(j)]);
          acc[j] += pass == 0 ? v : v * v;
        }
      }
    }
    std::vector<float>& out = pass == 0 ? mean : dev;
    for (int64_t j = 0; j < d; ++j) {
      double s = 0;
      for (int t = 0; t < team; ++t) s += part[static_cast<size_t>(t * d + j)];
      out[static_cast<size_t>(j)] = static_cast<float>(s);
    }
    GEOMX_RETURN_IF_ERROR(comm.Sum(pass == 0 ? "kmeans.fit.mean" : "kmeans.fit.variance", out));
    if (pass == 0) {
      for (float& v : mean) v = static_cast<float>(v / static_cast<double>(total));
    }
  }
  double sum = 0;
  for (float v : dev) sum += v / static_cast<double>(total);
  return sum / static_cast<double>(d);
}

}  // namespace

Result<KMeansStep> KMeansLloydStep(const data::Table& shard, const std::vector<float>& centres, int64_t k,
                                   Collective* collective, int threads) {
  if (k < 1 || static_cast<int64_t>(centres.size()) != k * shard.cols) {
    return Status::InvalidArgument("KMeansLloydStep: " + std::to_string(centres.size()) + " centre values for k=" +
                                   std::to_string(k) + " and " + std::to_string(shard.cols) + " columns");
  }
  Points p = MakePoints(shard, threads);
  Comm comm(collective);
  std::vector<int32_t> labels(static_cast<size_t>(p.rows), -1);
  StepTotals st;
  GEOMX_RETURN_IF_ERROR(LloydStep(p, centres, k, comm, threads, false, &labels, &st));
  KMeansStep out;
  out.centres = std::move(st.centres);
  out.weights = std::move(st.weights);
  out.inertia = st.inertia;
  out.assignment = std::move(labels);
  return out;
}

namespace {

class KMeansEstimator final : public Estimator {
 public:
  explicit KMeansEstimator(const ParamValues& p) {
    o_.k = p.Int("n_clusters");
    o_.init_parallel = p.Choice("init") == "k-means||";
    o_.n_init = p.Int("n_init");
    o_.max_iter = p.Int("max_iter");
    o_.tol = p.Number("tol");
    o_.minibatch = p.Choice("algorithm") == "minibatch";
    o_.batch_size = p.Int("batch_size");
    o_.max_no_improvement = p.Int("max_no_improvement");
    o_.oversampling_factor = p.Number("oversampling_factor");
    o_.init_steps = p.Int("init_steps");
  }

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;
  Metrics ModelMetrics(const data::Table& table, const Prediction& prediction) const override;

 private:
  // Lloyd iterations from `centres` until no row changes cluster, the squared centre shift is <= tol_abs, or
  // max_iter. *step counts observer steps across runs.
  Status RunLloyd(const Points& p, Comm& comm, const FitContext& context, double tol_abs, int64_t* step,
                  std::vector<float>* centres) const;
  // Mini-batch k-means: per step every worker draws its share of batch_size rows; centres move to the running
  // weighted mean of the rows assigned to them (Sculley 2010, in scikit-learn's per-batch form).
  Status RunMiniBatch(const Points& p, Comm& comm, const FitContext& context, const Layout& layout, double tol_abs,
                      uint64_t seed, int64_t* step, std::vector<float>* centres) const;
  void Report(const FitContext& context, int64_t step, Metrics metrics, const std::vector<float>& centres) const;

  KMeansOptions o_;
  int64_t cols_ = 0;
  std::vector<float> centres_;  // o_.k x cols_
  double train_inertia_ = 0;
};

void KMeansEstimator::Report(const FitContext& context, int64_t step, Metrics metrics,
                             const std::vector<float>& centres) const {
  if (context.observer == nullptr) return;
  const data::Table* eval = context.eval;
  if (eval != nullptr && eval->has_labels() && eval->cols == cols_ && eval->rows > 0) {
    Points e = MakePoints(*eval, context.threads);
    std::vector<int32_t> best(static_cast<size_t>(e.rows));
    std::vector<float> d2(static_cast<size_t>(e.rows));
    Nearest(e, centres.data(), o_.k, context.threads, best.data(), d2.data());
    const std::vector<float> clusters(best.begin(), best.end());
    metrics.push_back({"purity", ClusterPurity(clusters, eval->labels)});
    metrics.push_back({"nmi", NormalizedMutualInfo(clusters, eval->labels)});
  }
  context.observer->OnStep(step, metrics);
}

Status KMeansEstimator::RunLloyd(const Points& p, Comm& comm, const FitContext& context, double tol_abs, int64_t* step,
                                 std::vector<float>* centres) const {
  std::vector<int32_t> labels(static_cast<size_t>(p.rows), -1);
  for (int64_t it = 0; it < o_.max_iter; ++it) {
    StepTotals st;
    GEOMX_RETURN_IF_ERROR(LloydStep(p, *centres, o_.k, comm, context.threads, context.Interrupted(), &labels, &st));
    if (st.interrupted) return Status::Cancelled("kmeans: interrupted");
    const double shift = SquaredShift(st.centres, *centres);
    *centres = std::move(st.centres);
    Report(context, ++*step, {{"inertia", st.inertia}, {"center_shift", shift}}, *centres);
    if (st.changed == 0 || shift <= tol_abs) break;
  }
  return Status::Ok();
}

Status KMeansEstimator::RunMiniBatch(const Points& p, Comm& comm, const FitContext& context, const Layout& layout,
                                     double tol_abs, uint64_t seed, int64_t* step, std::vector<float>* centres) const {
  const int64_t k = o_.k, d = p.cols, total = layout.total();
  const int64_t steps_per_epoch = (total + o_.batch_size - 1) / o_.batch_size;
  // This worker's share of each batch, in proportion to its rows.
  int64_t mine = static_cast<int64_t>(std::llround(static_cast<double>(o_.batch_size) * p.rows / total));
  if (p.rows > 0) mine = std::max<int64_t>(mine, 1);
  Rng rng = Rng(seed).Fork(1 + static_cast<uint64_t>(comm.rank()));
  std::vector<float> batch(static_cast<size_t>(mine * d)), bw(static_cast<size_t>(mine));
  std::vector<int32_t> best(static_cast<size_t>(mine));
  std::vector<float> d2(static_cast<size_t>(mine));
  std::vector<double> counts(static_cast<size_t>(k), 0.0);
  const double alpha = std::min(1.0, 2.0 * static_cast<double>(o_.batch_size) / static_cast<double>(total + 1));
  double ewa = -1, best_ewa = std::numeric_limits<double>::infinity();
  int64_t no_improvement = 0;
  // stats: [k*d sums][k weights][sse][interrupted]
  std::vector<float> stats(static_cast<size_t>(k * d + k + 2));
  for (int64_t epoch = 0; epoch < o_.max_iter; ++epoch) {
    const std::vector<float> start = *centres;
    bool stop = false;
    for (int64_t s = 0; s < steps_per_epoch && !stop; ++s) {
      for (int64_t i = 0; i < mine; ++i) {
        const int64_t r = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(p.rows)));
        std::copy(p.row(r), p.row(r) + d, batch.begin() + i * d);
        bw[static_cast<size_t>(i)] = static_cast<float>(p.weight(r));
      }
      Points bp = MakePoints(batch.data(), mine, d, bw.data(), 1);
      Nearest(bp, centres->data(), k, context.threads, best.data(), d2.data());
      std::vector<double> acc(stats.size(), 0.0);
      for (int64_t i = 0; i < mine; ++i) {
        const int32_t c = best[static_cast<size_t>(i)];
        const double w = bw[static_cast<size_t>(i)];
        for (int64_t j = 0; j < d; ++j)
          acc[static_cast<size_t>(c * d + j)] += w * batch[static_cast<size_t>(i * d + j)];
        acc[static_cast<size_t>(k * d + c)] += w;
        acc[static_cast<size_t>(k * d + k)] += w * d2[static_cast<size_t>(i)];
      }
      for (size_t j = 0; j < stats.size(); ++j) stats[j] = static_cast<float>(acc[j]);
      stats.back() = context.Interrupted() ? 1.0f : 0.0f;
      GEOMX_RETURN_IF_ERROR(comm.Sum("kmeans.minibatch", stats));
      if (stats.back() > 0) return Status::Cancelled("kmeans: interrupted");
      double batch_weight = 0;
      for (int64_t c = 0; c < k; ++c) {
        const double w = stats[static_cast<size_t>(k * d + c)];
        batch_weight += w;
        if (w <= 0) continue;
        const double n = counts[static_cast<size_t>(c)] + w;
        for (int64_t j = 0; j < d; ++j) {
          float& v = (*centres)[static_cast<size_t>(c * d + j)];
          v = static_cast<float>((v * counts[static_cast<size_t>(c)] + stats[static_cast<size_t>(c * d + j)]) / n);
        }
        counts[static_cast<size_t>(c)] = n;
      }
      // Early stop on the smoothed batch inertia, as scikit-learn's max_no_improvement.
      const double batch_inertia = batch_weight > 0 ? stats[static_cast<size_t>(k * d + k)] / batch_weight : 0;
      ewa = ewa < 0 ? batch_inertia : ewa * (1 - alpha) + batch_inertia * alpha;
      if (ewa < best_ewa) {
        best_ewa = ewa;
        no_improvement = 0;
      } else if (o_.max_no_improvement > 0 && ++no_improvement >= o_.max_no_improvement) {
        stop = true;
      }
    }
    const double shift = SquaredShift(*centres, start);
    Report(context, ++*step, {{"batch_inertia", ewa}, {"center_shift", shift}}, *centres);
    if (stop || shift <= tol_abs) break;
  }
  return Status::Ok();
}

Status KMeansEstimator::Fit(const data::Table& train, const FitContext& context) {
  Comm comm(context.collective);
  const int threads = std::max(1, context.threads);
  Status local;
  if (train.rows > 0 && train.cols < 1) local = Status::InvalidArgument("kmeans: the training table has no columns");
  if (!train.weights.empty() && static_cast<int64_t>(train.weights.size()) != train.rows) {
    local = Status::InvalidArgument("kmeans: the training table has " + std::to_string(train.weights.size()) +
                                    " weights for " + std::to_string(train.rows) + " rows");
  }
  for (float w : train.weights) {
    if (!(w >= 0) && local.ok()) local = Status::InvalidArgument("kmeans: a row weight is negative or NaN");
  }
  // Header: every worker learns every shard's size, so that all take the same branch below.
  // Row counts travel as two floats (high and low 24 bits) so that they stay exact.
  const std::vector<float> header = {local.ok() ? 1.0f : 0.0f, static_cast<float>(train.rows >> 24),
                                     static_cast<float>(train.rows & 0xffffff), static_cast<float>(train.cols)};
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> headers, comm.Gather("kmeans.fit.header", header));
  if (headers.size() != 4 * static_cast<size_t>(comm.world())) return Status::Internal("kmeans: bad header gather");
  GEOMX_RETURN_IF_ERROR(local);
  Layout layout;
  layout.start.push_back(0);
  for (int r = 0; r < comm.world(); ++r) {
    const float* h = &headers[4 * static_cast<size_t>(r)];
    if (h[0] == 0.0f) return Status::FailedPrecondition("kmeans: worker " + std::to_string(r) + " rejected its shard");
    if (static_cast<int64_t>(h[3]) != train.cols) {
      return Status::InvalidArgument("kmeans: worker " + std::to_string(r) + " has " +
                                     std::to_string(static_cast<int64_t>(h[3])) + " columns, this one " +
                                     std::to_string(train.cols));
    }
    layout.start.push_back(layout.start.back() + (static_cast<int64_t>(h[1]) << 24) + static_cast<int64_t>(h[2]));
  }
  if (layout.total() == 0) return Status::InvalidArgument("kmeans: the training table is empty");
  if (o_.k > layout.total()) {
    return Status::InvalidArgument("kmeans: n_clusters (" + std::to_string(o_.k) +
                                   ") is larger than the training set (" + std::to_string(layout.total()) + " rows)");
  }
  cols_ = train.cols;
  Points p = MakePoints(train, threads);

  // Tolerance scale: the mean per-feature variance of the union (unweighted, as scikit-learn).
  GEOMX_ASSIGN_OR_RETURN(const double mean_var, MeanFeatureVariance(p, comm, layout.total(), threads));
  const double tol_abs = o_.tol * mean_var;

  int64_t step = 0;
  double best_inertia = std::numeric_limits<double>::infinity();
  for (int64_t run = 0; run < o_.n_init; ++run) {
    const uint64_t seed = context.seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(run);
    Rng rng(seed);  // the same draws on every worker
    std::vector<float> centres;
    if (o_.init_parallel) {
      GEOMX_ASSIGN_OR_RETURN(centres, InitKMeansParallel(p, o_, seed, rng, comm, layout, threads));
    } else {
      GEOMX_ASSIGN_OR_RETURN(centres, InitKMeansPlusPlus(p, o_.k, rng, comm, layout, threads));
    }
    if (o_.minibatch) {
      GEOMX_RETURN_IF_ERROR(RunMiniBatch(p, comm, context, layout, tol_abs, seed, &step, &centres));
    } else {
      GEOMX_RETURN_IF_ERROR(RunLloyd(p, comm, context, tol_abs, &step, &centres));
    }
    // The inertia of the final centres (one more assignment pass, as scikit-learn's final E-step).
    std::vector<int32_t> labels(static_cast<size_t>(p.rows), -1);
    StepTotals st;
    GEOMX_RETURN_IF_ERROR(LloydStep(p, centres, o_.k, comm, threads, context.Interrupted(), &labels, &st));
    if (st.interrupted) return Status::Cancelled("kmeans: interrupted");
    if (st.inertia < best_inertia) {
      best_inertia = st.inertia;
      centres_ = std::move(centres);
    }
  }
  train_inertia_ = best_inertia;
  Report(context, ++step, {{"inertia", best_inertia}}, centres_);
  return Status::Ok();
}

Result<Prediction> KMeansEstimator::Predict(const data::Table& input, int threads) const {
  if (centres_.empty()) return Status::FailedPrecondition("kmeans: the model is neither fitted nor loaded");
  if (input.cols != cols_) {
    return Status::InvalidArgument("kmeans: the input has " + std::to_string(input.cols) +
                                   " columns, the model was trained on " + std::to_string(cols_));
  }
  Points p = MakePoints(input, threads);
  std::vector<int32_t> best(static_cast<size_t>(p.rows));
  std::vector<float> d2(static_cast<size_t>(p.rows));
  Nearest(p, centres_.data(), o_.k, threads, best.data(), d2.data());
  Prediction out;
  out.value.assign(best.begin(), best.end());
  out.extra.push_back({"inertia", ExactInertia(p, centres_, best.data(), threads)});
  return out;
}

Metrics KMeansEstimator::ModelMetrics(const data::Table& table, const Prediction& prediction) const {
  if (centres_.empty() || table.cols != cols_ || static_cast<int64_t>(prediction.value.size()) != table.rows) return {};
  std::vector<int32_t> assignment(prediction.value.size());
  for (size_t i = 0; i < assignment.size(); ++i) {
    const float v = prediction.value[i];
    if (!(v >= 0 && v < static_cast<float>(o_.k))) return {};
    assignment[i] = static_cast<int32_t>(v);
  }
  Points p = MakePoints(table, 1);
  return {{"inertia", ExactInertia(p, centres_, assignment.data(), 1)}};
}

void KMeansEstimator::Save(ModelWriter* out) const {
  const std::vector<int64_t> shape = {o_.k, cols_};
  out->PutInts("kmeans.shape", shape);
  out->PutFloats("kmeans.centres", centres_);
  out->PutNumber("kmeans.inertia", train_inertia_);
}

Status KMeansEstimator::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("kmeans.shape", &shape, 2));
  if (shape[0] != o_.k || shape[1] < 1 || shape[1] > std::numeric_limits<int64_t>::max() / shape[0]) {
    return Status::DataLoss(in.source() + ": section 'kmeans.shape' holds " + std::to_string(shape[0]) + " x " +
                            std::to_string(shape[1]) + " centres for n_clusters=" + std::to_string(o_.k));
  }
  std::vector<float> centres;
  GEOMX_RETURN_IF_ERROR(in.GetFloats("kmeans.centres", &centres, shape[0] * shape[1]));
  double inertia = 0;
  GEOMX_RETURN_IF_ERROR(in.GetNumber("kmeans.inertia", &inertia));
  cols_ = shape[1];
  centres_ = std::move(centres);
  train_inertia_ = inertia;
  return Status::Ok();
}

EstimatorDef MakeKMeansDef() {
  EstimatorDef def;
  def.name = "kmeans";
  def.title = "KMeans";
  def.task = data::TableTask::kClustering;
  def.help =
      "k-means clustering (as scikit-learn's KMeans / MiniBatchKMeans and Spark's KMeans): Lloyd's algorithm or "
      "mini-batch steps, initialised by greedy k-means++ or k-means|| (init_steps rounds oversampling "
      "oversampling_factor * n_clusters candidates, reduced by weighted k-means++). Stops when no row changes cluster "
      "or the summed squared centre shift is at most tol x the mean feature variance. Predict gives the nearest "
      "centre; the inertia (sum of squared distances to it) is reported with every prediction.";
  def.distributed =
      "each Lloyd step sums per-cluster (sum vector, weight, SSE) over the workers (k x (d + 2) floats) and every "
      "worker computes the same centres; k-means|| gathers the sampled candidates";
  def.params = {
      IntParam("n_clusters", 8, 1, 1000000, "clusters (centres) to find"),
      ChoiceParam("init", "k-means++", {"k-means++", "k-means||"},
                  "initialisation: greedy k-means++, or k-means|| (few rounds, suited to many workers)"),
      IntParam("n_init", 1, 1, 1000, "initialisations run; the lowest final inertia wins"),
      IntParam("max_iter", 300, 1, 1000000, "Lloyd iterations per run (minibatch: passes over the data)"),
      NonNegativeParam("tol", 1e-4, "stop when the summed squared centre shift <= tol x mean feature variance"),
      ChoiceParam("algorithm", "lloyd", {"lloyd", "minibatch"}, "full-batch Lloyd, or mini-batch k-means"),
      IntParam("batch_size", 1024, 1, 1 << 24, "minibatch: rows per step over all workers"),
      IntParam("max_no_improvement", 10, 0, 1000000,
               "minibatch: stop after this many steps without a better smoothed batch inertia (0 = never)"),
      PositiveParam("oversampling_factor", 2.0, "k-means||: candidates drawn per round = factor x n_clusters"),
      IntParam("init_steps", 2, 1, 100, "k-means||: sampling rounds"),
  };
  def.create = [](const ParamValues& p) -> std::unique_ptr<Estimator> { return std::make_unique<KMeansEstimator>(p); };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeKMeansDef());

}  // namespace geomx::algorithms
