#include "nn/layers/embedding.h"

#include <utility>
#include <vector>

#include "engine/autograd/functions.h"
#include "engine/base/check.h"

namespace geomx::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t dim, Rng& rng, const EmbeddingOptions& options)
    : num_embeddings_(num_embeddings), dim_(dim) {
  GEOMX_CHECK(num_embeddings > 0 && dim > 0) << "Embedding(" << num_embeddings << ", " << dim << ")";
  GEOMX_CHECK(options.init_std >= 0.0f) << "Embedding: init_std must be >= 0, got " << options.init_std;
  std::vector<float> w(static_cast<size_t>(num_embeddings * dim));
  for (float& v : w) v = static_cast<float>(rng.Normal() * options.init_std);
  weight_ = RegisterParameter("weight", Tensor::FromVector(w, Shape{num_embeddings, dim}));
  weight_->var().set_grad_layout(options.grad_layout);
}

Result<autograd::Variable> Embedding::Lookup(const Tensor& indices) {
  RunForwardHook();
  return autograd::Embedding(weight_->var(), indices);
}

autograd::Variable Embedding::Forward(const autograd::Variable& x) {
  Result<autograd::Variable> y = Lookup(x.data());
  GEOMX_CHECK(y.ok()) << y.status().ToString();
  return std::move(y).value();
}

}  // namespace geomx::nn
