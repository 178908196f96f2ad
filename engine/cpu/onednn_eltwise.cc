// CpuBackend activations (eltwise primitives) and softmax / log-softmax (softmax and logsoftmax primitives) on
// oneDNN, cached by shape. Activations see any tensor as a flat [numel] vector.
#include <cstdint>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/onednn_context.h"

namespace geomx {

namespace {

using eltwise_fwd = dnnl::eltwise_forward;
using eltwise_bwd = dnnl::eltwise_backward;

// How one activation maps onto oneDNN. tanh and sigmoid differentiate from the forward output (cheaper: no
// transcendental in the backward); relu and gelu from the input.
struct ActivationAlgo {
  dnnl::algorithm forward;
  dnnl::algorithm backward;
  bool backward_uses_dst;
};

ActivationAlgo AlgoFor(ActivationKind k) {
  using a = dnnl::algorithm;
  switch (k) {
    case ActivationKind::kRelu:
      return {a::eltwise_relu, a::eltwise_relu, false};
    case ActivationKind::kTanh:
      return {a::eltwise_tanh, a::eltwise_tanh_use_dst_for_bwd, true};
    case ActivationKind::kSigmoid:
      return {a::eltwise_logistic, a::eltwise_logistic_use_dst_for_bwd, true};
    case ActivationKind::kGelu:
      return {a::eltwise_gelu_erf, a::eltwise_gelu_erf, false};
  }
  GEOMX_CHECK(false) << "unknown ActivationKind " << static_cast<int>(k);
  return {};
}

eltwise_fwd::primitive_desc EltwiseForwardPd(const dnnl::engine& eng, dnnl::algorithm algo,
                                             const dnnl::memory::desc& md) {
  // alpha = beta = 0 for all four kinds (relu's alpha is the negative slope).
  return eltwise_fwd::primitive_desc(eltwise_fwd::desc(dnnl::prop_kind::forward_training, algo, md, 0.0f, 0.0f),
                                     OneDnnDefaultAttr(), eng);
}

// softmax and logsoftmax have separate primitive types in oneDNN 2.6 with identical shapes of API; this picks one
// of the two at compile time so the cache factory is written once.
template <typename Fwd, typename Bwd>
Result<const OneDnnPrimitive*> SoftmaxPrimitive(OneDnnContext& dnn, OneDnnOp op, bool log, const dnnl::memory::desc& md,
                                                const Shape& shape) {
  OneDnnKey key(op);
  key.Add(shape).Add(log);
  constexpr int kAxis = 1;  // the last dim of [N, C]
  return dnn.GetOrCreate(op == OneDnnOp::kSoftmaxForward ? "SoftmaxForward" : "SoftmaxBackward", key, [&] {
    typename Fwd::primitive_desc fwd_pd(typename Fwd::desc(dnnl::prop_kind::forward_training, md, kAxis),
                                        OneDnnDefaultAttr(), dnn.engine());
    if (op == OneDnnOp::kSoftmaxForward) return MakeOneDnnPrimitive<Fwd>(fwd_pd);
    typename Bwd::primitive_desc bwd_pd(typename Bwd::desc(md, md, kAxis), OneDnnDefaultAttr(), dnn.engine(), fwd_pd);
    return MakeOneDnnPrimitive<Bwd>(bwd_pd);
  });
}

Result<const OneDnnPrimitive*> GetSoftmax(OneDnnContext& dnn, OneDnnOp op, bool log, const Shape& shape) {
  const auto md = OneDnnPlainDesc(shape);
  if (log) return SoftmaxPrimitive<dnnl::logsoftmax_forward, dnnl::logsoftmax_backward>(dnn, op, log, md, shape);
  return SoftmaxPrimitive<dnnl::softmax_forward, dnnl::softmax_backward>(dnn, op, log, md, shape);
}

}  // namespace

Status CpuBackend::ActivationForward(ActivationKind k, const Tensor& x, Tensor* y) {
  const ActivationAlgo algo = AlgoFor(k);
  const auto md = OneDnnPlainDesc({x.numel()});
  OneDnnKey key(OneDnnOp::kEltwiseForward);
  key.Add(x.numel()).Add(static_cast<int64_t>(k));
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, dnn_->GetOrCreate("ActivationForward", key, [&] {
    return MakeOneDnnPrimitive<eltwise_fwd>(EltwiseForwardPd(dnn_->engine(), algo.forward, md));
  }));
  return dnn_->Execute("ActivationForward", *prim,
                       {{DNNL_ARG_SRC, dnn_->Wrap(x, md)}, {DNNL_ARG_DST, dnn_->Wrap(*y, md)}});
}

Status CpuBackend::ActivationBackward(ActivationKind k, const Tensor& x, const Tensor& y, const Tensor& dy,
                                      Tensor* dx) {
  const ActivationAlgo algo = AlgoFor(k);
  const auto md = OneDnnPlainDesc({x.numel()});
  OneDnnKey key(OneDnnOp::kEltwiseBackward);
  key.Add(x.numel()).Add(static_cast<int64_t>(k));
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, dnn_->GetOrCreate("ActivationBackward", key, [&] {
    // The hint must use the backward's algorithm (the *_use_dst_for_bwd forms compute the same forward).
    eltwise_bwd::primitive_desc pd(eltwise_bwd::desc(algo.backward, md, md, 0.0f, 0.0f), OneDnnDefaultAttr(),
                                   dnn_->engine(), EltwiseForwardPd(dnn_->engine(), algo.backward, md));
    return MakeOneDnnPrimitive<eltwise_bwd>(pd);
  }));
  const int data_arg = algo.backward_uses_dst ? DNNL_ARG_DST : DNNL_ARG_SRC;
  const Tensor& data = algo.backward_uses_dst ? y : x;
  return dnn_->Execute("ActivationBackward", *prim,
                       {{data_arg, dnn_->Wrap(data, md)},
                        {DNNL_ARG_DIFF_DST, dnn_->Wrap(dy, md)},
                        {DNNL_ARG_DIFF_SRC, dnn_->Wrap(*dx, md)}});
}

Status CpuBackend::SoftmaxForward(bool log, const Tensor& x, Tensor* y) {
  GEOMX_DCHECK(x.rank() == 2);
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, GetSoftmax(*dnn_, OneDnnOp::kSoftmaxForward, log, x.shape()));
  const auto md = OneDnnPlainDesc(x.shape());
  return dnn_->Execute("SoftmaxForward", *prim,
                       {{DNNL_ARG_SRC, dnn_->Wrap(x, md)}, {DNNL_ARG_DST, dnn_->Wrap(*y, md)}});
}

Status CpuBackend::SoftmaxBackward(bool log, const Tensor& y, const Tensor& dy, Tensor* dx) {
  GEOMX_DCHECK(y.rank() == 2);
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, GetSoftmax(*dnn_, OneDnnOp::kSoftmaxBackward, log, y.shape()));
  const auto md = OneDnnPlainDesc(y.shape());
  return dnn_->Execute("SoftmaxBackward", *prim,
                       {{DNNL_ARG_DST, dnn_->Wrap(y, md)},
                        {DNNL_ARG_DIFF_DST, dnn_->Wrap(dy, md)},
                        {DNNL_ARG_DIFF_SRC, dnn_->Wrap(*dx, md)}});
}

}  // namespace geomx
