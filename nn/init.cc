#include "nn/init.h"

#include <cmath>
#include <vector>

#include "engine/base/check.h"

namespace geomx::nn {
namespace {

int64_t ReceptiveField(const Shape& shape) {
  int64_t r = 1;
  for (int i = 2; i < shape.rank(); ++i) r *= shape.dim(i);
  return r;
}

Tensor Uniform(const Shape& shape, float bound, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>((2.0 * rng.Uniform() - 1.0) * bound);
  return Tensor::FromVector(v, shape);
}

}  // namespace

Result<InitKind> ParseInitKind(const std::string& name) {
  if (name == "kaiming" || name == "kaiming_uniform") return InitKind::kKaimingUniform;
  if (name == "kaiming_normal") return InitKind::kKaimingNormal;
  if (name == "xavier" || name == "xavier_uniform") return InitKind::kXavierUniform;
  return Status::InvalidArgument("unknown init '" + name +
                                 "' (known: kaiming, kaiming_uniform, kaiming_normal, xavier, xavier_uniform)");
}

int64_t FanIn(const Shape& shape) {
  GEOMX_CHECK_GE(shape.rank(), 1) << "FanIn of a scalar";
  return shape.rank() == 1 ? shape.dim(0) : shape.dim(1) * ReceptiveField(shape);
}

int64_t FanOut(const Shape& shape) {
  GEOMX_CHECK_GE(shape.rank(), 1) << "FanOut of a scalar";
  return shape.rank() == 1 ? shape.dim(0) : shape.dim(0) * ReceptiveField(shape);
}

Tensor KaimingUniform(const Shape& shape, Rng& rng) {
  return Uniform(shape, static_cast<float>(std::sqrt(6.0 / static_cast<double>(FanIn(shape)))), rng);
}

Tensor KaimingNormal(const Shape& shape, Rng& rng) {
  const double stddev = std::sqrt(2.0 / static_cast<double>(FanIn(shape)));
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(rng.Normal() * stddev);
  return Tensor::FromVector(v, shape);
}

Tensor XavierUniform(const Shape& shape, Rng& rng) {
  const double fans = static_cast<double>(FanIn(shape) + FanOut(shape));
  return Uniform(shape, static_cast<float>(std::sqrt(6.0 / fans)), rng);
}

Tensor InitWeight(InitKind kind, const Shape& shape, Rng& rng) {
  switch (kind) {
    case InitKind::kKaimingUniform: return KaimingUniform(shape, rng);
    case InitKind::kKaimingNormal: return KaimingNormal(shape, rng);
    case InitKind::kXavierUniform: return XavierUniform(shape, rng);
  }
  GEOMX_CHECK(false) << "InitWeight: bad kind";
  return {};
}

Tensor ZerosInit(const Shape& shape) { return Tensor::Zeros(shape); }
Tensor OnesInit(const Shape& shape) { return Tensor::Full(shape, 1.0f); }

}  // namespace geomx::nn
