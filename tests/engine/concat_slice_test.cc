// Concat and Slice along one dimension (ops.h, Backend::CopyBlocks) on every available device: forward against a
// naive reference written here (multi-index loops), for ranks 1 to 4, every dimension, f32 and i64. The
// gradients are checked in autograd_test.cc (GradConcatAndSlice).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

using Vec = std::vector<float>;

Vec Iota(int64_t n, float base) {
  Vec v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
  return v;
}

// Row-major flat index of `idx` in `dims`.
int64_t Flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t i = 0; i < dims.size(); ++i) f = f * dims[i] + idx[i];
  return f;
}

// Calls fn(idx) for every multi-index of `dims`.
template <typename Fn>
void ForEachIndex(const std::vector<int64_t>& dims, Fn fn) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(idx);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

// The element of the concatenation at `idx` taken from whichever input covers idx[d].
Vec ReferenceConcat(const std::vector<Vec>& xs, const std::vector<std::vector<int64_t>>& shapes, int d) {
  std::vector<int64_t> out_dims = shapes[0];
  out_dims[d] = 0;
  for (const auto& s : shapes) out_dims[d] += s[d];
  Vec out;
  ForEachIndex(out_dims, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in = idx;
    size_t which = 0;
    while (in[d] >= shapes[which][d]) in[d] -= shapes[which++][d];
    out.push_back(xs[which][static_cast<size_t>(Flat(shapes[which], in))]);
  });
  return out;
}

Vec ReferenceSlice(const Vec& x, const std::vector<int64_t>& dims, int d, int64_t start, int64_t length) {
  std::vector<int64_t> out_dims = dims;
  out_dims[d] = length;
  Vec out;
  ForEachIndex(out_dims, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in = idx;
    in[d] += start;
    out.push_back(x[static_cast<size_t>(Flat(dims, in))]);
  });
  return out;
}

class ConcatSliceTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
};

TEST_P(ConcatSliceTest, ConcatMatchesReferenceForEveryRankAndDim) {
  for (const std::vector<int64_t>& base : std::vector<std::vector<int64_t>>{{5}, {3, 4}, {2, 3, 4}, {2, 3, 2, 3}}) {
    const int rank = static_cast<int>(base.size());
    for (int d = 0; d < rank; ++d) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " dim " + std::to_string(d));
      std::vector<std::vector<int64_t>> shapes{base, base, base};
      shapes[1][d] = 1;
      shapes[2][d] = base[d] + 2;
      std::vector<Vec> xs;
      std::vector<Tensor> ts;
      for (size_t i = 0; i < shapes.size(); ++i) {
        const Shape s(shapes[i]);
        xs.push_back(Iota(s.numel(), 1000.0f * static_cast<float>(i)));
        ts.push_back(Tensor::FromVector(xs.back(), s, dev()));
      }
      const Vec want = ReferenceConcat(xs, shapes, d);
      const Tensor got = ops::Concat(ts, d);
      std::vector<int64_t> want_dims = base;
      want_dims[d] = 2 * base[d] + 3;
      EXPECT_EQ(got.shape().ToString(), Shape(want_dims).ToString());
      EXPECT_EQ(got.ToFloatVector(), want);
      EXPECT_EQ(ops::Concat(ts, d - rank).ToFloatVector(), want);  // negative dim
    }
  }
}

TEST_P(ConcatSliceTest, SliceMatchesReferenceForEveryRankDimAndRange) {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{6}, {4, 5}, {3, 4, 5}, {2, 3, 4, 3}}) {
    const int rank = static_cast<int>(dims.size());
    const Shape s(dims);
    const Vec x = Iota(s.numel(), 0.5f);
    const Tensor t = Tensor::FromVector(x, s, dev());
    for (int d = 0; d < rank; ++d) {
      for (int64_t start = 0; start < dims[d]; ++start) {
        for (int64_t len = 0; start + len <= dims[d]; ++len) {
          SCOPED_TRACE("dims " + s.ToString() + " dim " + std::to_string(d) + " [" + std::to_string(start) +
                       ", +" + std::to_string(len) + ")");
          const Tensor got = ops::Slice(t, d, start, len);
          EXPECT_EQ(got.dim(d), len);
          EXPECT_EQ(got.ToFloatVector(), ReferenceSlice(x, dims, d, start, len));
        }
      }
    }
  }
}

TEST_P(ConcatSliceTest, CopyIntoSliceWritesOnlyTheSlice) {
  Tensor dst = Tensor::Full({2, 4}, -1.0f, DType::kF32, dev());
  ops::CopyIntoSlice(Tensor::FromVector({1, 2, 3, 4}, {2, 2}, dev()), &dst, -1, 1);
  EXPECT_EQ(dst.ToFloatVector(), (Vec{-1, 1, 2, -1, -1, 3, 4, -1}));
}

TEST_P(ConcatSliceTest, WorksOnI64AndRoundTrips) {
  const Tensor a = Tensor::FromVectorI64({1, 2, 3, 4, 5, 6}, {2, 3}, dev());
  const Tensor b = Tensor::FromVectorI64({7, 8}, {2, 1}, dev());
  const Tensor c = ops::Concat({a, b}, 1);
  EXPECT_EQ(c.dtype(), DType::kI64);
  EXPECT_EQ(c.ToI64Vector(), (std::vector<int64_t>{1, 2, 3, 7, 4, 5, 6, 8}));
  EXPECT_EQ(ops::Slice(c, 1, 0, 3).ToI64Vector(), a.ToI64Vector());
  EXPECT_EQ(ops::Slice(c, 1, 3, 1).ToI64Vector(), b.ToI64Vector());
}

TEST_P(ConcatSliceTest, SlicesOfAViewReadTheViewNotItsStorage) {
  // Slice0 gives a view at a byte offset into a larger storage: the strided copy must start from it.
  const Tensor whole = Tensor::FromVector(Iota(12, 0), {4, 3}, dev());
  const Tensor rows = whole.Slice0(2, 4);  // {{6, 7, 8}, {9, 10, 11}}
  EXPECT_EQ(ops::Slice(rows, 1, 1, 2).ToFloatVector(), (Vec{7, 8, 10, 11}));
  EXPECT_EQ(ops::Concat({rows, rows}, 0).ToFloatVector(), (Vec{6, 7, 8, 9, 10, 11, 6, 7, 8, 9, 10, 11}));
}

using ConcatSliceDeathTest = ConcatSliceTest;

// Every tensor is made before the death statements: a death test forks, and a forked child cannot use a CUDA
// context its parent created (cudaErrorInitializationError), so the child may only run the argument checks.
TEST_P(ConcatSliceDeathTest, BadArgumentsAbortWithTheOpName) {
  const Tensor t = Tensor::Zeros({2, 3}, DType::kF32, dev());
  const Tensor taller = Tensor::Zeros({3, 3}, DType::kF32, dev());
  const Tensor ints = Tensor::Zeros({2, 3}, DType::kI64, dev());
  EXPECT_DEATH(ops::Slice(t, 1, 2, 2), "Slice");
  EXPECT_DEATH(ops::Slice(t, 2, 0, 1), "dim 2 out of range");
  EXPECT_DEATH(ops::Concat({t, taller}, 1), "does not match");
  EXPECT_DEATH(ops::Concat({t, ints}, 0), "does not match");
}

INSTANTIATE_TEST_SUITE_P(AllDevices, ConcatSliceTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });
INSTANTIATE_TEST_SUITE_P(AllDevices, ConcatSliceDeathTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx
