// nn::Embedding (nn/layers/embedding.h) on every available device: its parameter, the lookup through Forward and
// Lookup, one SGD step moving only the touched rows (dense layout), and the row-sparse layout's gradient.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/autograd/functions.h"
#include "nn/layers/embedding.h"
#include "nn/optim/optimizer.h"
#include "tests/testutil.h"

namespace geomx::nn {
namespace {

using autograd::Variable;
using Vec = std::vector<float>;

class EmbeddingLayerTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor Idx(const std::vector<int64_t>& v, const Shape& s) const { return Tensor::FromVectorI64(v, s, dev()); }
  // The rows of `table` [v, d] (host copy) at `idx`, in order.
  static Vec Rows(const Vec& table, int64_t d, const std::vector<int64_t>& idx) {
    Vec out;
    for (int64_t i : idx) out.insert(out.end(), table.begin() + i * d, table.begin() + (i + 1) * d);
    return out;
  }
};

TEST_P(EmbeddingLayerTest, ForwardPicksWeightRowsForABatchOfSequences) {
  Rng rng(5);
  Embedding emb(6, 3, rng);
  emb.To(dev());
  ASSERT_EQ(emb.Parameters().size(), 1u);
  EXPECT_EQ(emb.Parameters()[0]->key(), "weight");
  EXPECT_EQ(emb.weight()->data().shape(), (Shape{6, 3}));
  const std::vector<int64_t> idx{5, 0, 2, 2, 1, 5};
  const Variable y = emb.Forward(Variable(Idx(idx, {2, 3})));
  EXPECT_EQ(y.shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(y.data().ToFloatVector(), Rows(emb.weight()->data().ToFloatVector(), 3, idx));
  Result<Variable> bad = emb.Lookup(Idx({6}, {1}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_P(EmbeddingLayerTest, SgdStepMovesOnlyTheTouchedRows) {
  Rng rng(6);
  Embedding emb(5, 2, rng);
  emb.To(dev());
  const Vec before = emb.weight()->data().ToFloatVector();
  Result<Variable> y = emb.Lookup(Idx({3, 1, 3}, {3}));
  ASSERT_TRUE(y.ok());
  autograd::Sum(*y).Backward();  // every looked-up element has gradient 1: row 3 twice, row 1 once
  OptimizerConfig config;
  config.name = "sgd";
  config.lr = 0.5f;
  auto opt = CreateOptimizer(config);
  ASSERT_TRUE(opt.ok());
  (*opt)->Step(emb.Parameters());
  Vec want = before;
  for (int c = 0; c < 2; ++c) {
    want[1 * 2 + c] -= 0.5f;
    want[3 * 2 + c] -= 1.0f;
  }
  EXPECT_TRUE(testing::AllClose(emb.weight()->data().ToFloatVector(), want, 0.0f, 1e-6f));
}

TEST_P(EmbeddingLayerTest, RowSparseLayoutKeepsOnlyTheTouchedRows) {
  Rng rng(7);
  Embedding emb(1000, 4, rng, EmbeddingOptions{.grad_layout = autograd::GradLayout::kRowSparse});
  emb.To(dev());
  Result<Variable> y = emb.Lookup(Idx({999, 7, 999}, {3}));
  ASSERT_TRUE(y.ok());
  autograd::Sum(*y).Backward();
  const RowSparseTensor& g = emb.weight()->var().row_sparse_grad();
  EXPECT_FALSE(emb.weight()->grad().defined());
  EXPECT_EQ(g.rows, (std::vector<int64_t>{7, 999}));
  EXPECT_EQ(g.values.ToFloatVector(), (Vec{1, 1, 1, 1, 2, 2, 2, 2}));
  emb.ZeroGrad();
  EXPECT_FALSE(emb.weight()->var().row_sparse_grad().defined());
}

INSTANTIATE_TEST_SUITE_P(AllDevices, EmbeddingLayerTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx::nn
