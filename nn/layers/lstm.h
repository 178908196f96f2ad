// Lstm: one LSTM layer over batch-major sequences x [N, T, input_size] (engine/op_params.h LstmParams: gate order
// input, forget, cell, output; zero initial state). Parameters "weight_ih" [4H, input_size], "weight_hh" [4H, H]
// and "bias" [4H]. Weights are drawn from U(-1/sqrt(H), 1/sqrt(H)) (PyTorch's LSTM initialisation); the bias is
// zero except the forget gate's, which starts at 1 so that early training keeps the cell state (Jozefowicz et al.,
// 2015). Owns its parameters; not thread-safe (Module).
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/rng.h"
#include "nn/module.h"

namespace geomx::nn {

class Lstm : public Module {
 public:
  // `sequences`: the output is every step's hidden state [N, T, H]; false: the last one [N, H].
  Lstm(int64_t input_size, int64_t hidden_size, bool sequences, Rng& rng);

  // x [N, T, input_size]; a wrong shape aborts (programmer error).
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return "Lstm"; }

  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }

 private:
  int64_t input_size_;
  int64_t hidden_size_;
  bool sequences_;
  Parameter* weight_ih_;
  Parameter* weight_hh_;
  Parameter* bias_;
};

}  // namespace geomx::nn
