// Embedding: a lookup table of num_embeddings rows of `dim` floats. Forward maps i64 indices of any shape S to
// [S..., dim] (autograd::Embedding). Parameter "weight" [num_embeddings, dim], drawn from N(0, init_std^2)
// (PyTorch's default is N(0, 1)). Owns its parameter; not thread-safe (Module).
//
// Gradients: the table's gradient is row-sparse (the touched rows only). With the default GradLayout::kDense the
// weight's grad() receives it densified, so Optimizer::Step, gradient clipping and the trainer's dense parameter
// sync work unchanged (at the cost of a [num_embeddings, dim] gradient per step). GradLayout::kRowSparse keeps
// it in weight()->var().row_sparse_grad() for code that pushes rows itself (a row-sparse parameter-server key);
// the dense consumers do not read row-sparse gradients (Optimizer::Step aborts on one: leave such a weight out of
// the parameters it steps).
#pragma once

#include <cstdint>
#include <string>

#include "engine/autograd/variable.h"
#include "engine/base/rng.h"
#include "engine/base/status.h"
#include "nn/module.h"

namespace geomx::nn {

struct EmbeddingOptions {
  autograd::GradLayout grad_layout = autograd::GradLayout::kDense;  // how the weight keeps its gradient
  float init_std = 1.0f;                                            // weight ~ N(0, init_std^2); >= 0
};

class Embedding : public Module {
 public:
  // Draws the weight from `rng` (borrowed only during construction). Sizes must be positive.
  Embedding(int64_t num_embeddings, int64_t dim, Rng& rng, const EmbeddingOptions& options = {});

  // x: i64 indices of any shape S, on the weight's device (a Variable for the Module interface; it gets no
  // gradient) -> [S..., dim]. An index outside [0, num_embeddings) aborts naming it; Lookup reports it instead.
  autograd::Variable Forward(const autograd::Variable& x) override;
  // Forward on a plain index tensor, with kInvalidArgument for an index outside [0, num_embeddings).
  Result<autograd::Variable> Lookup(const Tensor& indices);
  std::string TypeName() const override { return "Embedding"; }

  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t dim() const { return dim_; }
  Parameter* weight() { return weight_; }

 private:
  int64_t num_embeddings_;
  int64_t dim_;
  Parameter* weight_;
};

}  // namespace geomx::nn
