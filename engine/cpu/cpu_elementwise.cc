// CpuBackend's elementwise ops, reductions, fused losses and optimizer updates: simple loops over the functors in
// engine/kernels/ (the math lives there, once for every device). Large ranges are split over the OpenMP thread
// pool that oneDNN already owns, so the elementwise ops never oversubscribe the cores the dense ops use.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/parallel_for.h"
#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/elementwise.h"
#include "engine/kernels/online_update.h"
#include "engine/kernels/optimizer_update.h"

namespace geomx {

namespace {

using kernels::SumReduce;
using kernels::MaxReduce;

using cpu::kGrain;
using cpu::ParallelFor;

const float* F32(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
float* F32(Tensor* t) { return static_cast<float*>(t->raw_data()); }

template <typename Fn>
void BinaryLoop(Fn fn, const Tensor& a, const Tensor& b, Tensor* out) {
  const float* pa = F32(a);
  const float* pb = F32(b);
  float* po = F32(out);
  const int64_t n = a.numel();
  if (b.shape() == a.shape()) {
    ParallelFor(n, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = fn(pa[i], pb[i]);
    });
  } else if (b.numel() == 1) {
    const float bv = pb[0];
    ParallelFor(n, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = fn(pa[i], bv);
    });
  } else {  // b is [C], broadcast over the last dimension of a
    const int64_t c = b.numel();
    const int64_t rows = c == 0 ? 0 : n / c;
    ParallelFor(rows, c, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* ra = pa + r * c;
        float* ro = po + r * c;
        for (int64_t j = 0; j < c; ++j) ro[j] = fn(ra[j], pb[j]);
      }
    });
  }
}

template <typename Fn>
void UnaryLoop(Fn fn, const Tensor& x, Tensor* out, int64_t cost = 1) {
  const float* px = F32(x);
  float* po = F32(out);
  ParallelFor(x.numel(), cost, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = fn(px[i]);
  });
}

// Reduces n contiguous floats with 8 independent lanes (vectorisable). Sums accumulate in double: a float
// accumulator adding millions of similar values drifts by parts per million, and the loop is memory-bound
// anyway. The float/double split lives here, not in the functors, because it is an accuracy choice of this loop.
template <typename R>
float ReduceContiguous(R r, const float* x, int64_t n) {
  constexpr int kLanes = 8;
  using Acc = std::conditional_t<std::is_same_v<R, SumReduce>, double, float>;
  Acc lanes[kLanes];
  for (Acc& l : lanes) l = R::Init();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      if constexpr (std::is_same_v<Acc, double>) {
        lanes[j] += static_cast<double>(x[i + j]);
      } else {
        lanes[j] = r(lanes[j], x[i + j]);
      }
    }
  }
  Acc acc = R::Init();
  for (; i < n; ++i) {
    if constexpr (std::is_same_v<Acc, double>) {
      acc += static_cast<double>(x[i]);
    } else {
      acc = r(acc, x[i]);
    }
  }
  for (Acc l : lanes) {
    if constexpr (std::is_same_v<Acc, double>) {
      acc += l;
    } else {
      acc = r(acc, l);
    }
  }
  return static_cast<float>(acc);
}

// x viewed as [outer, red, inner] -> out [outer, inner].
template <typename R>
void ReduceLoop(R r, const float* x, int64_t outer, int64_t red, int64_t inner, float scale, float* out) {
  if (inner == 1) {
    if (outer == 1) {
      // One long row: partial results per thread, combined serially.
      constexpr int kMaxParts = 256;
      float parts[kMaxParts];
      const int64_t nparts = std::min<int64_t>(kMaxParts, std::max<int64_t>(1, red / kGrain));
      ParallelFor(nparts, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) {
          const int64_t b0 = red * p / nparts, b1 = red * (p + 1) / nparts;
          parts[p] = ReduceContiguous(r, x + b0, b1 - b0);
        }
      });
      double acc = R::Init();
      for (int64_t p = 0; p < nparts; ++p) {
        acc = std::is_same_v<R, SumReduce> ? acc + parts[p] : r(static_cast<float>(acc), parts[p]);
      }
      out[0] = static_cast<float>(acc) * scale;
      return;
    }
    ParallelFor(outer, red, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) out[o] = ReduceContiguous(r, x + o * red, red) * scale;
    });
    return;
  }
  // Rows of `inner` contiguous values are combined elementwise, row after row in memory order (vectorises over
  // inner and streams through x once).
  auto combine_rows = [&](const float* src, int64_t k0, int64_t k1, float* dst) {
    for (int64_t c = 0; c < inner; ++c) dst[c] = R::Init();
    for (int64_t k = k0; k < k1; ++k) {
      const float* row = src + k * inner;
      for (int64_t c = 0; c < inner; ++c) dst[c] = r(dst[c], row[c]);
    }
  };
  auto apply_scale = [&](float* dst, int64_t count) {
    if (scale == 1.0f) return;
    for (int64_t c = 0; c < count; ++c) dst[c] *= scale;
  };
  if (outer > 1) {
    ParallelFor(outer, red * inner, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        combine_rows(x + o * red * inner, 0, red, out + o * inner);
        apply_scale(out + o * inner, inner);
      }
    });
    return;
  }
  // A single slice (bias gradients: [N, C] -> [C]): row ranges go to threads, each into its own partial
  // result, and the partials are combined at the end.
  const int64_t nparts = std::clamp<int64_t>(red * inner / kGrain, 1, std::min<int64_t>(red, 64));
  if (nparts == 1) {
    combine_rows(x, 0, red, out);
    apply_scale(out, inner);
    return;
  }
  std::vector<float> partial(static_cast<size_t>(nparts * inner));
  ParallelFor(nparts, red * inner / nparts, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) combine_rows(x, red * p / nparts, red * (p + 1) / nparts, &partial[p * inner]);
  });
  for (int64_t c = 0; c < inner; ++c) out[c] = partial[c];
  for (int64_t p = 1; p < nparts; ++p) {
    const float* part = &partial[p * inner];
    for (int64_t c = 0; c < inner; ++c) out[c] = r(out[c], part[c]);
  }
  apply_scale(out, inner);
}

template <typename Update>
void UpdateLoop(const Update& u, const Tensor& grad, Tensor* param, const std::vector<Tensor*>& state) {
  float* w = F32(param);
  const float* g = F32(grad);
  const int64_t n = param->numel();
  if constexpr (Update::kStates == 0) {
    ParallelFor(n, 2, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) u(w[i], g[i]);
    });
  } else if constexpr (Update::kStates == 1) {
    float* s0 = F32(state[0]);
    ParallelFor(n, 4, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) u(w[i], g[i], s0[i]);
    });
  } else if constexpr (Update::kStates == 2) {
    float* s0 = F32(state[0]);
    float* s1 = F32(state[1]);
    ParallelFor(n, 8, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) u(w[i], g[i], s0[i], s1[i]);
    });
  } else {
    static_assert(Update::kStates == 3, "an update rule has at most 3 state slots");
    float* s0 = F32(state[0]);
    float* s1 = F32(state[1]);
    float* s2 = F32(state[2]);
    ParallelFor(n, 10, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) u(w[i], g[i], s0[i], s1[i], s2[i]);
    });
  }
}

// kInvalidArgument naming the first label outside [0, c).
Status CheckLabels(const char* op, const Tensor& labels, int64_t c) {
  const int64_t* lab = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    if (lab[i] < 0 || lab[i] >= c) {
      return Status::InvalidArgument(std::string(op) + ": label " + std::to_string(lab[i]) + " at row " +
                                     std::to_string(i) + " is outside [0, " + std::to_string(c) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CpuBackend::Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor* out) {
  switch (op) {
    case BinaryOp::kAdd: BinaryLoop(kernels::AddFn{}, a, b, out); break;
    case BinaryOp::kSub: BinaryLoop(kernels::SubFn{}, a, b, out); break;
    case BinaryOp::kMul: BinaryLoop(kernels::MulFn{}, a, b, out); break;
    case BinaryOp::kDiv: BinaryLoop(kernels::DivFn{}, a, b, out); break;
    case BinaryOp::kMax: BinaryLoop(kernels::MaxFn{}, a, b, out); break;
    case BinaryOp::kMin: BinaryLoop(kernels::MinFn{}, a, b, out); break;
  }
  return Status::Ok();
}

Status CpuBackend::Unary(UnaryOp op, float alpha, const Tensor& x, Tensor* out) {
  switch (op) {
    case UnaryOp::kNeg: UnaryLoop(kernels::NegFn{}, x, out); break;
    case UnaryOp::kExp: UnaryLoop(kernels::ExpFn{}, x, out, 8); break;
    case UnaryOp::kLog: UnaryLoop(kernels::LogFn{}, x, out, 8); break;
    case UnaryOp::kSqrt: UnaryLoop(kernels::SqrtFn{}, x, out, 2); break;
    case UnaryOp::kAbs: UnaryLoop(kernels::AbsFn{}, x, out); break;
    case UnaryOp::kSquare: UnaryLoop(kernels::SquareFn{}, x, out); break;
    case UnaryOp::kAddScalar: UnaryLoop(kernels::AddScalarFn{alpha}, x, out); break;
    case UnaryOp::kMulScalar: UnaryLoop(kernels::MulScalarFn{alpha}, x, out); break;
    case UnaryOp::kClampMin: UnaryLoop(kernels::ClampMinFn{alpha}, x, out); break;
    case UnaryOp::kPowScalar:
      // pow() is slow and does not vectorise: the common exponents get their exact cheap equivalents.
      if (alpha == 2.0f) {
        UnaryLoop(kernels::SquareFn{}, x, out);
      } else if (alpha == 1.0f) {
        UnaryLoop(kernels::MulScalarFn{1.0f}, x, out);
      } else if (alpha == 0.5f) {
        UnaryLoop(kernels::SqrtFn{}, x, out, 2);
      } else if (alpha == -1.0f) {
        UnaryLoop(kernels::ReciprocalFn{}, x, out);
      } else {
        UnaryLoop(kernels::PowScalarFn{alpha}, x, out, 16);
      }
      break;
  }
  return Status::Ok();
}

Status CpuBackend::Reduce(ReduceOp op, const Tensor& x, int axis_begin, int axis_end, Tensor* out) {
  const Shape& s = x.shape();
  int64_t outer = 1, red = 1, inner = 1;
  for (int i = 0; i < axis_begin; ++i) outer *= s[i];
  for (int i = axis_begin; i < axis_end; ++i) red *= s[i];
  for (int i = axis_end; i < s.rank(); ++i) inner *= s[i];
  float* po = F32(out);
  if (red == 0) {  // empty reduction: the identity (sum 0, mean NaN like 0/0); ops.cc rejects empty max
    std::fill(po, po + out->numel(), op == ReduceOp::kMean ? NAN : 0.0f);
    return Status::Ok();
  }
  switch (op) {
    case ReduceOp::kSum: ReduceLoop(SumReduce{}, F32(x), outer, red, inner, 1.0f, po); break;
    case ReduceOp::kMean:
      ReduceLoop(SumReduce{}, F32(x), outer, red, inner, static_cast<float>(1.0 / static_cast<double>(red)), po);
      break;
    case ReduceOp::kMax: ReduceLoop(MaxReduce{}, F32(x), outer, red, inner, 1.0f, po); break;
  }
  return Status::Ok();
}

Status CpuBackend::Axpy(float alpha, const Tensor& x, Tensor* y) {
  const kernels::AxpyFn fn{alpha};
  const float* px = F32(x);
  float* py = F32(y);
  ParallelFor(x.numel(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) py[i] = fn(px[i], py[i]);
  });
  return Status::Ok();
}

Status CpuBackend::MaskScale(const Tensor& x, const Tensor& mask, float scale, Tensor* out) {
  const kernels::MaskScaleFn fn{scale};
  const float* px = F32(x);
  const uint8_t* pm = mask.data<uint8_t>();
  float* po = F32(out);
  ParallelFor(x.numel(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = fn(px[i], pm[i]);
  });
  return Status::Ok();
}

Status CpuBackend::SoftmaxCrossEntropyForward(const Tensor& logits, const Tensor& labels, Tensor* loss,
                                              Tensor* probs) {
  const int64_t n = logits.dim(0), c = logits.dim(1);
  GEOMX_RETURN_IF_ERROR(CheckLabels("SoftmaxCrossEntropy", labels, c));
  const float* x = F32(logits);
  const int64_t* lab = labels.data<int64_t>();
  float* l = F32(loss);
  float* p = F32(probs);
  ParallelFor(n, 4 * c, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) l[i] = kernels::SoftmaxCrossEntropyRow(x + i * c, c, lab[i], p + i * c);
  });
  return Status::Ok();
}

Status CpuBackend::SoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels, float scale,
                                               Tensor* dlogits) {
  const int64_t n = probs.dim(0), c = probs.dim(1);
  GEOMX_RETURN_IF_ERROR(CheckLabels("SoftmaxCrossEntropyBackward", labels, c));
  const float* p = F32(probs);
  const int64_t* lab = labels.data<int64_t>();
  float* d = F32(dlogits);
  ParallelFor(n, c, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) kernels::SoftmaxCrossEntropyBackwardRow(p + i * c, c, lab[i], scale, d + i * c);
  });
  return Status::Ok();
}

Status CpuBackend::ArgMax(const Tensor& x, Tensor* out) {
  const int64_t n = x.dim(0), c = x.dim(1);
  const float* px = F32(x);
  int64_t* po = out->data<int64_t>();
  ParallelFor(n, c, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float* row = px + i * c;
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j) {
        if (row[j] > row[best]) best = j;  // first maximum wins
      }
      po[i] = best;
    }
  });
  return Status::Ok();
}

Status CpuBackend::ApplyUpdate(UpdateRule rule, const UpdateHyper& h, const Tensor& grad, Tensor* param,
                               const std::vector<Tensor*>& state) {
  switch (rule) {
    case UpdateRule::kSgd: UpdateLoop(kernels::SgdUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kMomentum: UpdateLoop(kernels::MomentumUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kNesterov: UpdateLoop(kernels::NesterovUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kAdaGrad: UpdateLoop(kernels::AdaGradUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kRmsProp: UpdateLoop(kernels::RmsPropUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kAdaDelta: UpdateLoop(kernels::AdaDeltaUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kAdam: UpdateLoop(kernels::AdamUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kAdamW: UpdateLoop(kernels::AdamWUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kFtrl: UpdateLoop(kernels::FtrlUpdate::Make(h), grad, param, state); break;
    case UpdateRule::kFtml: UpdateLoop(kernels::FtmlUpdate::Make(h), grad, param, state); break;
  }
  return Status::Ok();
}

}  // namespace geomx
