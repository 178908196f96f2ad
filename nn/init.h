// Weight initialisers. Every random initialiser takes an explicit Rng (no global RNG), so the same seed gives
// the same weights on every platform. Tensors are created on the CPU in f32; Module::To moves them.
//
// Fan conventions (PyTorch's): for a weight of shape [out, in, k...], fan_in = in * prod(k) and
// fan_out = out * prod(k); a rank-1 tensor has fan_in = fan_out = its length.
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/rng.h"
#include "engine/base/status.h"
#include "engine/tensor.h"

namespace geomx::nn {

// How conv/linear weights are drawn. Biases are always zero-initialised.
enum class InitKind : uint8_t {
  kKaimingUniform,  // U(-b, b), b = sqrt(6 / fan_in) (He et al., gain sqrt(2) for ReLU)
  kKaimingNormal,   // N(0, 2 / fan_in)
  kXavierUniform,   // U(-b, b), b = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)
};

// "kaiming" (= "kaiming_uniform"), "kaiming_normal", "xavier" (= "xavier_uniform"). kInvalidArgument naming the
// accepted values otherwise.
Result<InitKind> ParseInitKind(const std::string& name);

int64_t FanIn(const Shape& shape);
int64_t FanOut(const Shape& shape);

// Draws a new f32 CPU tensor of `shape` with the given scheme: one value per element from `rng`, in row-major
// order (so the stream position after a model is built depends only on its shapes).
Tensor KaimingUniform(const Shape& shape, Rng& rng);
Tensor KaimingNormal(const Shape& shape, Rng& rng);
Tensor XavierUniform(const Shape& shape, Rng& rng);
// Dispatches on `kind`.
Tensor InitWeight(InitKind kind, const Shape& shape, Rng& rng);
// An f32 CPU tensor of zeros / of ones (biases, batch-norm parameters and buffers).
Tensor ZerosInit(const Shape& shape);
Tensor OnesInit(const Shape& shape);

}  // namespace geomx::nn
