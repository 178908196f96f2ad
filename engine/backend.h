// Backend: the kernel surface of one device kind (docs/design.md §3.1). CpuBackend (engine/cpu/: oneDNN for the
// dense ops, loops over engine/kernels/ functors for elementwise math) is the reference; a CUDA backend plugs in
// through engine/backend_registry.cc without touching anything else.
//
// Contract for every method:
//  - All tensors live on this backend's device, are contiguous, and are f32 unless stated otherwise.
//  - Outputs are pre-allocated by the caller (ops.cc) with the right shape; the backend only fills them.
//  - Shapes and dtypes were validated by ops.cc; a backend may GEOMX_DCHECK them again.
//  - The return value reports failures of the underlying library (oneDNN/cuDNN error, out of memory).
//  - Execution is ordered on the backend's own stream; Synchronize() waits for it. The CPU backend is
//    synchronous. A backend instance is shared by all threads: implementations must be thread-safe (the CPU
//    backend guards its primitive cache with a mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/allocator.h"
#include "engine/base/status.h"
#include "engine/op_params.h"
#include "engine/tensor.h"

namespace geomx {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual Allocator& allocator() = 0;
  virtual void Synchronize() = 0;
  // Worker threads for this backend's kernels (oneDNN/OpenMP on CPU). 0 = library default.
  virtual void SetNumThreads(int n) = 0;

  // ---- memory ----
  // Copies raw bytes between host memory and a tensor of this device (or within the device).
  virtual Status CopyFromHost(const void* src, size_t nbytes, Tensor* dst) = 0;
  virtual Status CopyToHost(const Tensor& src, void* dst, size_t nbytes) = 0;
  virtual Status Copy(const Tensor& src, Tensor* dst) = 0;  // same shape and dtype
  virtual Status Fill(float value, Tensor* dst) = 0;        // any dtype; value converted
  virtual Status Cast(const Tensor& src, Tensor* dst) = 0;  // numel equal, dtypes differ
  // Strided block copy (any dtype, bytes): for r in [0, rows), copies the `row_bytes` bytes at byte
  // src_offset + r * src_stride of `src` to byte dst_offset + r * dst_stride of `dst` (offsets from raw_data()).
  // ops.cc checks that every block lies inside its tensor, that row_bytes <= both strides when rows > 1, and that
  // src and dst are different storages (no overlap). rows == 0 or row_bytes == 0 copies nothing. Concat and Slice
  // along any dimension are this copy with rows = the product of the leading dimensions.
  virtual Status CopyBlocks(const Tensor& src, Tensor* dst, int64_t rows, size_t row_bytes, size_t src_stride,
                            size_t dst_stride, size_t src_offset, size_t dst_offset) = 0;

  // ---- rows picked by index: embedding lookup, row-sparse gradients ----
  // out[i, :] = table[indices[i], :] for i in [0, n): table [V, D], indices i64 [n], out [n, D]. ops.cc checked
  // every index against [0, V); a backend never reads outside the table even so.
  virtual Status GatherRows(const Tensor& table, const Tensor& indices, Tensor* out) = 0;
  // Segmented row sums: for r in [0, R), adds src[order[j], :] to out[dst_rows[r], :] for j = offsets[r], ...,
  // offsets[r + 1] - 1, one after another in increasing j (so every device rounds alike). src [n, D]; order i64
  // [m] with values in [0, n); offsets i64 [R + 1], offsets[0] = 0, non-decreasing, offsets[R] = m; dst_rows i64
  // [R], pairwise distinct, in [0, out.dim(0)); out [V, D] is updated in place. ops.cc builds the index tensors
  // on the host; distinct dst_rows keep the output rows independent (no atomics, deterministic).
  virtual Status SegmentSumRows(const Tensor& src, const Tensor& order, const Tensor& offsets,
                                const Tensor& dst_rows, Tensor* out) = 0;

  // ---- RoI crop-and-resize (ops.h CropAndResize: the sampling rule; math in kernels/crop_and_resize.h) ----
  // x [N, C, H, W], boxes f32 [K, 4], box_index i64 [K] (checked by ops.cc: in [0, N), finite boxes), y [K, C,
  // p.crop_h, p.crop_w].
  virtual Status CropAndResizeForward(const CropAndResizeParams& p, const Tensor& x, const Tensor& boxes,
                                      const Tensor& box_index, Tensor* y) = 0;
  // Overwrites dx [N, C, H, W] with the gradient of the forward for dy [K, C, crop_h, crop_w].
  virtual Status CropAndResizeBackward(const CropAndResizeParams& p, const Tensor& dy, const Tensor& boxes,
                                       const Tensor& box_index, Tensor* dx) = 0;

  // ---- dense linear algebra ----
  // C[M,N] = op(A) op(B) (+ beta*C when accumulate), op = transpose when the flag is set.
  virtual Status MatMul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, bool accumulate,
                        Tensor* c) = 0;
  // y[N,O] = x[N,I] w[O,I]^T + b[O] (bias optional: nullptr).
  virtual Status LinearForward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) = 0;

  // ---- convolution (NCHW, OIHW) ----
  virtual Status Conv2dForward(const Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor* b,
                               Tensor* y) = 0;
  virtual Status Conv2dBackwardData(const Conv2dParams& p, const Tensor& dy, const Tensor& w, Tensor* dx) = 0;
  // dw always; db when non-null.
  virtual Status Conv2dBackwardFilter(const Conv2dParams& p, const Tensor& x, const Tensor& dy, Tensor* dw,
                                      Tensor* db) = 0;

  // ---- pooling (NCHW) ----
  // `workspace` is allocated by the backend when it needs one (max-pool indices) and must be passed back to
  // Pool2dBackward untouched. It may stay undefined.
  virtual Status Pool2dForward(const Pool2dParams& p, const Tensor& x, Tensor* y, Tensor* workspace) = 0;
  virtual Status Pool2dBackward(const Pool2dParams& p, const Tensor& x, const Tensor& dy,
                                const Tensor& workspace, Tensor* dx) = 0;

  // ---- batch normalisation over N,H,W per channel (x is [N,C,H,W] or [N,C]) ----
  // Training: normalises with batch statistics, writes save_mean/save_var ([C], biased variance) and updates
  // running_mean/running_var in place with p.momentum (running_var uses the unbiased batch variance).
  virtual Status BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                          const Tensor& beta, Tensor* y, Tensor* save_mean, Tensor* save_var,
                                          Tensor* running_mean, Tensor* running_var) = 0;
  virtual Status BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                           const Tensor& beta, const Tensor& running_mean,
                                           const Tensor& running_var, Tensor* y) = 0;
  virtual Status BatchNormBackward(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                   const Tensor& save_mean, const Tensor& save_var, const Tensor& dy, Tensor* dx,
                                   Tensor* dgamma, Tensor* dbeta) = 0;

  // ---- recurrent layers (RnnParams in op_params.h: the cells, shapes, layout, gate order) ----
  // y: [N, T, H] when p.sequences, else [N, H]. Training passes `workspace`: the backend stores there what
  // RnnBackward needs (its own layout and dtype; a fresh tensor each call) and the caller passes it back untouched.
  // Inference passes nullptr.
  virtual Status RnnForward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                             const Tensor& b, Tensor* y, Tensor* workspace) = 0;
  // dy is shaped like y. Writes dx [N, T, I] and overwrites dw_ih, dw_hh and db (shaped like the weights).
  virtual Status RnnBackward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                              const Tensor& b, const Tensor& dy, const Tensor& workspace, Tensor* dx,
                              Tensor* dw_ih, Tensor* dw_hh, Tensor* db) = 0;

  // ---- activations and softmax ----
  virtual Status ActivationForward(ActivationKind k, const Tensor& x, Tensor* y) = 0;
  // dx = dy * f'(x); `y` is the forward output (some kinds use it instead of x).
  virtual Status ActivationBackward(ActivationKind k, const Tensor& x, const Tensor& y, const Tensor& dy,
                                    Tensor* dx) = 0;
  // Over the last dimension of a 2-D [N, C] tensor. log == true: log-softmax.
  virtual Status SoftmaxForward(bool log, const Tensor& x, Tensor* y) = 0;
  virtual Status SoftmaxBackward(bool log, const Tensor& y, const Tensor& dy, Tensor* dx) = 0;

  // ---- elementwise and reductions (engine/kernels/ functors) ----
  virtual Status Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor* out) = 0;
  virtual Status Unary(UnaryOp op, float alpha, const Tensor& x, Tensor* out) = 0;
  // Reduces x over dimensions [axis_begin, axis_end) to `out` (those dims removed). Contiguous ranges only.
  virtual Status Reduce(ReduceOp op, const Tensor& x, int axis_begin, int axis_end, Tensor* out) = 0;
  // y = alpha*x + y (in place on y).
  virtual Status Axpy(float alpha, const Tensor& x, Tensor* y) = 0;
  // out = x * mask * scale, mask u8 of the same numel (dropout).
  virtual Status MaskScale(const Tensor& x, const Tensor& mask, float scale, Tensor* out) = 0;

  // ---- fused losses ----
  // Softmax cross-entropy with integer labels (i64 [N]) over logits [N, C]. Writes per-sample loss [N] and the
  // softmax probabilities [N, C] (reused by the backward). A label outside [0, C) is reported as kInvalidArgument.
  virtual Status SoftmaxCrossEntropyForward(const Tensor& logits, const Tensor& labels, Tensor* loss,
                                            Tensor* probs) = 0;
  // dlogits = (probs - onehot(labels)) * scale.
  virtual Status SoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels, float scale,
                                             Tensor* dlogits) = 0;
  // Top-1 prediction per row of [N, C] -> i64 [N].
  virtual Status ArgMax(const Tensor& x, Tensor* out) = 0;

  // ---- optimizer ----
  // Applies `rule` to `param` in place; `state` holds UpdateRuleStateCount(rule) tensors shaped like param.
  virtual Status ApplyUpdate(UpdateRule rule, const UpdateHyper& h, const Tensor& grad, Tensor* param,
                             const std::vector<Tensor*>& state) = 0;
};

}  // namespace geomx
