// Backend conformance (docs/style.md R15): every dense op of the Backend seam, on every available device,
// forward against a naive reference written here (plain loops, double accumulation) and backward against central
// finite differences of the device's own forward. Adding an op, or a variant of one, means adding one row to
// Rows(); a new backend (CUDA) runs the same rows through AvailableDevices().
//
// The backward check: with a fixed random r shaped like the output, L(inputs) = sum(forward(inputs) * r) has
// dL/dinput = backward(dy = r); each sampled input element is perturbed by +-h and compared.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend_registry.h"
#include "engine/base/rng.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

using Vec = std::vector<float>;
using ForwardFn = std::function<Vec(const std::vector<Vec>& inputs)>;

constexpr float kFwdRtol = 1e-4f, kFwdAtol = 1e-5f;
constexpr float kFdStep = 1e-2f;  // inputs near a kink (relu 0, max-pool ties) are kept > kFdStep away
constexpr float kFdRtol = 1e-2f, kFdAtol = 2e-3f;
constexpr size_t kMaxFdPoints = 96;  // larger inputs are checked on an evenly strided subset

Vec RandomVec(const Shape& s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  Vec v(static_cast<size_t>(s.numel()));
  for (float& x : v) x = lo + (hi - lo) * rng.UniformF();
  return v;
}

// Distinct values spaced 0.05 apart in random order, so no max-pool window has a near tie.
Vec DistinctVec(const Shape& s, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> idx(static_cast<size_t>(s.numel()));
  std::iota(idx.begin(), idx.end(), 0);
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng.Below(i)]);
  Vec v(idx.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(idx[i]) - 0.025f * v.size();
  return v;
}

Tensor On(Device d, const Vec& v, const Shape& s) { return Tensor::FromVector(v, s, d); }

// Central differences of sum(f(inputs) * r) w.r.t. inputs[which], compared with `analytic`.
void ExpectMatchesFiniteDiff(const std::string& what, const ForwardFn& f, std::vector<Vec> inputs, size_t which,
                             const Vec& r, const Vec& analytic) {
  Vec& x = inputs[which];
  ASSERT_EQ(analytic.size(), x.size()) << what;
  const size_t step = std::max<size_t>(1, (x.size() + kMaxFdPoints - 1) / kMaxFdPoints);
  Vec numeric, got;
  for (size_t i = 0; i < x.size(); i += step) {
    const float orig = x[i];
    x[i] = orig + kFdStep;
    const float hi = x[i];
    const Vec plus = f(inputs);
    x[i] = orig - kFdStep;
    const float lo = x[i];
    const Vec minus = f(inputs);
    x[i] = orig;
    double dl = 0;  // outputs that do not depend on x[i] cancel exactly
    for (size_t j = 0; j < r.size(); ++j) dl += (static_cast<double>(plus[j]) - minus[j]) * r[j];
    numeric.push_back(static_cast<float>(dl / (static_cast<double>(hi) - lo)));
    got.push_back(analytic[i]);
  }
  EXPECT_TRUE(testing::AllClose(got, numeric, kFdRtol, kFdAtol)) << what << " vs finite differences";
}

// ---------------------------------------------------------------------------------------------------------------
// Naive references (double accumulation).

int64_t OutDim(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

Vec RefConv2d(const Vec& x, const Shape& xs, const Vec& w, const Shape& ws, const Vec& b, const Conv2dParams& p,
              const Shape& ys) {
  const int64_t n_ = xs[0], c_ = xs[1], h_ = xs[2], w_ = xs[3], o_ = ws[0], kh_ = ws[2], kw_ = ws[3];
  Vec y(static_cast<size_t>(ys.numel()));
  size_t at = 0;
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t o = 0; o < o_; ++o)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          double acc = b.empty() ? 0.0 : b[o];
          for (int64_t c = 0; c < c_; ++c)
            for (int64_t i = 0; i < kh_; ++i)
              for (int64_t j = 0; j < kw_; ++j) {
                const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                if (ih < 0 || ih >= h_ || iw < 0 || iw >= w_) continue;
                acc +=
                    static_cast<double>(x[((n * c_ + c) * h_ + ih) * w_ + iw]) * w[((o * c_ + c) * kh_ + i) * kw_ + j];
              }
          y[at++] = static_cast<float>(acc);
        }
  return y;
}

// a is [M,K] (or [K,M] when ta), b is [K,N] (or [N,K] when tb).
Vec RefMatMul(const Vec& a, bool ta, const Vec& b, bool tb, int64_t m, int64_t k, int64_t n) {
  Vec c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q) {
        acc += static_cast<double>(ta ? a[q * m + i] : a[i * k + q]) * (tb ? b[j * k + q] : b[q * n + j]);
      }
      c[i * n + j] = static_cast<float>(acc);
    }
  return c;
}

Vec RefPool2d(const Vec& x, const Shape& xs, const Pool2dParams& p, const Shape& ys) {
  Vec y(static_cast<size_t>(ys.numel()));
  size_t at = 0;
  for (int64_t nc = 0; nc < xs[0] * xs[1]; ++nc)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow) {
        double best = -INFINITY, sum = 0;
        int count = 0;
        for (int64_t i = 0; i < p.kernel_h; ++i)
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const int64_t ih = oh * p.stride_h - p.pad_h + i, iw = ow * p.stride_w - p.pad_w + j;
            if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
            const double v = x[(nc * xs[2] + ih) * xs[3] + iw];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        y[at++] = static_cast<float>(p.kind == PoolKind::kMax ? best : sum / count);
      }
  return y;
}

struct RefBn {
  Vec y, mean, var;  // var: biased
};
// x is [N,C] or [N,C,H,W]; with `stats` given, uses them (inference) instead of batch statistics.
RefBn RefBatchNorm(const Vec& x, const Shape& xs, const Vec& gamma, const Vec& beta, float eps,
                   const Vec* stat_mean = nullptr, const Vec* stat_var = nullptr) {
  const int64_t n_ = xs[0], c_ = xs[1], hw = xs.rank() == 4 ? xs[2] * xs[3] : 1;
  RefBn r{Vec(x.size()), Vec(c_), Vec(c_)};
  for (int64_t c = 0; c < c_; ++c) {
    double mean = 0, var = 0;
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t s = 0; s < hw; ++s) mean += x[(n * c_ + c) * hw + s];
    mean /= static_cast<double>(n_ * hw);
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t s = 0; s < hw; ++s) var += std::pow(x[(n * c_ + c) * hw + s] - mean, 2);
    var /= static_cast<double>(n_ * hw);
    if (stat_mean) mean = (*stat_mean)[c], var = (*stat_var)[c];
    r.mean[c] = static_cast<float>(mean);
    r.var[c] = static_cast<float>(var);
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t s = 0; s < hw; ++s) {
        const size_t i = static_cast<size_t>((n * c_ + c) * hw + s);
        r.y[i] = static_cast<float>(gamma[c] * (x[i] - mean) / std::sqrt(var + eps) + beta[c]);
      }
  }
  return r;
}

double RefActivation(ActivationKind k, double x) {
  switch (k) {
    case ActivationKind::kRelu:
      return x > 0 ? x : 0;
    case ActivationKind::kTanh:
      return std::tanh(x);
    case ActivationKind::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case ActivationKind::kGelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  }
  return NAN;
}

Vec RefSoftmax(bool log, const Vec& x, int64_t rows, int64_t cols) {
  Vec y(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = &x[i * cols];
    const double mx = *std::max_element(row, row + cols);
    double z = 0;
    for (int64_t j = 0; j < cols; ++j) z += std::exp(row[j] - mx);
    for (int64_t j = 0; j < cols; ++j) {
      y[i * cols + j] = static_cast<float>(log ? row[j] - mx - std::log(z) : std::exp(row[j] - mx) / z);
    }
  }
  return y;
}

// Embedding lookup: out[s, :] = table[idx[s], :].
Vec RefEmbedding(const Vec& table, int64_t d, const std::vector<int64_t>& idx) {
  Vec out;
  for (int64_t i : idx) out.insert(out.end(), table.begin() + i * d, table.begin() + (i + 1) * d);
  return out;
}

// TF's crop_and_resize, bilinear, from its definition (ops.h): the sample coordinate in f32 in the documented
// order (which decides whether a sample on the image border is inside), the interpolation in double from the four
// pixel values. x [N, C, H, W], boxes [K, 4] = (y1, x1, y2, x2), out [K, C, ch, cw].
Vec RefCropAndResize(const Vec& x, const Shape& xs, const Vec& boxes, const std::vector<int64_t>& image,
                     const CropAndResizeParams& p) {
  const int64_t c_ = xs[1], h_ = xs[2], w_ = xs[3];
  auto coord = [](float a, float b, int64_t i, int64_t n, int64_t size) {
    const float extent = static_cast<float>(size - 1);
    if (n == 1) return 0.5f * (a + b) * extent;
    return a * extent + static_cast<float>(i) * ((b - a) * extent / static_cast<float>(n - 1));
  };
  Vec out;
  for (size_t k = 0; k < image.size(); ++k) {
    const float* bx = &boxes[4 * k];
    for (int64_t c = 0; c < c_; ++c)
      for (int64_t i = 0; i < p.crop_h; ++i)
        for (int64_t j = 0; j < p.crop_w; ++j) {
          const double yy = coord(bx[0], bx[2], i, p.crop_h, h_), xx = coord(bx[1], bx[3], j, p.crop_w, w_);
          if (yy < 0 || yy > h_ - 1 || xx < 0 || xx > w_ - 1) {
            out.push_back(p.extrapolation_value);
            continue;
          }
          const int64_t y0 = static_cast<int64_t>(std::floor(yy)), x0 = static_cast<int64_t>(std::floor(xx));
          const int64_t y1 = std::min(y0 + 1, h_ - 1), x1 = std::min(x0 + 1, w_ - 1);
          const double fy = yy - y0, fx = xx - x0;
          auto at = [&](int64_t y, int64_t xi) {
            return static_cast<double>(x[((image[k] * c_ + c) * h_ + y) * w_ + xi]);
          };
          out.push_back(static_cast<float>((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                                           fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1))));
        }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Rows.

struct Row {
  std::string name;
  std::function<void(Device)> run;
};
void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

Row Conv2dRow(std::string name, Shape xs, Shape ws, Conv2dParams p, bool bias) {
  return {
      name, [=](Device d) {
        const Shape bs{ws[0]};
        const Shape ys{xs[0], ws[0], OutDim(xs[2], ws[2], p.stride_h, p.pad_h, p.dilation_h),
                       OutDim(xs[3], ws[3], p.stride_w, p.pad_w, p.dilation_w)};
        EXPECT_EQ(ops::Conv2dOutputShape(xs, ws, p), ys);
        const std::vector<Vec> in = {RandomVec(xs, 1), RandomVec(ws, 2), bias ? RandomVec(bs, 3) : Vec()};
        const ForwardFn fwd = [=](const std::vector<Vec>& v) {
          return ops::Conv2d(On(d, v[0], xs), On(d, v[1], ws), bias ? On(d, v[2], bs) : Tensor(), p).ToFloatVector();
        };
        EXPECT_TRUE(testing::AllClose(fwd(in), RefConv2d(in[0], xs, in[1], ws, in[2], p, ys), kFwdRtol, kFwdAtol));
        const Vec r = RandomVec(ys, 4);
        const Tensor dy = On(d, r, ys);
        ExpectMatchesFiniteDiff("dx", fwd, in, 0, r,
                                ops::Conv2dBackwardData(dy, On(d, in[1], ws), xs, p).ToFloatVector());
        auto [dw, db] = ops::Conv2dBackwardFilter(On(d, in[0], xs), dy, ws, bias, p);
        ExpectMatchesFiniteDiff("dw", fwd, in, 1, r, dw.ToFloatVector());
        if (bias) ExpectMatchesFiniteDiff("db", fwd, in, 2, r, db.ToFloatVector());
      }};
}

// Forward only: MatMul's backward is MatMul with other transpose flags, which these rows cover.
Row MatMulRow(std::string name, int64_t m, int64_t k, int64_t n, bool ta, bool tb, bool accumulate) {
  return {name, [=](Device d) {
            const Shape as = ta ? Shape{k, m} : Shape{m, k}, bs = tb ? Shape{n, k} : Shape{k, n};
            const Vec a = RandomVec(as, 5), b = RandomVec(bs, 6);
            Vec expected = RefMatMul(a, ta, b, tb, m, k, n);
            if (!accumulate) {
              EXPECT_TRUE(testing::AllClose(ops::MatMul(On(d, a, as), On(d, b, bs), ta, tb).ToFloatVector(), expected,
                                            kFwdRtol, kFwdAtol));
              return;
            }
            const Vec c0 = RandomVec({m, n}, 7);
            for (size_t i = 0; i < c0.size(); ++i) expected[i] += c0[i];
            Tensor c = On(d, c0, {m, n});
            ASSERT_TRUE(BackendFor(d).MatMul(On(d, a, as), ta, On(d, b, bs), tb, true, &c).ok());
            EXPECT_TRUE(testing::AllClose(c.ToFloatVector(), expected, kFwdRtol, kFwdAtol));
          }};
}

// Forward only: Linear's backward is MatMul.
Row LinearRow(std::string name, int64_t batch, int64_t in, int64_t out, bool bias) {
  return {name, [=](Device d) {
            const Vec x = RandomVec({batch, in}, 8), w = RandomVec({out, in}, 9), b = RandomVec({out}, 10);
            Vec expected = RefMatMul(x, false, w, true, batch, in, out);
            if (bias) {
              for (int64_t i = 0; i < batch * out; ++i) expected[i] += b[i % out];
            }
            const Tensor y = ops::Linear(On(d, x, {batch, in}), On(d, w, {out, in}), bias ? On(d, b, {out}) : Tensor());
            EXPECT_TRUE(testing::AllClose(y.ToFloatVector(), expected, kFwdRtol, kFwdAtol));
          }};
}

Row Pool2dRow(std::string name, Shape xs, Pool2dParams p) {
  return {name, [=](Device d) {
            const Shape ys{xs[0], xs[1], OutDim(xs[2], p.kernel_h, p.stride_h, p.pad_h, 1),
                           OutDim(xs[3], p.kernel_w, p.stride_w, p.pad_w, 1)};
            EXPECT_EQ(ops::Pool2dOutputShape(xs, p), ys);
            const std::vector<Vec> in = {p.kind == PoolKind::kMax ? DistinctVec(xs, 11) : RandomVec(xs, 11)};
            const ForwardFn fwd = [=](const std::vector<Vec>& v) {
              return ops::Pool2d(On(d, v[0], xs), p).y.ToFloatVector();
            };
            EXPECT_TRUE(testing::AllClose(fwd(in), RefPool2d(in[0], xs, p, ys), kFwdRtol, kFwdAtol));
            const Vec r = RandomVec(ys, 12);
            const Tensor x = On(d, in[0], xs);
            const ops::PoolResult res = ops::Pool2d(x, p);
            const Tensor dx = ops::Pool2dBackward(x, On(d, r, ys), res.workspace, p);
            ExpectMatchesFiniteDiff("dx", fwd, in, 0, r, dx.ToFloatVector());
          }};
}

// One LSTM layer, straight from the equations of op_params.h (gates i, f, g, o; zero initial state).
// x [N, T, I], w_ih [4H, I], w_hh [4H, H], b [4H] -> every step's h [N, T, H], or the last one [N, H].
Vec RefLstm(const Vec& x, const Vec& w_ih, const Vec& w_hh, const Vec& b, int64_t n_, int64_t t_, int64_t i_,
            int64_t h_, bool sequences) {
  Vec out;
  for (int64_t n = 0; n < n_; ++n) {
    std::vector<double> h(static_cast<size_t>(h_), 0.0), c(static_cast<size_t>(h_), 0.0);
    for (int64_t t = 0; t < t_; ++t) {
      std::vector<double> gate(static_cast<size_t>(4 * h_));
      for (int64_t r = 0; r < 4 * h_; ++r) {
        double acc = b[r];
        for (int64_t k = 0; k < i_; ++k) acc += static_cast<double>(w_ih[r * i_ + k]) * x[(n * t_ + t) * i_ + k];
        for (int64_t k = 0; k < h_; ++k) acc += static_cast<double>(w_hh[r * h_ + k]) * h[k];
        gate[r] = acc;
      }
      const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
      for (int64_t k = 0; k < h_; ++k) {
        const double ig = sig(gate[k]), fg = sig(gate[h_ + k]), gg = std::tanh(gate[2 * h_ + k]),
                     og = sig(gate[3 * h_ + k]);
        c[k] = fg * c[k] + ig * gg;
        h[k] = og * std::tanh(c[k]);
        if (sequences) out.push_back(static_cast<float>(h[k]));
      }
    }
    if (!sequences) {
      for (double v : h) out.push_back(static_cast<float>(v));
    }
  }
  return out;
}

// One GRU layer from the equations of op_params.h (gates r, z, n; b = [b_ih | b_hh]; zero initial state).
Vec RefGru(const Vec& x, const Vec& w_ih, const Vec& w_hh, const Vec& b, int64_t n_, int64_t t_, int64_t i_,
           int64_t h_, bool sequences) {
  Vec out;
  const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t n = 0; n < n_; ++n) {
    std::vector<double> h(static_cast<size_t>(h_), 0.0);
    for (int64_t t = 0; t < t_; ++t) {
      std::vector<double> gx(static_cast<size_t>(3 * h_)), gh(static_cast<size_t>(3 * h_));
      for (int64_t r = 0; r < 3 * h_; ++r) {
        double ax = b[r], ah = b[3 * h_ + r];
        for (int64_t k = 0; k < i_; ++k) ax += static_cast<double>(w_ih[r * i_ + k]) * x[(n * t_ + t) * i_ + k];
        for (int64_t k = 0; k < h_; ++k) ah += static_cast<double>(w_hh[r * h_ + k]) * h[k];
        gx[r] = ax;
        gh[r] = ah;
      }
      for (int64_t k = 0; k < h_; ++k) {
        const double rg = sig(gx[k] + gh[k]), zg = sig(gx[h_ + k] + gh[h_ + k]);
        const double ng = std::tanh(gx[2 * h_ + k] + rg * gh[2 * h_ + k]);
        h[k] = (1 - zg) * ng + zg * h[k];
        if (sequences) out.push_back(static_cast<float>(h[k]));
      }
    }
    if (!sequences) {
      for (double v : h) out.push_back(static_cast<float>(v));
    }
  }
  return out;
}

// Forward (training and inference) against RefLstm / RefGru; the backward of x, w_ih, w_hh and b against finite
// differences.
Row RnnRow(std::string name, RnnCell cell, int64_t n, int64_t t, int64_t i, int64_t h, bool sequences) {
  return {name, [=](Device d) {
            const int64_t g = RnnGates(cell);
            const Shape xs{n, t, i}, wis{g * h, i}, whs{g * h, h}, bs{RnnBiasBlocks(cell) * h};
            const Shape ys = sequences ? Shape{n, t, h} : Shape{n, h};
            const std::vector<Vec> in = {RandomVec(xs, 40), RandomVec(wis, 41, -0.6f, 0.6f),
                                         RandomVec(whs, 42, -0.6f, 0.6f), RandomVec(bs, 43, -0.5f, 0.5f)};
            RnnParams p;
            p.cell = cell;
            p.sequences = sequences;
            const auto run = [=](const std::vector<Vec>& v, bool training) {
              return ops::Rnn(On(d, v[0], xs), On(d, v[1], wis), On(d, v[2], whs), On(d, v[3], bs), p, training);
            };
            const ForwardFn fwd = [=](const std::vector<Vec>& v) { return run(v, false).y.ToFloatVector(); };
            const Vec want = cell == RnnCell::kLstm ? RefLstm(in[0], in[1], in[2], in[3], n, t, i, h, sequences)
                                                    : RefGru(in[0], in[1], in[2], in[3], n, t, i, h, sequences);
            EXPECT_TRUE(testing::AllClose(fwd(in), want, kFwdRtol, kFwdAtol)) << "inference";
            const ops::RnnResult res = run(in, true);
            EXPECT_TRUE(testing::AllClose(res.y.ToFloatVector(), want, kFwdRtol, kFwdAtol)) << "training";
            const Vec r = RandomVec(ys, 44);
            const ops::RnnGrads gr = ops::RnnBackward(On(d, in[0], xs), On(d, in[1], wis), On(d, in[2], whs),
                                                      On(d, in[3], bs), On(d, r, ys), res.workspace, p);
            ExpectMatchesFiniteDiff("dx", fwd, in, 0, r, gr.dx.ToFloatVector());
            ExpectMatchesFiniteDiff("dw_ih", fwd, in, 1, r, gr.dw_ih.ToFloatVector());
            ExpectMatchesFiniteDiff("dw_hh", fwd, in, 2, r, gr.dw_hh.ToFloatVector());
            ExpectMatchesFiniteDiff("db", fwd, in, 3, r, gr.db.ToFloatVector());
          }};
}

Row BatchNormTrainingRow(std::string name, Shape xs) {
  return {
      name, [=](Device d) {
        const Shape cs{xs[1]};
        const BatchNormParams p;
        const std::vector<Vec> in = {RandomVec(xs, 13, -1.0f, 2.0f), RandomVec(cs, 14, 0.5f, 1.5f), RandomVec(cs, 15)};
        const Vec rm0 = RandomVec(cs, 16), rv0 = RandomVec(cs, 17, 0.5f, 1.5f);
        const ForwardFn fwd = [=](const std::vector<Vec>& v) {
          Tensor rm = On(d, rm0, cs), rv = On(d, rv0, cs);
          return ops::BatchNormTraining(On(d, v[0], xs), On(d, v[1], cs), On(d, v[2], cs), &rm, &rv, p)
              .y.ToFloatVector();
        };
        const RefBn ref = RefBatchNorm(in[0], xs, in[1], in[2], p.eps);
        const Tensor x = On(d, in[0], xs), gamma = On(d, in[1], cs);
        Tensor rm = On(d, rm0, cs), rv = On(d, rv0, cs);
        const ops::BatchNormResult res = ops::BatchNormTraining(x, gamma, On(d, in[2], cs), &rm, &rv, p);
        EXPECT_TRUE(testing::AllClose(res.y.ToFloatVector(), ref.y, kFwdRtol, 1e-4f)) << "y";
        EXPECT_TRUE(testing::AllClose(res.save_mean.ToFloatVector(), ref.mean, kFwdRtol, kFwdAtol)) << "mean";
        EXPECT_TRUE(testing::AllClose(res.save_var.ToFloatVector(), ref.var, kFwdRtol, kFwdAtol)) << "var";
        // Running stats: PyTorch convention, unbiased batch variance.
        const double count = static_cast<double>(xs.numel() / xs[1]);
        Vec want_rm(rm0.size()), want_rv(rv0.size());
        for (size_t c = 0; c < rm0.size(); ++c) {
          want_rm[c] = (1 - p.momentum) * rm0[c] + p.momentum * ref.mean[c];
          want_rv[c] = static_cast<float>((1 - p.momentum) * rv0[c] + p.momentum * ref.var[c] * count / (count - 1));
        }
        EXPECT_TRUE(testing::AllClose(rm.ToFloatVector(), want_rm, kFwdRtol, kFwdAtol)) << "running_mean";
        EXPECT_TRUE(testing::AllClose(rv.ToFloatVector(), want_rv, kFwdRtol, kFwdAtol)) << "running_var";

        const Vec r = RandomVec(xs, 18);
        const ops::BatchNormGrads g = ops::BatchNormBackward(x, gamma, res.save_mean, res.save_var, On(d, r, xs), p);
        ExpectMatchesFiniteDiff("dx", fwd, in, 0, r, g.dx.ToFloatVector());
        ExpectMatchesFiniteDiff("dgamma", fwd, in, 1, r, g.dgamma.ToFloatVector());
        ExpectMatchesFiniteDiff("dbeta", fwd, in, 2, r, g.dbeta.ToFloatVector());
      }};
}

// Forward only: inference has no backward of its own (autograd treats it as an affine map).
Row BatchNormInferenceRow(std::string name, Shape xs) {
  return {name, [=](Device d) {
            const Shape cs{xs[1]};
            const BatchNormParams p;
            const Vec x = RandomVec(xs, 19), gamma = RandomVec(cs, 20), beta = RandomVec(cs, 21);
            const Vec rm = RandomVec(cs, 22), rv = RandomVec(cs, 23, 0.5f, 1.5f);
            const Tensor y = ops::BatchNormInference(On(d, x, xs), On(d, gamma, cs), On(d, beta, cs), On(d, rm, cs),
                                                     On(d, rv, cs), p);
            EXPECT_TRUE(testing::AllClose(y.ToFloatVector(), RefBatchNorm(x, xs, gamma, beta, p.eps, &rm, &rv).y,
                                          kFwdRtol, kFwdAtol));
          }};
}

Row ActivationRow(std::string name, ActivationKind k, Shape xs) {
  return {name, [=](Device d) {
            Vec x = RandomVec(xs, 24, -3.0f, 3.0f);
            for (float& v : x) {
              if (std::fabs(v) < 0.05f) v = v < 0 ? -0.05f : 0.05f;  // away from relu's kink
            }
            const std::vector<Vec> in = {x};
            const ForwardFn fwd = [=](const std::vector<Vec>& v) {
              return ops::Activation(k, On(d, v[0], xs)).ToFloatVector();
            };
            Vec expected(x.size());
            for (size_t i = 0; i < x.size(); ++i) expected[i] = static_cast<float>(RefActivation(k, x[i]));
            const Tensor xt = On(d, x, xs);
            const Tensor y = ops::Activation(k, xt);
            EXPECT_TRUE(testing::AllClose(y.ToFloatVector(), expected, kFwdRtol, kFwdAtol));
            const Vec r = RandomVec(xs, 25);
            ExpectMatchesFiniteDiff("dx", fwd, in, 0, r,
                                    ops::ActivationBackward(k, xt, y, On(d, r, xs)).ToFloatVector());
          }};
}

Row SoftmaxRow(std::string name, bool log, int64_t rows, int64_t cols, float scale) {
  return {name, [=](Device d) {
            const Shape xs{rows, cols};
            const std::vector<Vec> in = {RandomVec(xs, 26, -scale, scale)};
            const ForwardFn fwd = [=](const std::vector<Vec>& v) {
              const Tensor x = On(d, v[0], xs);
              return (log ? ops::LogSoftmax(x) : ops::Softmax(x)).ToFloatVector();
            };
            const Vec y = fwd(in);
            EXPECT_TRUE(testing::AllClose(y, RefSoftmax(log, in[0], rows, cols), kFwdRtol, kFwdAtol));
            const Vec r = RandomVec(xs, 27);
            ExpectMatchesFiniteDiff("dx", fwd, in, 0, r,
                                    ops::SoftmaxBackward(log, On(d, y, xs), On(d, r, xs)).ToFloatVector());
          }};
}

// Forward against RefEmbedding; the row-sparse backward (rows: the distinct indices, sorted) densified here and
// compared with finite differences of the forward over the table.
Row EmbeddingRow(std::string name, int64_t v, int64_t d, Shape is, std::vector<int64_t> idx) {
  return {name, [=](Device dev) {
            const Shape ts{v, d};
            const Tensor indices = Tensor::FromVectorI64(idx, is, dev);
            const std::vector<Vec> in = {RandomVec(ts, 60)};
            const ForwardFn fwd = [=](const std::vector<Vec>& t) {
              Result<Tensor> y = ops::EmbeddingLookup(On(dev, t[0], ts), indices);
              EXPECT_TRUE(y.ok()) << y.status().ToString();
              return y.ok() ? y->ToFloatVector() : Vec();
            };
            EXPECT_TRUE(testing::AllClose(fwd(in), RefEmbedding(in[0], d, idx), 0.0f, 0.0f));
            std::vector<int64_t> ys = is.dims();
            ys.push_back(d);
            const Vec r = RandomVec(Shape(ys), 61);
            Result<RowSparseTensor> g = ops::EmbeddingBackward(On(dev, r, Shape(ys)), indices, v);
            ASSERT_TRUE(g.ok()) << g.status().ToString();
            std::vector<int64_t> want_rows = idx;
            std::sort(want_rows.begin(), want_rows.end());
            want_rows.erase(std::unique(want_rows.begin(), want_rows.end()), want_rows.end());
            EXPECT_EQ(g->rows, want_rows);
            EXPECT_EQ(g->num_rows, v);
            const Vec values = g->values.ToFloatVector();
            ASSERT_EQ(values.size(), want_rows.size() * static_cast<size_t>(d));
            Vec dense(static_cast<size_t>(v * d), 0.0f);
            for (size_t k = 0; k < want_rows.size(); ++k)
              for (int64_t c = 0; c < d; ++c) dense[want_rows[k] * d + c] = values[k * d + c];
            ExpectMatchesFiniteDiff("dtable", fwd, in, 0, r, dense);
          }};
}

// Forward against RefCropAndResize; the gradient of the features against finite differences.
Row CropAndResizeRow(std::string name, Shape xs, Vec boxes, std::vector<int64_t> image, CropAndResizeParams p) {
  return {name, [=](Device d) {
            const int64_t k = static_cast<int64_t>(image.size());
            const Tensor bt = On(d, boxes, {k, 4}), it = Tensor::FromVectorI64(image, {k}, d);
            const Shape ys{k, xs[1], p.crop_h, p.crop_w};
            const std::vector<Vec> in = {RandomVec(xs, 62)};
            const ForwardFn fwd = [=](const std::vector<Vec>& v) {
              Result<Tensor> y = ops::CropAndResize(On(d, v[0], xs), bt, it, p);
              EXPECT_TRUE(y.ok()) << y.status().ToString();
              return y.ok() ? y->ToFloatVector() : Vec();
            };
            EXPECT_TRUE(testing::AllClose(fwd(in), RefCropAndResize(in[0], xs, boxes, image, p), kFwdRtol, kFwdAtol));
            const Vec r = RandomVec(ys, 63);
            Result<Tensor> dx = ops::CropAndResizeBackward(On(d, r, ys), bt, it, xs, p);
            ASSERT_TRUE(dx.ok()) << dx.status().ToString();
            ExpectMatchesFiniteDiff("dx", fwd, in, 0, r, dx->ToFloatVector());
          }};
}

Conv2dParams Conv(int sh, int sw, int ph, int pw, int dh, int dw) { return {sh, sw, ph, pw, dh, dw}; }
CropAndResizeParams Crop(int h, int w, float extrapolation = 0.0f) { return {h, w, extrapolation}; }
Pool2dParams Pool(PoolKind k, int kh, int kw, int sh, int sw, int ph, int pw) { return {k, kh, kw, sh, sw, ph, pw}; }

std::vector<Row> Rows() {
  using A = ActivationKind;
  const PoolKind kMax = PoolKind::kMax, kAvg = PoolKind::kAvg;
  return {
      Conv2dRow("conv2d_5x5_c1", {2, 1, 12, 12}, {4, 1, 5, 5}, Conv(1, 1, 0, 0, 1, 1), true),
      Conv2dRow("conv2d_3x3_pad1", {2, 3, 7, 7}, {4, 3, 3, 3}, Conv(1, 1, 1, 1, 1, 1), true),
      Conv2dRow("conv2d_3x3_s2_pad1_floor", {2, 3, 8, 8}, {4, 3, 3, 3}, Conv(2, 2, 1, 1, 1, 1), true),
      Conv2dRow("conv2d_3x3_dil2_pad2_nobias", {1, 2, 9, 9}, {3, 2, 3, 3}, Conv(1, 1, 2, 2, 2, 2), false),
      Conv2dRow("conv2d_rect_mixed", {2, 2, 9, 8}, {3, 2, 3, 2}, Conv(2, 1, 0, 1, 1, 2), true),
      Conv2dRow("conv2d_1x1_nobias", {2, 5, 4, 4}, {3, 5, 1, 1}, Conv(1, 1, 0, 0, 1, 1), false),
      Conv2dRow("conv2d_3x3_c16_oc32_blocked", {2, 16, 6, 6}, {32, 16, 3, 3}, Conv(1, 1, 1, 1, 1, 1), true),
      MatMulRow("matmul_nn", 5, 7, 3, false, false, false),
      MatMulRow("matmul_tn", 5, 7, 3, true, false, false),
      MatMulRow("matmul_nt", 5, 7, 3, false, true, false),
      MatMulRow("matmul_tt", 5, 7, 3, true, true, false),
      MatMulRow("matmul_nn_accumulate", 4, 6, 5, false, false, true),
      MatMulRow("matmul_tt_accumulate", 4, 6, 5, true, true, true),
      LinearRow("linear_bias", 6, 9, 4, true),
      LinearRow("linear_nobias", 6, 9, 4, false),
      Pool2dRow("maxpool_2x2_s2", {2, 3, 6, 6}, Pool(kMax, 2, 2, 2, 2, 0, 0)),
      Pool2dRow("maxpool_3x3_s2_pad1", {2, 2, 7, 7}, Pool(kMax, 3, 3, 2, 2, 1, 1)),
      Pool2dRow("maxpool_3x2_s1x2_floor", {1, 2, 6, 7}, Pool(kMax, 3, 2, 1, 2, 0, 0)),
      Pool2dRow("avgpool_2x2_s2", {2, 3, 6, 6}, Pool(kAvg, 2, 2, 2, 2, 0, 0)),
      Pool2dRow("avgpool_3x3_s2_pad1_exclude", {2, 2, 7, 7}, Pool(kAvg, 3, 3, 2, 2, 1, 1)),
      Pool2dRow("avgpool_3x3_s1_pad1_exclude", {1, 2, 5, 5}, Pool(kAvg, 3, 3, 1, 1, 1, 1)),
      BatchNormTrainingRow("batchnorm_train_4d", {3, 4, 3, 3}),
      BatchNormTrainingRow("batchnorm_train_2d", {8, 5}),
      BatchNormInferenceRow("batchnorm_infer_4d", {3, 4, 3, 3}),
      BatchNormInferenceRow("batchnorm_infer_2d", {8, 5}),
      ActivationRow("relu", A::kRelu, {3, 5, 4}),
      ActivationRow("tanh", A::kTanh, {3, 5, 4}),
      ActivationRow("sigmoid", A::kSigmoid, {3, 5, 4}),
      ActivationRow("gelu", A::kGelu, {3, 5, 4}),
      RnnRow("lstm_sequences", RnnCell::kLstm, 2, 4, 3, 5, true),
      RnnRow("lstm_last_step", RnnCell::kLstm, 3, 5, 4, 3, false),
      RnnRow("lstm_one_step", RnnCell::kLstm, 2, 1, 2, 4, true),
      RnnRow("lstm_wide_input", RnnCell::kLstm, 2, 3, 17, 8, false),
      RnnRow("gru_sequences", RnnCell::kGru, 2, 4, 3, 5, true),
      RnnRow("gru_last_step", RnnCell::kGru, 3, 5, 4, 3, false),
      RnnRow("gru_one_step", RnnCell::kGru, 2, 1, 2, 4, true),
      RnnRow("gru_wide_input", RnnCell::kGru, 2, 3, 17, 8, false),
      SoftmaxRow("softmax", false, 4, 7, 2.0f),
      SoftmaxRow("logsoftmax", true, 4, 7, 2.0f),
      SoftmaxRow("softmax_large_logits", false, 3, 6, 40.0f),
      SoftmaxRow("logsoftmax_large_logits", true, 3, 6, 40.0f),
      EmbeddingRow("embedding_1d_duplicates", 7, 3, {6}, {4, 0, 4, 6, 2, 4}),
      EmbeddingRow("embedding_2d_batch_time", 9, 5, {2, 3}, {8, 1, 1, 0, 8, 3}),
      EmbeddingRow("embedding_one_row", 4, 16, {5}, {2, 2, 2, 2, 2}),
      // Boxes: inside, the whole image (samples on the border pixels), reaching past the top and bottom (some
      // rows extrapolated), flipped in both axes, and a degenerate point box.
      CropAndResizeRow("crop_and_resize_4x3", {2, 3, 5, 6},
                       {0.1f, 0.2f, 0.8f, 0.9f, 0.0f, 0.0f, 1.0f, 1.0f, -0.25f, 0.3f, 1.25f, 0.6f, 0.9f, 0.7f, 0.2f,
                        0.1f, 0.4f, 0.35f, 0.4f, 0.35f},
                       {1, 0, 1, 0, 1}, Crop(4, 3)),
      CropAndResizeRow("crop_and_resize_1x1_centre_extrapolate", {1, 2, 4, 4},
                       {0.2f, 0.3f, 0.7f, 0.6f, 1.5f, 0.5f, 2.0f, 0.5f}, {0, 0}, Crop(1, 1, -2.0f)),
      CropAndResizeRow("crop_and_resize_7x7_roi", {2, 4, 9, 8},
                       {0.05f, 0.1f, 0.6f, 0.45f, 0.3f, 0.25f, 0.95f, 0.9f, 0.5f, -0.2f, 1.05f, 0.7f}, {0, 1, 1},
                       Crop(7, 7)),
  };
}

std::string DeviceName(Device d) {
  std::string s = d.ToString();
  std::replace(s.begin(), s.end(), ':', '_');
  return s;
}

class BackendConformanceTest : public ::testing::TestWithParam<std::tuple<Device, Row>> {};

TEST_P(BackendConformanceTest, ForwardMatchesReferenceAndBackwardMatchesFiniteDiff) {
  const auto& [device, row] = GetParam();
  row.run(device);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, BackendConformanceTest,
                         ::testing::Combine(::testing::ValuesIn(AvailableDevices()), ::testing::ValuesIn(Rows())),
                         [](const ::testing::TestParamInfo<std::tuple<Device, Row>>& info) {
                           return DeviceName(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
                         });

// The backend is shared by all threads (backend.h): one cached primitive executed from several threads at once
// must give the single-threaded answer.
class BackendConcurrencyTest : public ::testing::TestWithParam<Device> {};

TEST_P(BackendConcurrencyTest, ConcurrentConvCallsAgree) {
  const Device d = GetParam();
  const Shape xs{8, 4, 12, 12}, ws{8, 4, 5, 5};
  const Tensor x = On(d, RandomVec(xs, 30), xs), w = On(d, RandomVec(ws, 31), ws);
  const Conv2dParams p;
  const Vec want = ops::Conv2d(x, w, Tensor(), p).ToFloatVector();
  constexpr int kThreads = 4, kIters = 25;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        // Not bit-equality: a library may split work differently per call; a race gives garbage, not 1e-5.
        if (!testing::AllClose(ops::Conv2d(x, w, Tensor(), p).ToFloatVector(), want, 1e-5f, 1e-6f)) ++bad[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(std::accumulate(bad.begin(), bad.end(), 0), 0);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, BackendConcurrencyTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) { return DeviceName(info.param); });

}  // namespace
}  // namespace geomx
