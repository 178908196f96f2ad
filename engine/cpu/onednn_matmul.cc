// CpuBackend::MatMul and LinearForward on oneDNN (matmul and inner_product primitives), cached by shape.
#include <cstdint>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/onednn_context.h"

namespace geomx {

namespace {

// A [rows, cols] f32 matrix stored row-major, or, when `transposed`, stored as its [cols, rows] transpose (the
// strides swap; no copy).
dnnl::memory::desc MatrixDesc(int64_t rows, int64_t cols, bool transposed) {
  const dnnl::memory::dims strides = transposed ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1};
  return dnnl::memory::desc({rows, cols}, dnnl::memory::data_type::f32, strides);
}

}  // namespace

Status CpuBackend::MatMul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, bool accumulate, Tensor* c) {
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  GEOMX_DCHECK((trans_b ? b.dim(1) : b.dim(0)) == k);
  GEOMX_DCHECK(c->dim(0) == m && c->dim(1) == n);

  const auto a_md = MatrixDesc(m, k, trans_a);
  const auto b_md = MatrixDesc(k, n, trans_b);
  const auto c_md = OneDnnPlainDesc({m, n});
  OneDnnKey key(OneDnnOp::kMatMul);
  key.Add(m).Add(k).Add(n).Add(trans_a).Add(trans_b).Add(accumulate);
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, dnn_->GetOrCreate("MatMul", key, [&] {
    dnnl::primitive_attr attr = OneDnnDefaultAttr();
    if (accumulate) {
      // C = A B + 1.0 * C: the sum post-op reads the destination before overwriting it.
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, dnn_->engine());
    return MakeOneDnnPrimitive<dnnl::matmul>(pd);
  }));
  return dnn_->Execute("MatMul", *prim,
                       {{DNNL_ARG_SRC, dnn_->Wrap(a, a_md)},
                        {DNNL_ARG_WEIGHTS, dnn_->Wrap(b, b_md)},
                        {DNNL_ARG_DST, dnn_->Wrap(*c, c_md)}});
}

Status CpuBackend::LinearForward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) {
  const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
  GEOMX_DCHECK(w.dim(1) == in && y->dim(0) == batch && y->dim(1) == out);

  const auto x_md = OneDnnPlainDesc({batch, in});
  const auto w_md = OneDnnPlainDesc({out, in});  // oi: y = x w^T is exactly inner_product's convention
  const auto b_md = OneDnnPlainDesc({out});
  const auto y_md = OneDnnPlainDesc({batch, out});
  const bool has_bias = b != nullptr;
  OneDnnKey key(OneDnnOp::kLinear);
  key.Add(batch).Add(in).Add(out).Add(has_bias);
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, dnn_->GetOrCreate("LinearForward", key, [&] {
    using ip = dnnl::inner_product_forward;
    const auto prop = dnnl::prop_kind::forward_training;
    ip::desc desc = has_bias ? ip::desc(prop, x_md, w_md, b_md, y_md) : ip::desc(prop, x_md, w_md, y_md);
    return MakeOneDnnPrimitive<ip>(ip::primitive_desc(desc, OneDnnDefaultAttr(), dnn_->engine()));
  }));
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnn_->Wrap(x, x_md)},
                                                {DNNL_ARG_WEIGHTS, dnn_->Wrap(w, w_md)},
                                                {DNNL_ARG_DST, dnn_->Wrap(*y, y_md)}};
  if (has_bias) args.emplace(DNNL_ARG_BIAS, dnn_->Wrap(*b, b_md));
  return dnn_->Execute("LinearForward", *prim, std::move(args));
}

}  // namespace geomx
