#include "algorithms/train/grad_clip.h"

#include <cmath>

#include "engine/base/check.h"
#include "engine/ops.h"

namespace geomx::train {

double ClipGradNorm(const std::vector<nn::Parameter*>& params, float max_norm) {
  GEOMX_CHECK(max_norm > 0.0f) << "ClipGradNorm: max_norm must be positive, got " << max_norm;
  Tensor total;  // sum of squares, a scalar on the gradients' device
  for (const nn::Parameter* p : params) {
    const Tensor& g = p->grad();
    if (!g.defined()) continue;
    Tensor sq = ops::Sum(ops::Unary(UnaryOp::kSquare, g));
    total = total.defined() ? ops::Add(total, sq) : sq;
  }
  if (!total.defined()) return 0.0;
  const double norm = std::sqrt(static_cast<double>(total.item()));
  const double coef = static_cast<double>(max_norm) / (norm + 1e-6);
  if (coef >= 1.0) return norm;
  for (const nn::Parameter* p : params) {
    Tensor g = p->grad();  // shares the gradient's storage
    if (g.defined()) g.CopyFrom(ops::MulScalar(g, static_cast<float>(coef)));
  }
  return norm;
}

}  // namespace geomx::train
