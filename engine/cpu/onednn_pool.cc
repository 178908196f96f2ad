// CpuBackend::Pool2dForward / Pool2dBackward. Max pooling runs the plain loops of max_pool.h (its workspace: one
// byte per output, the winner's offset in its window); average pooling, and max pooling with a window too large
// for that workspace, run oneDNN pooling primitives, cached by shape.
//
// On the oneDNN path max pooling runs forward_training so oneDNN records the arg-max positions in a workspace; the
// workspace is handed to the caller as a u8 tensor (its bytes are oneDNN's business) and comes back to the
// backward untouched. Average pooling excludes padding from the divisor (pooling_avg_exclude_padding) and needs no
// workspace.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/max_pool.h"
#include "engine/cpu/onednn_context.h"

namespace geomx {

namespace {

using pool_fwd = dnnl::pooling_forward;
using pool_bwd = dnnl::pooling_backward;

struct PoolGeometry {
  Shape x, y;
  dnnl::memory::desc x_md, y_md;
  dnnl::memory::dims strides, kernel, pad_l, pad_r;
  dnnl::algorithm algo;

  PoolGeometry(const Pool2dParams& p, const Shape& x_shape, const Shape& y_shape) : x(x_shape), y(y_shape) {
    x_md = OneDnnPlainDesc(x);
    y_md = OneDnnPlainDesc(y);
    strides = {p.stride_h, p.stride_w};
    kernel = {p.kernel_h, p.kernel_w};
    pad_l = {p.pad_h, p.pad_w};
    pad_r = {p.pad_h, p.pad_w};  // symmetric; floor output size (see onednn_conv.cc)
    algo = p.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  }

  OneDnnKey Key(OneDnnOp op, const Pool2dParams& p) const {
    OneDnnKey key(op);
    key.Add(x).Add(y).Add(static_cast<int64_t>(p.kind));
    key.Add(p.kernel_h).Add(p.kernel_w).Add(p.stride_h).Add(p.stride_w).Add(p.pad_h).Add(p.pad_w);
    return key;
  }

  pool_fwd::primitive_desc ForwardPd(const dnnl::engine& eng) const {
    pool_fwd::desc d(dnnl::prop_kind::forward_training, algo, x_md, y_md, strides, kernel, pad_l, pad_r);
    return pool_fwd::primitive_desc(d, OneDnnDefaultAttr(), eng);
  }
};

cpu::PoolPlanes Planes(const Shape& x, const Shape& y) {
  return {.planes = x[0] * x[1], .h = x[2], .w = x[3], .oh = y[2], .ow = y[3]};
}

}  // namespace

Status CpuBackend::Pool2dForward(const Pool2dParams& p, const Tensor& x, Tensor* y, Tensor* workspace) {
  if (cpu::MaxPoolDirectApplies(p)) {
    uint8_t* argmax = nullptr;
    if (workspace != nullptr) {
      // Always a fresh tensor: the caller may still hold an earlier workspace for a pending backward.
      *workspace = Tensor::Empty(Shape{y->numel()}, DType::kU8);
      argmax = static_cast<uint8_t*>(workspace->raw_data());
    }
    cpu::MaxPoolForward(p, Planes(x.shape(), y->shape()), static_cast<const float*>(x.raw_data()),
                        static_cast<float*>(y->raw_data()), argmax);
    return Status::Ok();
  }
  const PoolGeometry g(p, x.shape(), y->shape());
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim,
                         dnn_->GetOrCreate("Pool2dForward", g.Key(OneDnnOp::kPoolForward, p),
                                           [&] { return MakeOneDnnPrimitive<pool_fwd>(g.ForwardPd(dnn_->engine())); }));
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnn_->Wrap(x, g.x_md)},
                                                {DNNL_ARG_DST, dnn_->Wrap(*y, g.y_md)}};
  const size_t ws_bytes = prim->workspace.get_size();
  Tensor scratch_ws;  // used when the caller passed no workspace slot (inference): the indices are discarded
  if (ws_bytes > 0) {
    // Always a fresh tensor: the caller may still hold an earlier workspace for a pending backward.
    Tensor ws = Tensor::Empty(Shape{static_cast<int64_t>(ws_bytes)}, DType::kU8);
    args.emplace(DNNL_ARG_WORKSPACE, dnn_->WrapRaw(ws.raw_data(), prim->workspace));
    if (workspace != nullptr) {
      *workspace = ws;
    } else {
      scratch_ws = ws;
    }
  } else if (workspace != nullptr) {
    *workspace = Tensor();
  }
  return dnn_->Execute("Pool2dForward", *prim, std::move(args));
}

Status CpuBackend::Pool2dBackward(const Pool2dParams& p, const Tensor& x, const Tensor& dy, const Tensor& workspace,
                                  Tensor* dx) {
  GEOMX_DCHECK(dx->shape() == x.shape());
  if (cpu::MaxPoolDirectApplies(p)) {
    if (!workspace.defined() || workspace.dtype() != DType::kU8 || workspace.numel() != dy.numel() ||
        !workspace.device().is_cpu()) {
      return Status::InvalidArgument("Pool2dBackward: max pooling needs the workspace from Pool2dForward (" +
                                     std::to_string(dy.numel()) + " bytes), got " +
                                     (workspace.defined() ? workspace.ToString() : std::string("none")));
    }
    cpu::MaxPoolBackward(p, Planes(x.shape(), dy.shape()), static_cast<const float*>(dy.raw_data()),
                         static_cast<const uint8_t*>(workspace.raw_data()), static_cast<float*>(dx->raw_data()));
    return Status::Ok();
  }
  const PoolGeometry g(p, x.shape(), dy.shape());
  GEOMX_ASSIGN_OR_RETURN(
      const OneDnnPrimitive* prim, dnn_->GetOrCreate("Pool2dBackward", g.Key(OneDnnOp::kPoolBackward, p), [&] {
        pool_bwd::desc d(g.algo, g.x_md, g.y_md, g.strides, g.kernel, g.pad_l, g.pad_r);
        pool_bwd::primitive_desc pd(d, OneDnnDefaultAttr(), dnn_->engine(), g.ForwardPd(dnn_->engine()));
        return MakeOneDnnPrimitive<pool_bwd>(pd);
      }));
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_DIFF_DST, dnn_->Wrap(dy, g.y_md)},
                                                {DNNL_ARG_DIFF_SRC, dnn_->Wrap(*dx, g.x_md)}};
  const size_t ws_bytes = prim->workspace.get_size();
  if (ws_bytes > 0) {
    if (!workspace.defined() || workspace.nbytes() < ws_bytes || !workspace.device().is_cpu()) {
      return Status::InvalidArgument("Pool2dBackward: max pooling needs the workspace from Pool2dForward (" +
                                     std::to_string(ws_bytes) + " bytes), got " +
                                     (workspace.defined() ? workspace.ToString() : std::string("none")));
    }
    args.emplace(DNNL_ARG_WORKSPACE, dnn_->WrapRaw(workspace.raw_data(), prim->workspace));
  }
  return dnn_->Execute("Pool2dBackward", *prim, std::move(args));
}

}  // namespace geomx
