// CpuBackend: the reference backend. Dense ops (matmul/inner product, conv, pooling, batch norm, eltwise,
// softmax) go through oneDNN primitives, cached by shape (onednn_*.cc); elementwise math, reductions, losses and
// optimizer updates loop over the functors in engine/kernels/ (cpu_elementwise.cc), row gathers, segment sums and
// crop-and-resize are loops too (cpu_gather_scatter.cc); large loops are split over
// oneDNN's own OpenMP thread pool (no second pool competing for the cores). Method contracts: engine/backend.h.
// Thread-safe: the primitive cache is guarded by a mutex; primitives execute on a per-call stream.
#pragma once

#include <memory>

#include "engine/backend.h"
#include "engine/cpu/cpu_allocator.h"

namespace geomx {

class OneDnnContext;  // engine/cpu/onednn_context.h (the only place dnnl.hpp is visible besides onednn_*.cc)

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  Allocator& allocator() override { return allocator_; }
  void Synchronize() override {}
  void SetNumThreads(int n) override;

  // cpu_backend.cc
  Status CopyFromHost(const void* src, size_t nbytes, Tensor* dst) override;
  Status CopyToHost(const Tensor& src, void* dst, size_t nbytes) override;
  Status Copy(const Tensor& src, Tensor* dst) override;
  Status Fill(float value, Tensor* dst) override;
  Status Cast(const Tensor& src, Tensor* dst) override;
  Status CopyBlocks(const Tensor& src, Tensor* dst, int64_t rows, size_t row_bytes, size_t src_stride,
                    size_t dst_stride, size_t src_offset, size_t dst_offset) override;

  // cpu_gather_scatter.cc
  Status GatherRows(const Tensor& table, const Tensor& indices, Tensor* out) override;
  Status SegmentSumRows(const Tensor& src, const Tensor& order, const Tensor& offsets, const Tensor& dst_rows,
                        Tensor* out) override;
  Status CropAndResizeForward(const CropAndResizeParams& p, const Tensor& x, const Tensor& boxes,
                              const Tensor& box_index, Tensor* y) override;
  Status CropAndResizeBackward(const CropAndResizeParams& p, const Tensor& dy, const Tensor& boxes,
                               const Tensor& box_index, Tensor* dx) override;

  // onednn_matmul.cc
  Status MatMul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, bool accumulate,
                Tensor* c) override;
  Status LinearForward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) override;

  // onednn_conv.cc
  Status Conv2dForward(const Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor* b,
                       Tensor* y) override;
  Status Conv2dBackwardData(const Conv2dParams& p, const Tensor& dy, const Tensor& w, Tensor* dx) override;
  Status Conv2dBackwardFilter(const Conv2dParams& p, const Tensor& x, const Tensor& dy, Tensor* dw,
                              Tensor* db) override;

  // onednn_pool.cc
  Status Pool2dForward(const Pool2dParams& p, const Tensor& x, Tensor* y, Tensor* workspace) override;
  Status Pool2dBackward(const Pool2dParams& p, const Tensor& x, const Tensor& dy, const Tensor& workspace,
                        Tensor* dx) override;

  // onednn_batchnorm.cc
  Status BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                  const Tensor& beta, Tensor* y, Tensor* save_mean, Tensor* save_var,
                                  Tensor* running_mean, Tensor* running_var) override;
  Status BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                   const Tensor& beta, const Tensor& running_mean, const Tensor& running_var,
                                   Tensor* y) override;
  Status BatchNormBackward(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                           const Tensor& save_mean, const Tensor& save_var, const Tensor& dy, Tensor* dx,
                           Tensor* dgamma, Tensor* dbeta) override;

  // onednn_eltwise.cc
  Status RnnForward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b,
                     Tensor* y, Tensor* workspace) override;
  Status RnnBackward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b,
                      const Tensor& dy, const Tensor& workspace, Tensor* dx, Tensor* dw_ih, Tensor* dw_hh,
                      Tensor* db) override;
  Status ActivationForward(ActivationKind k, const Tensor& x, Tensor* y) override;
  Status ActivationBackward(ActivationKind k, const Tensor& x, const Tensor& y, const Tensor& dy,
                            Tensor* dx) override;
  Status SoftmaxForward(bool log, const Tensor& x, Tensor* y) override;
  Status SoftmaxBackward(bool log, const Tensor& y, const Tensor& dy, Tensor* dx) override;

  // cpu_elementwise.cc
  Status Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor* out) override;
  Status Unary(UnaryOp op, float alpha, const Tensor& x, Tensor* out) override;
  Status Reduce(ReduceOp op, const Tensor& x, int axis_begin, int axis_end, Tensor* out) override;
  Status Axpy(float alpha, const Tensor& x, Tensor* y) override;
  Status MaskScale(const Tensor& x, const Tensor& mask, float scale, Tensor* out) override;
  Status SoftmaxCrossEntropyForward(const Tensor& logits, const Tensor& labels, Tensor* loss,
                                    Tensor* probs) override;
  Status SoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels, float scale,
                                     Tensor* dlogits) override;
  Status ArgMax(const Tensor& x, Tensor* out) override;
  Status ApplyUpdate(UpdateRule rule, const UpdateHyper& h, const Tensor& grad, Tensor* param,
                     const std::vector<Tensor*>& state) override;

 private:
  CpuAllocator allocator_;
  std::unique_ptr<OneDnnContext> dnn_;  // engine, primitive cache
};

}  // namespace geomx
