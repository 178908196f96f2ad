// Launchers for the CUDA kernels of engine/cuda/*.cu. Each kernel runs a functor of engine/kernels/ (the math is
// written once for every device, docs/style.md R7); these host functions only choose the functor and the grid.
//
// Contract for every launcher: pointers are device memory of the CUDA backend's device, sizes count elements,
// n == 0 launches nothing, work is enqueued on `stream` (asynchronous), and the return value is the launch error
// (cudaGetLastError()), to be turned into a Status by GEOMX_CUDA_RETURN_IF_ERROR. Callers (cuda_*.cc) have
// validated shapes and dtypes already. Thread-safe: launchers keep no state.
//
// This header is shared by nvcc and g++ translation units, so it includes nothing heavier than the CUDA runtime
// API and the engine's plain enums.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "engine/dtype.h"
#include "engine/op_params.h"

namespace geomx::cuda {

// ---- elementwise.cu ----
// out[i] = op(a[i], b[j]); b has n elements (j = i), one (j = 0) or b_numel dividing n (j = i % b_numel: a bias
// over the last dimension).
cudaError_t LaunchBinary(BinaryOp op, const float* a, const float* b, int64_t b_numel, float* out, int64_t n,
                         cudaStream_t stream);
cudaError_t LaunchUnary(UnaryOp op, float alpha, const float* x, float* out, int64_t n, cudaStream_t stream);
// y = alpha*x + y.
cudaError_t LaunchAxpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream);
// out = x * scale where mask != 0, else 0.
cudaError_t LaunchMaskScale(const float* x, const uint8_t* mask, float scale, float* out, int64_t n,
                            cudaStream_t stream);
cudaError_t LaunchGeluForward(const float* x, float* y, int64_t n, cudaStream_t stream);
cudaError_t LaunchGeluBackward(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream);

// ---- reduce.cu ----
// x viewed as [outer, red, inner] -> out [outer, inner]; red > 0. kMean scales the sum by 1/red.
cudaError_t LaunchReduce(ReduceOp op, const float* x, int64_t outer, int64_t red, int64_t inner, float* out,
                         cudaStream_t stream);
// Top-1 index per row of x [n, c] (first maximum wins).
cudaError_t LaunchArgMax(const float* x, int64_t n, int64_t c, int64_t* out, cudaStream_t stream);
// Per-row softmax cross-entropy of logits [n, c] with labels [n]. Rows whose label is outside [0, c) are skipped
// and the smallest such row index is written to *bad_row, which the launcher first sets to kNoBadRow.
inline constexpr int64_t kNoBadRow = 0x7f7f7f7f7f7f7f7f;  // what cudaMemsetAsync(0x7f) writes
cudaError_t LaunchSoftmaxCrossEntropyForward(const float* logits, const int64_t* labels, int64_t n, int64_t c,
                                             float* loss, float* probs, int64_t* bad_row, cudaStream_t stream);
cudaError_t LaunchSoftmaxCrossEntropyBackward(const float* probs, const int64_t* labels, int64_t n, int64_t c,
                                              float scale, float* dlogits, int64_t* bad_row, cudaStream_t stream);

// ---- gather_scatter.cu ----
// out[i, c] = table[indices[i], c] for i < n, c < d; an index outside [0, v) gives 0 (never a read out of bounds).
cudaError_t LaunchGatherRows(const float* table, int64_t v, int64_t d, const int64_t* indices, int64_t n, float* out,
                             cudaStream_t stream);
// Backend::SegmentSumRows: for r < segments, out[dst_rows[r], :] += src[order[j], :] for j in [offsets[r],
// offsets[r + 1]), in increasing j; one thread per (r, column), so no atomics. Rows are d floats wide.
cudaError_t LaunchSegmentSumRows(const float* src, int64_t d, const int64_t* order, const int64_t* offsets,
                                 const int64_t* dst_rows, int64_t segments, float* out, cudaStream_t stream);
// Crop-and-resize over x [n, c, h, w] for k boxes (f32 [k, 4]) with their image indices (valid: ops.cc checked
// them; an index outside [0, n) still reads nothing): y [k, c, crop_h, crop_w]. The backward adds into dx, which
// the caller zeroes first (atomicAdd: overlapping boxes share pixels).
struct CropShape {
  int64_t n, c, h, w, k;
};
cudaError_t LaunchCropAndResizeForward(const CropAndResizeParams& p, const CropShape& s, const float* x,
                                       const float* boxes, const int64_t* box_index, float* y, cudaStream_t stream);
cudaError_t LaunchCropAndResizeBackward(const CropAndResizeParams& p, const CropShape& s, const float* dy,
                                        const float* boxes, const int64_t* box_index, float* dx,
                                        cudaStream_t stream);

// ---- convert.cu ----
// Writes the elem_size-byte pattern (1, 2, 4 or 8; the low bytes of `pattern`) n times.
cudaError_t LaunchFill(void* dst, size_t elem_size, uint64_t pattern, int64_t n, cudaStream_t stream);
// dst[i] = src[i] converted like CpuBackend::Cast: through double, 16-bit floats rounded to nearest even.
cudaError_t LaunchCast(DType src_type, const void* src, DType dst_type, void* dst, int64_t n, cudaStream_t stream);
// cuDNN batch norm keeps 1/sqrt(var + eps) where the Backend contract keeps the biased variance; these convert.
cudaError_t LaunchInvStdToVar(const float* inv_std, float eps, float* var, int64_t c, cudaStream_t stream);
cudaError_t LaunchVarToInvStd(const float* var, float eps, float* inv_std, int64_t c, cudaStream_t stream);

// ---- update.cu ----
// Applies `rule` elementwise: param and the UpdateRuleStateCount(rule) state buffers (s0, s1, s2; null when
// unused) are updated in place.
cudaError_t LaunchUpdate(UpdateRule rule, const UpdateHyper& h, const float* grad, float* param, float* s0, float* s1,
                         float* s2, int64_t n, cudaStream_t stream);

}  // namespace geomx::cuda
