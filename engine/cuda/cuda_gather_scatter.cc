// CudaBackend's index-driven ops (row gathers, segmented row sums, crop-and-resize): argument plumbing to the
// kernel launchers of cuda_kernels.h (gather_scatter.cu). Every call only enqueues work on the stream.
#include <cstdint>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/cuda_kernels.h"

namespace geomx {

namespace {

const int64_t* DeviceI64(const Tensor& t) { return static_cast<const int64_t*>(t.raw_data()); }

}  // namespace

Status CudaBackend::GatherRows(const Tensor& table, const Tensor& indices, Tensor* out) {
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchGatherRows(DeviceF32(table), table.dim(0), table.dim(1), DeviceI64(indices),
                                                    indices.numel(), DeviceF32(out), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::SegmentSumRows(const Tensor& src, const Tensor& order, const Tensor& offsets,
                                   const Tensor& dst_rows, Tensor* out) {
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchSegmentSumRows(DeviceF32(src), src.dim(1), DeviceI64(order),
                                                        DeviceI64(offsets), DeviceI64(dst_rows), dst_rows.numel(),
                                                        DeviceF32(out), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::CropAndResizeForward(const CropAndResizeParams& p, const Tensor& x, const Tensor& boxes,
                                         const Tensor& box_index, Tensor* y) {
  const cuda::CropShape s{x.dim(0), x.dim(1), x.dim(2), x.dim(3), boxes.dim(0)};
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchCropAndResizeForward(p, s, DeviceF32(x), DeviceF32(boxes),
                                                              DeviceI64(box_index), DeviceF32(y), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::CropAndResizeBackward(const CropAndResizeParams& p, const Tensor& dy, const Tensor& boxes,
                                          const Tensor& box_index, Tensor* dx) {
  GEOMX_RETURN_IF_ERROR(Fill(0.0f, dx));
  const cuda::CropShape s{dx->dim(0), dx->dim(1), dx->dim(2), dx->dim(3), boxes.dim(0)};
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchCropAndResizeBackward(p, s, DeviceF32(dy), DeviceF32(boxes),
                                                               DeviceI64(box_index), DeviceF32(dx), ctx_->stream()));
  return Status::Ok();
}

}  // namespace geomx
