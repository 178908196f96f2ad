// Recurrent: one LSTM or GRU layer over batch-major sequences x [N, T, input_size] (engine/op_params.h RnnParams:
// gate order, biases, zero initial state). Parameters "weight_ih" [G*H, input_size], "weight_hh" [G*H, H] and
// "bias" ([4H] for the LSTM, [b_ih | b_hh] = [6H] for the GRU). Weights are drawn from U(-1/sqrt(H), 1/sqrt(H))
// (PyTorch's initialisation); the bias is zero except the LSTM's forget gate, which starts at 1 so that early
// training keeps the cell state (Jozefowicz et al., 2015). Owns its parameters; not thread-safe (Module).
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/rng.h"
#include "engine/op_params.h"
#include "nn/module.h"

namespace geomx::nn {

class Recurrent : public Module {
 public:
  // `sequences`: the output is every step's hidden state [N, T, H]; false: the last one [N, H].
  Recurrent(RnnCell cell, int64_t input_size, int64_t hidden_size, bool sequences, Rng& rng);

  // x [N, T, input_size]; a wrong shape aborts (programmer error).
  autograd::Variable Forward(const autograd::Variable& x) override;
  std::string TypeName() const override { return params_.cell == RnnCell::kLstm ? "Lstm" : "Gru"; }

  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }

 private:
  RnnParams params_;
  int64_t input_size_;
  int64_t hidden_size_;
  Parameter* weight_ih_;
  Parameter* weight_hh_;
  Parameter* bias_;
};

}  // namespace geomx::nn
