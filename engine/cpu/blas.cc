#include "engine/cpu/blas.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "engine/base/check.h"

namespace geomx::cpu {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int threads) {
  if (m <= 0 || n <= 0) return;
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  dnnl_status_t status = dnnl_success;
  if (omp_in_parallel()) {  // nested regions are off: the product runs on the calling thread
    status = dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    const int before = omp_get_max_threads();
    omp_set_num_threads(std::max(1, threads));
    status = dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    omp_set_num_threads(before);
  }
  GEOMX_CHECK(status == dnnl_success) << "dnnl_sgemm failed with status " << static_cast<int>(status);
}

}  // namespace geomx::cpu
