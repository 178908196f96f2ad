// Dense distance kernels shared by the distance-based estimators (knn, kmeans): a block of rows against a matrix
// of rows, squared Euclidean distances as one GEMM (||a||^2 + ||b||^2 - 2 a.b, the a.b block by oneDNN's sgemm) and
// Manhattan distances by a blocked, vectorised loop.
//
// Every matrix is dense, row-major, `dim` floats per row. The block functions are thread-compatible: they only
// read their inputs and write `out`. `threads` is the number of OpenMP threads a call may use; called from inside
// an OpenMP parallel region a call runs on the calling thread only (nested regions stay off), which is how the
// estimators parallelise over row blocks themselves.
//
// Accuracy: the GEMM form loses about 1e-7 * (||a||^2 + ||b||^2) to cancellation, so two points closer than that
// can come out at a small positive distance (never negative: results are clamped at 0). Callers that report
// distances or break ties recompute the few they keep with SquaredL2 / L1 below (double accumulation).
#pragma once

#include <cstdint>

// For the float kernels of distance.cc and kmeans.cc: AVX2 and baseline clones picked at load time (the build
// targets baseline x86-64); not under ThreadSanitizer, which instruments the clones' ifunc resolver that the loader
// runs before TSan's runtime is up (a crash at start).
#if defined(__SANITIZE_THREAD__)
#define GEOMX_AVX2_CLONES
#else
#define GEOMX_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#endif

namespace geomx::algorithms {

// out[i] = ||x_i||^2 for i < rows (accumulated in double, stored as float).
void RowSquaredNorms(const float* x, int64_t rows, int64_t dim, float* out, int threads);

// out (m x n, leading dimension n) = a (m x dim) . b (n x dim)^T, by oneDNN's sgemm on up to `threads` threads.
void DotBlock(const float* a, int64_t m, const float* b, int64_t n, int64_t dim, float* out, int threads);

// out (m x n, leading dimension n) = max(0, a_norms[i] + b_norms[j] - 2 a_i.b_j): squared Euclidean distances.
void SquaredL2Block(const float* a, const float* a_norms, int64_t m, const float* b, const float* b_norms, int64_t n,
                    int64_t dim, float* out, int threads);

// out (m x n, leading dimension n) = sum_d |a_i[d] - b_j[d]|: Manhattan distances.
void L1Block(const float* a, int64_t m, const float* b, int64_t n, int64_t dim, float* out, int threads);

// One pair, accumulated in double: the exact references the block forms are checked against and refined with.
double SquaredL2(const float* a, const float* b, int64_t dim);
double L1(const float* a, const float* b, int64_t dim);

}  // namespace geomx::algorithms
