// CpuBackend::BatchNorm{ForwardTraining,ForwardInference,Backward} on oneDNN batch_normalization primitives,
// cached by shape and eps. A 2-D [N, C] input is viewed as [N, C, 1, 1] (same bytes), so one code path serves
// BatchNorm1d and BatchNorm2d. gamma/beta are separate [C] tensors (use_scale | use_shift).
#include <cstdint>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/onednn_context.h"

namespace geomx {

namespace {

using bn_fwd = dnnl::batch_normalization_forward;
using bn_bwd = dnnl::batch_normalization_backward;

const dnnl::normalization_flags kScaleShift =
    dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

struct BnGeometry {
  Shape data;  // always 4-D
  dnnl::memory::desc data_md, stat_md;

  explicit BnGeometry(const Shape& x) {
    data = x.rank() == 2 ? Shape{x.dim(0), x.dim(1), 1, 1} : x;
    data_md = OneDnnPlainDesc(data);
    stat_md = OneDnnPlainDesc({data.dim(1)});
  }

  OneDnnKey Key(OneDnnOp op, const BatchNormParams& p) const {
    OneDnnKey key(op);
    key.Add(data).AddFloat(p.eps);
    return key;
  }

  bn_fwd::primitive_desc TrainingPd(const dnnl::engine& eng, float eps) const {
    return bn_fwd::primitive_desc(bn_fwd::desc(dnnl::prop_kind::forward_training, data_md, eps, kScaleShift),
                                  OneDnnDefaultAttr(), eng);
  }
};

// running = (1 - momentum) * running + momentum * batch; the variance uses the unbiased batch variance
// (backend.h). Tiny ([C]) loops: not worth a primitive.
void UpdateRunningStats(const BatchNormParams& p, int64_t count, const Tensor& mean, const Tensor& var,
                        Tensor* running_mean, Tensor* running_var) {
  const float* m = mean.data<float>();
  const float* v = var.data<float>();
  float* rm = running_mean->data<float>();
  float* rv = running_var->data<float>();
  const float unbias = count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1) : 1.0f;
  for (int64_t c = 0; c < mean.numel(); ++c) {
    rm[c] = (1.0f - p.momentum) * rm[c] + p.momentum * m[c];
    rv[c] = (1.0f - p.momentum) * rv[c] + p.momentum * v[c] * unbias;
  }
}

}  // namespace

Status CpuBackend::BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, Tensor* y, Tensor* save_mean, Tensor* save_var,
                                            Tensor* running_mean, Tensor* running_var) {
  const BnGeometry g(x.shape());
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim,
                         dnn_->GetOrCreate("BatchNormForwardTraining", g.Key(OneDnnOp::kBatchNormTraining, p), [&] {
                           return MakeOneDnnPrimitive<bn_fwd>(g.TrainingPd(dnn_->engine(), p.eps));
                         }));
  GEOMX_RETURN_IF_ERROR(dnn_->Execute("BatchNormForwardTraining", *prim,
                                      {{DNNL_ARG_SRC, dnn_->Wrap(x, g.data_md)},
                                       {DNNL_ARG_SCALE, dnn_->Wrap(gamma, g.stat_md)},
                                       {DNNL_ARG_SHIFT, dnn_->Wrap(beta, g.stat_md)},
                                       {DNNL_ARG_DST, dnn_->Wrap(*y, g.data_md)},
                                       {DNNL_ARG_MEAN, dnn_->Wrap(*save_mean, g.stat_md)},
                                       {DNNL_ARG_VARIANCE, dnn_->Wrap(*save_var, g.stat_md)}}));
  const int64_t count = g.data.dim(0) * g.data.dim(2) * g.data.dim(3);
  UpdateRunningStats(p, count, *save_mean, *save_var, running_mean, running_var);
  return Status::Ok();
}

Status CpuBackend::BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                             const Tensor& beta, const Tensor& running_mean, const Tensor& running_var,
                                             Tensor* y) {
  const BnGeometry g(x.shape());
  GEOMX_ASSIGN_OR_RETURN(
      const OneDnnPrimitive* prim,
      dnn_->GetOrCreate("BatchNormForwardInference", g.Key(OneDnnOp::kBatchNormInference, p), [&] {
        bn_fwd::desc d(dnnl::prop_kind::forward_inference, g.data_md, p.eps,
                       kScaleShift | dnnl::normalization_flags::use_global_stats);
        return MakeOneDnnPrimitive<bn_fwd>(bn_fwd::primitive_desc(d, OneDnnDefaultAttr(), dnn_->engine()));
      }));
  return dnn_->Execute("BatchNormForwardInference", *prim,
                       {{DNNL_ARG_SRC, dnn_->Wrap(x, g.data_md)},
                        {DNNL_ARG_SCALE, dnn_->Wrap(gamma, g.stat_md)},
                        {DNNL_ARG_SHIFT, dnn_->Wrap(beta, g.stat_md)},
                        {DNNL_ARG_MEAN, dnn_->Wrap(running_mean, g.stat_md)},
                        {DNNL_ARG_VARIANCE, dnn_->Wrap(running_var, g.stat_md)},
                        {DNNL_ARG_DST, dnn_->Wrap(*y, g.data_md)}});
}

Status CpuBackend::BatchNormBackward(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                     const Tensor& save_mean, const Tensor& save_var, const Tensor& dy, Tensor* dx,
                                     Tensor* dgamma, Tensor* dbeta) {
  const BnGeometry g(x.shape());
  GEOMX_ASSIGN_OR_RETURN(
      const OneDnnPrimitive* prim, dnn_->GetOrCreate("BatchNormBackward", g.Key(OneDnnOp::kBatchNormBackward, p), [&] {
        bn_bwd::desc d(dnnl::prop_kind::backward, g.data_md, g.data_md, p.eps, kScaleShift);
        bn_bwd::primitive_desc pd(d, OneDnnDefaultAttr(), dnn_->engine(), g.TrainingPd(dnn_->engine(), p.eps));
        return MakeOneDnnPrimitive<bn_bwd>(pd);
      }));
  return dnn_->Execute("BatchNormBackward", *prim,
                       {{DNNL_ARG_SRC, dnn_->Wrap(x, g.data_md)},
                        {DNNL_ARG_MEAN, dnn_->Wrap(save_mean, g.stat_md)},
                        {DNNL_ARG_VARIANCE, dnn_->Wrap(save_var, g.stat_md)},
                        {DNNL_ARG_DIFF_DST, dnn_->Wrap(dy, g.data_md)},
                        {DNNL_ARG_SCALE, dnn_->Wrap(gamma, g.stat_md)},
                        // oneDNN 2.6 refuses to execute a use_shift backward without a SHIFT argument, although
                        // the math never reads it; gamma is a [C] buffer that is only read.
                        {DNNL_ARG_SHIFT, dnn_->Wrap(gamma, g.stat_md)},
                        {DNNL_ARG_DIFF_SRC, dnn_->Wrap(*dx, g.data_md)},
                        {DNNL_ARG_DIFF_SCALE, dnn_->Wrap(*dgamma, g.stat_md)},
                        {DNNL_ARG_DIFF_SHIFT, dnn_->Wrap(*dbeta, g.stat_md)}});
}

}  // namespace geomx
