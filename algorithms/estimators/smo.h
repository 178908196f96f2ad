// SMO: the kernel-machine dual solver behind the `svm` (C-SVC) and `svr` (epsilon-SVR) estimators.
//
// The method is LIBSVM's (Chang & Lin, "LIBSVM: a library for support vector machines", 2011), written anew:
//   min_a  0.5 a^T Q a + p^T a   s.t.  y^T a = const,  0 <= a_t <= U_t,   Q_ts = y_t y_s K(x_k(t), x_k(s)),
// solved two variables at a time (sequential minimal optimisation) with
//  - second-order working-set selection (Fan, Chen & Lin, JMLR 2005, "WSS3"): i maximises the KKT violation,
//    j maximises the guaranteed decrease of the objective given i;
//  - shrinking: every min(L, 1000) iterations, variables stuck at a bound whose gradient says they will stay there
//    leave the active set; when the violation first falls below 10 * tol all variables come back (the gradient of
//    the shrunk ones rebuilt from G_bar, the gradient part of the variables at their upper bound), and again at the
//    end, so the stopping test always holds on the whole problem;
//  - an LRU cache of kernel rows (float), sized in MB. A row computed while shrunk holds only the active columns and
//    is valid until the active set next grows (completing it later computes only the missing columns); a row
//    computed over all columns stays valid. When row i misses, the rows of the three likeliest partners j are
//    computed in the same pass over the data (a pass is memory-bound: four rows cost about one).
// Stopping: max_{I_up} -y_t G_t + max_{I_low} y_t G_t < tol (LIBSVM's -e).
//
// The points are kept as a data::Table (dense rows or CSR). Kernel rows are dot-product batches against the dense
// query row (dense points: 1x4 or 4x3 register tiles of 8-lane vectors, AVX2 when the CPU has it; CSR points:
// gathers from the scattered query), then the kernel function; long rows are split over OpenMP threads. Every
// kernel value is computed by the same per-lane sequence whatever the tile, batch or thread it belongs to (and
// K(x, z) == K(z, x) bitwise), so the solution does not depend on the cache size or the thread count.
//
// Thread-safety: the free functions are reentrant (each call owns its solver state), so independent problems (the
// one-vs-one pairs) may be solved concurrently from several threads with SolverOptions::threads = 1.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "datasets/table.h"

namespace geomx::algorithms::smo {

enum class KernelType : uint8_t { kLinear = 0, kPoly = 1, kRbf = 2, kSigmoid = 3 };
const char* KernelTypeName(KernelType type);
// "linear" | "poly" | "rbf" | "sigmoid"; false for anything else.
bool ParseKernelType(const std::string& text, KernelType* out);

struct KernelSpec {
  KernelType type = KernelType::kRbf;
  double gamma = 1.0;  // poly, rbf, sigmoid
  int degree = 3;      // poly
  double coef0 = 0.0;  // poly, sigmoid
  // K from the dot product x.z and the squared norms ||x||^2, ||z||^2 (only rbf reads the norms):
  // linear x.z; poly (gamma x.z + coef0)^degree; rbf exp(-gamma ||x - z||^2); sigmoid tanh(gamma x.z + coef0).
  double Apply(double dot, double sq_x, double sq_z) const;
};

// The squared norm of every row of `table` (double accumulation).
std::vector<double> SquaredNorms(const data::Table& table);

// scikit-learn's gamma="scale": 1 / (cols * Var(X)), the variance over every entry of X (zeros of a CSR table
// included); 1 when that variance is 0. `sum`, `sum_sq` and `count` are the sums of the entries, of their squares
// and the number of entries (n * cols), so that workers can add theirs before the division.
double ScaleGamma(double sum, double sum_sq, double count, int64_t cols);
// The three sums above for one table.
void EntrySums(const data::Table& table, double* sum, double* sum_sq, double* count);

struct SolverOptions {
  double tol = 1e-3;          // stopping tolerance on the maximal KKT violation (LIBSVM -e)
  bool shrinking = true;      // LIBSVM -h
  double cache_mb = 200;      // kernel-row cache (LIBSVM -m); at least two rows are always kept
  int64_t max_iter = 0;       // 0: LIBSVM's guard, max(10^7, 100 L); otherwise this cap
  int threads = 1;            // OpenMP threads for long kernel rows
  // Multiply-adds below which a kernel row is not split over threads: a fork/join costs microseconds (much more
  // on a busy machine), a row of 2M multiply-adds about a millisecond.
  int64_t parallel_grain = int64_t{1} << 21;
  const std::atomic<bool>* interrupted = nullptr;  // checked every 256 iterations
};

struct SolveResult {
  // Per point: y_i a_i (C-SVC) or a_i - a*_i (epsilon-SVR): the decision function is
  //   f(x) = sum_i coef_i K(x_i, x) - rho.
  std::vector<double> coef;
  // The dual variables: n (C-SVC) or 2n (epsilon-SVR: a_0..a_{n-1}, then a*_0..a*_{n-1}).
  std::vector<double> alpha;
  double rho = 0;
  double objective = 0;      // 0.5 a^T Q a + p^T a at the solution
  int64_t iterations = 0;
  int64_t kernel_rows = 0;   // kernel rows computed (cache misses)
  bool converged = false;    // false: stopped by max_iter (or cancelled)
  bool cancelled = false;    // SolverOptions::interrupted was raised
};

// C-SVC dual on the rows of `points` (dense or CSR): y_i in {+1, -1}, upper bound U_i = C_i (C times the row's
// weight), p = -1, y^T a = 0.
SolveResult SolveCsvc(const data::Table& points, std::span<const double> y, std::span<const double> upper,
                      const KernelSpec& kernel, const SolverOptions& options);

// epsilon-SVR dual: 2n variables (a, a*), p = (epsilon - z, epsilon + z), y = (+1.., -1..), U = (C_i, C_i),
// sum a - sum a* = 0.
SolveResult SolveEpsilonSvr(const data::Table& points, std::span<const double> z, std::span<const double> upper,
                            double epsilon, const KernelSpec& kernel, const SolverOptions& options);

// out[r * svs.rows + s] = K(query row begin + r, sv s) for r in [0, end - begin): the kernel block of prediction.
// Dense x dense runs 4x3 register tiles over cache blocks (GEMM-shaped); other layouts scatter each query row.
// `sv_sq_norms` are SquaredNorms(svs). Single-threaded; callers split the queries over threads.
void KernelBlock(const data::Table& queries, int64_t begin, int64_t end, const data::Table& svs,
                 std::span<const double> sv_sq_norms, const KernelSpec& kernel, float* out);

}  // namespace geomx::algorithms::smo
