#include "nn/layers/recurrent.h"

#include <cmath>

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

namespace {

Tensor UniformInit(const Shape& shape, float bound, Rng& rng) {
  Tensor t = Tensor::Empty(shape, DType::kF32);
  float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = (2.0f * rng.UniformF() - 1.0f) * bound;
  return t;
}

}  // namespace

Recurrent::Recurrent(RnnCell cell, int64_t input_size, int64_t hidden_size, bool sequences, Rng& rng)
    : input_size_(input_size), hidden_size_(hidden_size) {
  GEOMX_CHECK(input_size > 0 && hidden_size > 0) << "Recurrent(" << input_size << ", " << hidden_size << ")";
  params_.cell = cell;
  params_.sequences = sequences;
  const int64_t g = RnnGates(cell);
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden_size));
  weight_ih_ = RegisterParameter("weight_ih", UniformInit(Shape{g * hidden_size, input_size}, bound, rng));
  weight_hh_ = RegisterParameter("weight_hh", UniformInit(Shape{g * hidden_size, hidden_size}, bound, rng));
  Tensor bias = Tensor::Zeros(Shape{RnnBiasBlocks(cell) * hidden_size}, DType::kF32);
  if (cell == RnnCell::kLstm) {
    float* b = bias.data<float>();
    for (int64_t k = hidden_size; k < 2 * hidden_size; ++k) b[k] = 1.0f;  // the forget gate
  }
  bias_ = RegisterParameter("bias", bias);
}

autograd::Variable Recurrent::Forward(const autograd::Variable& x) {
  RunForwardHook();
  GEOMX_CHECK(x.shape().rank() == 3 && x.shape().dim(2) == input_size_)
      << TypeName() << " expects [N, T, " << input_size_ << "], got " << x.shape().ToString();
  return autograd::Rnn(x, weight_ih_->var(), weight_hh_->var(), bias_->var(), params_);
}

}  // namespace geomx::nn
