// CpuBackend::Conv2d{Forward,BackwardData,BackwardFilter} on oneDNN convolution primitives, cached by shape.
//
// All memory is the tensors' own plain NCHW / OIHW / [O] layout (zero copies). The backward primitives need a
// forward primitive_desc as a "hint"; it is built inside the cache factory, so only once per shape.
#include <cstdint>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/onednn_context.h"

namespace geomx {

namespace {

using conv_fwd = dnnl::convolution_forward;
using conv_bwd_data = dnnl::convolution_backward_data;
using conv_bwd_filter = dnnl::convolution_backward_weights;

// Everything a convolution descriptor needs, derived once from the shapes and params.
struct ConvGeometry {
  Shape x, w, y;
  dnnl::memory::desc x_md, w_md, b_md, y_md;
  dnnl::memory::dims strides, dilates, pad_l, pad_r;

  ConvGeometry(const Conv2dParams& p, const Shape& x_shape, const Shape& w_shape, const Shape& y_shape)
      : x(x_shape), w(w_shape), y(y_shape) {
    x_md = OneDnnPlainDesc(x);
    w_md = OneDnnPlainDesc(w);
    b_md = OneDnnPlainDesc({w.dim(0)});
    y_md = OneDnnPlainDesc(y);
    strides = {p.stride_h, p.stride_w};
    dilates = {p.dilation_h - 1, p.dilation_w - 1};  // oneDNN counts dilation from 0
    pad_l = {p.pad_h, p.pad_w};
    // Symmetric: oneDNN checks (in + pad_l + pad_r - extent) / stride + 1 == out with floor division, which is
    // exactly how ops::Conv2dOutputShape computes `out`; unused trailing rows/cols are never read.
    pad_r = {p.pad_h, p.pad_w};
  }

  OneDnnKey Key(OneDnnOp op, const Conv2dParams& p, bool with_bias) const {
    OneDnnKey key(op);
    key.Add(x).Add(w).Add(y).Add(with_bias);
    key.Add(p.stride_h).Add(p.stride_w).Add(p.pad_h).Add(p.pad_w).Add(p.dilation_h).Add(p.dilation_w);
    return key;
  }

  conv_fwd::primitive_desc ForwardPd(const dnnl::engine& eng, bool with_bias) const {
    const auto prop = dnnl::prop_kind::forward_training;
    const auto algo = dnnl::algorithm::convolution_direct;
    conv_fwd::desc d = with_bias
                           ? conv_fwd::desc(prop, algo, x_md, w_md, b_md, y_md, strides, dilates, pad_l, pad_r)
                           : conv_fwd::desc(prop, algo, x_md, w_md, y_md, strides, dilates, pad_l, pad_r);
    return conv_fwd::primitive_desc(d, OneDnnDefaultAttr(), eng);
  }
};

}  // namespace

Status CpuBackend::Conv2dForward(const Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor* b,
                                 Tensor* y) {
  const ConvGeometry g(p, x.shape(), w.shape(), y->shape());
  const bool with_bias = b != nullptr;
  GEOMX_ASSIGN_OR_RETURN(
      OneDnnPrimitive prim,
      dnn_->GetOrCreate("Conv2dForward", g.Key(OneDnnOp::kConvForward, p, with_bias),
                        [&] { return MakeOneDnnPrimitive<conv_fwd>(g.ForwardPd(dnn_->engine(), with_bias)); }));
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnn_->Wrap(x, g.x_md)},
                                                {DNNL_ARG_WEIGHTS, dnn_->Wrap(w, g.w_md)},
                                                {DNNL_ARG_DST, dnn_->Wrap(*y, g.y_md)}};
  if (with_bias) args.emplace(DNNL_ARG_BIAS, dnn_->Wrap(*b, g.b_md));
  return dnn_->Execute("Conv2dForward", prim, std::move(args));
}

Status CpuBackend::Conv2dBackwardData(const Conv2dParams& p, const Tensor& dy, const Tensor& w, Tensor* dx) {
  const ConvGeometry g(p, dx->shape(), w.shape(), dy.shape());
  GEOMX_ASSIGN_OR_RETURN(
      OneDnnPrimitive prim,
      dnn_->GetOrCreate("Conv2dBackwardData", g.Key(OneDnnOp::kConvBackwardData, p, false), [&] {
        conv_bwd_data::desc d(dnnl::algorithm::convolution_direct, g.x_md, g.w_md, g.y_md, g.strides, g.dilates,
                              g.pad_l, g.pad_r);
        conv_bwd_data::primitive_desc pd(d, OneDnnDefaultAttr(), dnn_->engine(),
                                         g.ForwardPd(dnn_->engine(), /*with_bias=*/false));
        return MakeOneDnnPrimitive<conv_bwd_data>(pd);
      }));
  return dnn_->Execute("Conv2dBackwardData", prim,
                       {{DNNL_ARG_DIFF_DST, dnn_->Wrap(dy, g.y_md)},
                        {DNNL_ARG_WEIGHTS, dnn_->Wrap(w, g.w_md)},
                        {DNNL_ARG_DIFF_SRC, dnn_->Wrap(*dx, g.x_md)}});
}

Status CpuBackend::Conv2dBackwardFilter(const Conv2dParams& p, const Tensor& x, const Tensor& dy, Tensor* dw,
                                        Tensor* db) {
  const ConvGeometry g(p, x.shape(), dw->shape(), dy.shape());
  const bool with_bias = db != nullptr;
  GEOMX_ASSIGN_OR_RETURN(
      OneDnnPrimitive prim,
      dnn_->GetOrCreate("Conv2dBackwardFilter", g.Key(OneDnnOp::kConvBackwardFilter, p, with_bias), [&] {
        const auto algo = dnnl::algorithm::convolution_direct;
        conv_bwd_filter::desc d =
            with_bias ? conv_bwd_filter::desc(algo, g.x_md, g.w_md, g.b_md, g.y_md, g.strides, g.dilates, g.pad_l,
                                              g.pad_r)
                      : conv_bwd_filter::desc(algo, g.x_md, g.w_md, g.y_md, g.strides, g.dilates, g.pad_l, g.pad_r);
        conv_bwd_filter::primitive_desc pd(d, OneDnnDefaultAttr(), dnn_->engine(),
                                           g.ForwardPd(dnn_->engine(), with_bias));
        return MakeOneDnnPrimitive<conv_bwd_filter>(pd);
      }));
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnn_->Wrap(x, g.x_md)},
                                                {DNNL_ARG_DIFF_DST, dnn_->Wrap(dy, g.y_md)},
                                                {DNNL_ARG_DIFF_WEIGHTS, dnn_->Wrap(*dw, g.w_md)}};
  if (with_bias) args.emplace(DNNL_ARG_DIFF_BIAS, dnn_->Wrap(*db, g.b_md));
  return dnn_->Execute("Conv2dBackwardFilter", prim, std::move(args));
}

}  // namespace geomx
