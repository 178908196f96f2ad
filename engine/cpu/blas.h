// Dense matrix products on the CPU for code outside the tensor engine (the classical estimators' distance
// blocks): a thin adapter over oneDNN's sgemm, so that no layer above engine/cpu includes oneDNN itself
// (docs/architecture.md, vendor headers stay in their adapters).
#pragma once

#include <cstdint>

namespace geomx::cpu {

// Row-major C = alpha * op(A) . op(B) + beta * C with op(X) = X or X^T (trans_*), A m x k after op, B k x n after op;
// lda/ldb/ldc are row strides. Runs on `threads` OpenMP threads (>= 1), restoring the caller's setting after;
// called inside an OpenMP parallel region it runs on the calling thread.
// Aborts (GEOMX_CHECK) on a oneDNN failure: only invalid shapes cause one, which callers rule out.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int threads);

}  // namespace geomx::cpu
