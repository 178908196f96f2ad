// Internal to the SMO solver (smo.cc) and its kernel code (smo_kernel.cc): kernel rows of a point set.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/estimators/smo.h"

namespace geomx::algorithms::smo {

// Kernel values of point r against a list of points of the same table. Immutable; thread-safe given a scratch
// vector per calling thread (CSR only).
class KernelComputer {
 public:
  KernelComputer(const data::Table& points, const KernelSpec& spec);

  // out[k] = K(x_r, x_cols[k]) for k < m; the dot products split over `threads` when the batch is long.
  void Row(int32_t r, const int32_t* cols, int64_t m, float* out, int threads, int64_t grain,
           std::vector<float>* scratch) const;

  // Row() for four points of a dense table at once: outs[i][k] = K(x_rows[i], x_cols[k]). One pass over the
  // columns' data instead of four: kernel rows are bound by memory bandwidth, not arithmetic.
  void Rows4(const int32_t* rows, const int32_t* cols, int64_t m, float* const* outs, int threads,
             int64_t grain) const;

  bool sparse() const { return points_.sparse; }
  double diag(int32_t r) const { return spec_.Apply(sq_[r], sq_[r], sq_[r]); }

 private:
  const data::Table& points_;
  KernelSpec spec_;
  std::vector<float> sq_;
};

}  // namespace geomx::algorithms::smo
