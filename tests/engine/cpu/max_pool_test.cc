// The CPU max-pooling loops (engine/cpu/max_pool.h) through ops::Pool2d / Pool2dBackward, against a naive
// pooling written here: every window scanned in row-major order, the first strictly larger value wins, dx sums dy
// at the winners. Inputs are drawn from a handful of integers so that most windows hold ties (the tie rule is part
// of the contract; backend_conformance_test.cc covers distinct values and finite differences). The shapes cover
// the four-wide 2x2 path with and without a scalar tail and odd input sizes, and the general loop with padding,
// overlapping windows and uneven strides.
#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/autograd/functions.h"
#include "engine/base/rng.h"
#include "engine/ops.h"

namespace geomx {
namespace {

struct Naive {
  std::vector<float> y, dx;
};

Naive NaivePool(const std::vector<float>& x, const Shape& xs, const Pool2dParams& p, const std::vector<float>& dy,
                const Shape& ys) {
  Naive r;
  r.y.assign(static_cast<size_t>(ys.numel()), 0.0f);
  r.dx.assign(x.size(), 0.0f);
  size_t out = 0;
  for (int64_t plane = 0; plane < xs[0] * xs[1]; ++plane) {
    for (int64_t oh = 0; oh < ys[2]; ++oh) {
      for (int64_t ow = 0; ow < ys[3]; ++ow, ++out) {
        int64_t winner = -1;
        for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
          for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
            const int64_t ih = oh * p.stride_h - p.pad_h + ky, iw = ow * p.stride_w - p.pad_w + kx;
            if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
            const int64_t at = (plane * xs[2] + ih) * xs[3] + iw;
            if (winner < 0 || x[at] > x[winner]) winner = at;
          }
        }
        r.y[out] = x[winner];
        r.dx[winner] += dy[out];
      }
    }
  }
  return r;
}

struct Case {
  std::string name;
  Shape x;
  Pool2dParams p;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MaxPoolTest : public ::testing::TestWithParam<Case> {};

TEST_P(MaxPoolTest, MatchesNaivePoolingWithTies) {
  const Case& c = GetParam();
  Rng rng(7);
  std::vector<float> x(static_cast<size_t>(c.x.numel()));
  for (float& v : x) v = static_cast<float>(static_cast<int>(rng.NextU64() % 4) - 2);  // -2..1: many ties
  const Tensor xt = Tensor::FromVector(x, c.x);
  const ops::PoolResult res = ops::Pool2d(xt, c.p);
  const Shape ys = res.y.shape();
  std::vector<float> dy(static_cast<size_t>(ys.numel()));
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i % 7) + 0.5f;
  const Naive want = NaivePool(x, c.x, c.p, dy, ys);
  EXPECT_EQ(res.y.ToFloatVector(), want.y);
  const Tensor dx = ops::Pool2dBackward(xt, Tensor::FromVector(dy, ys), res.workspace, c.p);
  EXPECT_EQ(dx.ToFloatVector(), want.dx);
}

Pool2dParams Max(int kh, int kw, int sh, int sw, int ph, int pw) { return {PoolKind::kMax, kh, kw, sh, sw, ph, pw}; }

INSTANTIATE_TEST_SUITE_P(
    Shapes, MaxPoolTest,
    ::testing::Values(Case{"two_by_two_lanes_only", {2, 3, 4, 16}, Max(2, 2, 2, 2, 0, 0)},
                      Case{"two_by_two_geomx_cnn", {3, 16, 24, 24}, Max(2, 2, 2, 2, 0, 0)},
                      Case{"two_by_two_tail_odd_sizes", {2, 2, 11, 21}, Max(2, 2, 2, 2, 0, 0)},
                      Case{"two_by_two_tail_only", {1, 2, 5, 7}, Max(2, 2, 2, 2, 0, 0)},
                      Case{"three_by_three_pad_overlap", {2, 2, 9, 10}, Max(3, 3, 2, 2, 1, 1)},
                      Case{"three_by_two_uneven_stride", {1, 3, 8, 11}, Max(3, 2, 1, 2, 0, 0)},
                      Case{"two_by_two_stride_one", {1, 2, 6, 9}, Max(2, 2, 1, 1, 0, 0)}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A hand-built case: in each window the first of the equal largest values takes the gradient.
TEST(MaxPoolTieTest, FirstOfEqualValuesWins) {
  // One 2x8 plane, four 2x2 windows (the four-wide path): maxima 3 (top left and bottom left equal), 5 (all four),
  // 0 (bottom right only), -1 (top right and bottom left).
  const std::vector<float> x = {3, 1, 5, 5, -4, -4, -2, -1,  //
                                3, 2, 5, 5, -4, 0, -1, -3};
  const Tensor xt = Tensor::FromVector(x, Shape{1, 1, 2, 8});
  const ops::PoolResult res = ops::Pool2d(xt, Max(2, 2, 2, 2, 0, 0));
  EXPECT_EQ(res.y.ToFloatVector(), (std::vector<float>{3, 5, 0, -1}));
  const Tensor dx = ops::Pool2dBackward(xt, Tensor::FromVector({10, 20, 30, 40}, Shape{1, 1, 1, 4}), res.workspace,
                                        Max(2, 2, 2, 2, 0, 0));
  EXPECT_EQ(dx.ToFloatVector(), (std::vector<float>{10, 0, 20, 0, 0, 0, 0, 40,  //
                                                    0, 0, 0, 0, 0, 30, 0, 0}));
}

// The CNNs pool before their relu (nn/models/conv_pool_net.cc) because relu(maxpool(x)) = maxpool(relu(x)), values
// and gradients: here with inputs full of zeros and ties, where the two orders pick different winners (a window of
// zeros and negatives) and only relu's zero gradient at 0 makes them agree.
TEST(MaxPoolTieTest, PoolThenReluEqualsReluThenPoolWithZerosAndTies) {
  Rng rng(11);
  const Shape xs{2, 3, 8, 10};
  std::vector<float> x(static_cast<size_t>(xs.numel()));
  for (float& v : x) v = static_cast<float>(static_cast<int>(rng.NextU64() % 4) - 2);  // -2..1
  const Pool2dParams p = Max(2, 2, 2, 2, 0, 0);
  const auto relu = [](const autograd::Variable& v) { return autograd::Activation(ActivationKind::kRelu, v); };
  std::vector<std::vector<float>> y, dx;
  for (bool pool_first : {true, false}) {
    autograd::Variable in(Tensor::FromVector(x, xs), /*requires_grad=*/true);
    autograd::Variable out = pool_first ? relu(autograd::Pool2d(in, p)) : autograd::Pool2d(relu(in), p);
    y.push_back(out.data().ToFloatVector());
    std::vector<float> seed(static_cast<size_t>(out.data().numel()));
    for (size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<float>(i % 5) + 1.0f;
    out.Backward(Tensor::FromVector(seed, out.data().shape()));
    dx.push_back(in.grad().ToFloatVector());
  }
  EXPECT_EQ(y[0], y[1]);
  EXPECT_EQ(dx[0], dx[1]);
  EXPECT_GT(std::count(x.begin(), x.end(), 0.0f), 50);  // the zeros the claim is about are there
}

}  // namespace
}  // namespace geomx
