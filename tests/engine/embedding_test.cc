// Embedding lookup and row-sparse gradients (ops.h EmbeddingLookup/EmbeddingBackward and the RowSparseTensor
// helpers, autograd::Embedding, Variable's GradLayout) on every available device, with hand-computed values. The
// forward against a naive reference and the backward against finite differences are conformance rows
// (backend_conformance_test.cc).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/autograd/functions.h"
#include "engine/autograd/grad_check.h"
#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

using autograd::GradLayout;
using autograd::Variable;
using I64 = std::vector<int64_t>;
using Vec = std::vector<float>;

class EmbeddingTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor T(const Vec& v, const Shape& s) const { return Tensor::FromVector(v, s, dev()); }
  Tensor Idx(const I64& v, const Shape& s) const { return Tensor::FromVectorI64(v, s, dev()); }
  // Table [4, 2]: row r = (10r, 10r + 1).
  Tensor Table() const { return T({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2}); }
  RowSparseTensor Sparse(const I64& rows, const Vec& values, int64_t num_rows, int64_t width) const {
    return {rows, T(values, {static_cast<int64_t>(rows.size()), width}), num_rows};
  }
};

TEST_P(EmbeddingTest, LookupGathersRowsForAnyIndexShape) {
  Result<Tensor> y = ops::EmbeddingLookup(Table(), Idx({3, 1, 3, 0}, {2, 2}));
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(y->ToFloatVector(), (Vec{30, 31, 10, 11, 30, 31, 0, 1}));
  Result<Tensor> empty = ops::EmbeddingLookup(Table(), Idx({}, {0}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->shape(), (Shape{0, 2}));
}

TEST_P(EmbeddingTest, BackwardSumsDuplicatesIntoSortedDistinctRows) {
  // Positions 0 and 2 both pick row 3; row 2 is never picked.
  const Tensor dy = T({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  Result<RowSparseTensor> g = ops::EmbeddingBackward(dy, Idx({3, 1, 3, 0}, {2, 2}), 4);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->rows, (I64{0, 1, 3}));
  EXPECT_EQ(g->num_rows, 4);
  EXPECT_EQ(g->values.shape(), (Shape{3, 2}));
  EXPECT_EQ(g->values.ToFloatVector(), (Vec{7, 8, 3, 4, 1 + 5, 2 + 6}));
  EXPECT_EQ(ops::RowSparseToDense(*g).ToFloatVector(), (Vec{7, 8, 3, 4, 0, 0, 6, 8}));
  Result<RowSparseTensor> none = ops::EmbeddingBackward(T({}, {0, 2}), Idx({}, {0}), 4);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->rows.empty());
  EXPECT_EQ(ops::RowSparseToDense(*none).ToFloatVector(), Vec(8, 0.0f));
}

TEST_P(EmbeddingTest, IndicesOutsideTheTableAreInvalidArgument) {
  Result<Tensor> y = ops::EmbeddingLookup(Table(), Idx({1, 4}, {2}));
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(y.status().message().find("index 4 at position 1"), std::string::npos) << y.status().ToString();
  EXPECT_FALSE(ops::EmbeddingLookup(Table(), Idx({-1}, {1})).ok());
  Result<RowSparseTensor> g = ops::EmbeddingBackward(T({1, 2}, {1, 2}), Idx({7}, {1}), 4);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("index 7 at position 0"), std::string::npos) << g.status().ToString();
  // The autograd function reports it too, and records nothing.
  Result<Variable> v = autograd::Embedding(Variable(Table(), true), Idx({0, 9}, {2}));
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
}

TEST_P(EmbeddingTest, RowSparseAdditions) {
  const RowSparseTensor a = Sparse({0, 2}, {1, 2, 3, 4}, 4, 2);
  const RowSparseTensor b = Sparse({1, 2, 3}, {10, 20, 30, 40, 50, 60}, 4, 2);
  const RowSparseTensor sum = ops::AddRowSparse(a, b);
  EXPECT_EQ(sum.rows, (I64{0, 1, 2, 3}));
  EXPECT_EQ(sum.values.ToFloatVector(), (Vec{1, 2, 10, 20, 33, 44, 50, 60}));
  const Tensor dense = ops::AddRowSparse(T({1, 1, 1, 1, 1, 1, 1, 1}, {4, 2}), a);
  EXPECT_EQ(dense.ToFloatVector(), (Vec{2, 3, 1, 1, 4, 5, 1, 1}));
  const RowSparseTensor with_empty = ops::AddRowSparse(a, Sparse({}, {}, 4, 2));
  EXPECT_EQ(with_empty.rows, a.rows);
  EXPECT_EQ(with_empty.values.ToFloatVector(), a.values.ToFloatVector());
}

// A scalar loss sum(y * w) with fixed weights, so the table's gradient is w's rows summed per index.
Variable WeightedSum(const Variable& y, const Vec& w, Device d) {
  return autograd::Sum(autograd::Mul(y, Variable(Tensor::FromVector(w, y.shape(), d))));
}

TEST_P(EmbeddingTest, DenseLayoutLeafGetsADenseGradient) {
  Variable table(Table(), true);
  Result<Variable> y = autograd::Embedding(table, Idx({2, 0, 2}, {3}));
  ASSERT_TRUE(y.ok());
  WeightedSum(*y, {1, 2, 3, 4, 5, 6}, dev()).Backward();
  EXPECT_FALSE(table.row_sparse_grad().defined());
  EXPECT_EQ(table.grad().ToFloatVector(), (Vec{3, 4, 0, 0, 1 + 5, 2 + 6, 0, 0}));
}

TEST_P(EmbeddingTest, RowSparseLayoutAccumulatesOverUsesAndPasses) {
  Variable table(Table(), true);
  table.set_grad_layout(GradLayout::kRowSparse);
  for (int pass = 0; pass < 2; ++pass) {
    // Two lookups in one graph: their row-sparse gradients merge.
    Result<Variable> a = autograd::Embedding(table, Idx({3, 1}, {2}));
    Result<Variable> b = autograd::Embedding(table, Idx({1}, {1}));
    ASSERT_TRUE(a.ok() && b.ok());
    autograd::Add(WeightedSum(*a, {1, 2, 3, 4}, dev()), WeightedSum(*b, {10, 20}, dev())).Backward();
  }
  EXPECT_FALSE(table.grad().defined());
  const RowSparseTensor& g = table.row_sparse_grad();
  ASSERT_TRUE(g.defined());
  EXPECT_EQ(g.rows, (I64{1, 3}));
  EXPECT_EQ(g.values.ToFloatVector(), (Vec{2 * 13, 2 * 24, 2 * 1, 2 * 2}));
  table.ZeroGrad();
  EXPECT_FALSE(table.row_sparse_grad().defined());
}

TEST_P(EmbeddingTest, RowSparseLayoutTurnsDenseWhenADenseGradientArrives) {
  // The table feeds a lookup and a dense op: everything ends in grad().
  Variable table(Table(), true);
  table.set_grad_layout(GradLayout::kRowSparse);
  Result<Variable> y = autograd::Embedding(table, Idx({2}, {1}));
  ASSERT_TRUE(y.ok());
  autograd::Add(WeightedSum(*y, {1, 2}, dev()), autograd::Sum(table)).Backward();
  EXPECT_FALSE(table.row_sparse_grad().defined());
  EXPECT_EQ(table.grad().ToFloatVector(), (Vec{1, 1, 1, 1, 2, 3, 1, 1}));
}

TEST_P(EmbeddingTest, OnLeafDoneSeesTheRowSparseGradient) {
  Variable table(Table(), true);
  table.set_grad_layout(GradLayout::kRowSparse);
  Result<Variable> y = autograd::Embedding(table, Idx({0, 0}, {2}));
  ASSERT_TRUE(y.ok());
  Variable loss = WeightedSum(*y, {1, 1, 1, 1}, dev());
  int calls = 0;
  I64 rows;
  autograd::BackwardOptions opts;
  opts.on_leaf_done = [&](const Variable& leaf) {
    ++calls;
    rows = leaf.row_sparse_grad().rows;
  };
  loss.Backward(Tensor::Full(loss.shape(), 1.0f, DType::kF32, dev()), opts);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(rows, (I64{0}));
}

TEST_P(EmbeddingTest, GradientsMatchFiniteDifferencesThroughAComputedTable) {
  // The table is itself computed (not a leaf): its row-sparse gradient is densified on the way back.
  const Tensor idx = Idx({4, 1, 4, 0, 2, 1}, {2, 3});
  const autograd::GradCheckResult r = autograd::CheckGradients(
      [&](const std::vector<Variable>& in) {
        Result<Variable> y = autograd::Embedding(autograd::Mul(in[0], in[0]), idx);
        GEOMX_CHECK(y.ok()) << y.status().ToString();
        return WeightedSum(*y, {0.5f, -1, 2, 1, 0.25f, -3, 1, 1, -2, 0.5f, 1.5f, -1}, in[0].data().device());
      },
      {testing::RandomTensor({5, 2}, 7, -1, 1, dev())});
  EXPECT_LT(r.max_rel_error, 1e-2) << r.message;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, EmbeddingTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx
