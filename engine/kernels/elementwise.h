// Elementwise math as functors, written once for every device (docs/style.md R7): the binary ops of BinaryOp, the
// unary ops of UnaryOp (scalar operand in `alpha`), and the combine steps of the reductions. Functors are small
// value types, safe to copy into device kernels; they hold no pointers.
#pragma once

#include <cmath>
#include <limits>

#include "engine/kernels/host_device.h"

namespace geomx::kernels {

// ---- binary: out = f(a, b) ----
struct AddFn {
  GEOMX_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
};
struct SubFn {
  GEOMX_HOST_DEVICE float operator()(float a, float b) const { return a - b; }
};
struct MulFn {
  GEOMX_HOST_DEVICE float operator()(float a, float b) const { return a * b; }
};
struct DivFn {
  GEOMX_HOST_DEVICE float operator()(float a, float b) const { return a / b; }
};
// max/min return `a` when the comparison is false for both orders (NaN in b); written as selects so they
// vectorise.
struct MaxFn {
  GEOMX_HOST_DEVICE float operator()(float a, float b) const { return b > a ? b : a; }
};
struct MinFn {
  GEOMX_HOST_DEVICE float operator()(float a, float b) const { return b < a ? b : a; }
};

// ---- unary: out = f(x) ----
struct NegFn {
  GEOMX_HOST_DEVICE float operator()(float x) const { return -x; }
};
struct ExpFn {
  GEOMX_HOST_DEVICE float operator()(float x) const { return std::exp(x); }
};
struct LogFn {
  GEOMX_HOST_DEVICE float operator()(float x) const { return std::log(x); }
};
struct SqrtFn {
  GEOMX_HOST_DEVICE float operator()(float x) const { return std::sqrt(x); }
};
struct AbsFn {
  GEOMX_HOST_DEVICE float operator()(float x) const { return std::fabs(x); }
};
struct SquareFn {
  GEOMX_HOST_DEVICE float operator()(float x) const { return x * x; }
};
struct ReciprocalFn {  // PowScalar with alpha == -1, the common case, without pow()
  GEOMX_HOST_DEVICE float operator()(float x) const { return 1.0f / x; }
};
struct AddScalarFn {
  float alpha;
  GEOMX_HOST_DEVICE float operator()(float x) const { return x + alpha; }
};
struct MulScalarFn {
  float alpha;
  GEOMX_HOST_DEVICE float operator()(float x) const { return x * alpha; }
};
struct PowScalarFn {
  float alpha;
  GEOMX_HOST_DEVICE float operator()(float x) const { return std::pow(x, alpha); }
};
struct ClampMinFn {
  float alpha;
  GEOMX_HOST_DEVICE float operator()(float x) const { return x < alpha ? alpha : x; }
};

// ---- reductions: acc = Combine(acc, x), starting from Init() ----
struct SumReduce {
  GEOMX_HOST_DEVICE static float Init() { return 0.0f; }
  GEOMX_HOST_DEVICE float operator()(float acc, float x) const { return acc + x; }
};
struct MaxReduce {
  GEOMX_HOST_DEVICE static float Init() { return -std::numeric_limits<float>::infinity(); }
  GEOMX_HOST_DEVICE float operator()(float acc, float x) const { return x > acc ? x : acc; }
};

// ---- dropout: out = x * scale where the mask is set, 0 elsewhere ----
struct MaskScaleFn {
  float scale;
  GEOMX_HOST_DEVICE float operator()(float x, unsigned char keep) const { return keep ? x * scale : 0.0f; }
};

// ---- axpy: y = alpha*x + y ----
struct AxpyFn {
  float alpha;
  GEOMX_HOST_DEVICE float operator()(float x, float y) const { return alpha * x + y; }
};

}  // namespace geomx::kernels
