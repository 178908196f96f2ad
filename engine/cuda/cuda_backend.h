// CudaBackend: the Backend seam (engine/backend.h, whose contracts every method follows) on one NVIDIA GPU.
//   - convolution, pooling, batch norm, relu/tanh/sigmoid, softmax and the LSTM: cuDNN (cudnn_*.cc);
//   - MatMul and LinearForward: cuBLAS SGEMM on row-major data (cublas_matmul.cc);
//   - GELU, elementwise math, reductions, the fused loss, arg-max and optimizer updates: kernels (*.cu) launching
//     the same engine/kernels/ functors the CPU backend loops over (cuda_elementwise.cc);
//   - row gathers, segmented row sums and crop-and-resize: kernels of gather_scatter.cu (cuda_gather_scatter.cc);
//   - memory: a caching device allocator (cuda_allocator.h), cudaMemcpyAsync and, for CopyBlocks, cudaMemcpy2DAsync
//     (cuda_backend.cc).
//
// Execution: every call enqueues its work on the backend's single non-blocking stream and returns; the results
// are ready for later calls (stream order) and for the host after Synchronize(). Calls that hand data to the host
// wait for the stream: CopyToHost, and the loss calls, which must read the label check back to return
// kInvalidArgument. Failures of CUDA, cuDNN or cuBLAS (out of memory included) come back as Status, never abort.
//
// Device: cuda:0 (the CUDA runtime's default device in every thread). One backend serves one device kind
// (BackendFor(DeviceKind)), so a process drives one GPU; pick which with CUDA_VISIBLE_DEVICES.
//
// Thread-safe: the cuDNN/cuBLAS handles and the convolution algorithm cache are used under one mutex
// (CudaContext); kernel launches and copies need no lock (the stream orders them).
//
// This header includes no CUDA header: backend_registry.cc includes it in a plain C++ translation unit.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/cuda/cuda_allocator.h"

namespace geomx {

class CudaContext;  // engine/cuda/cuda_context.h: stream, cuDNN/cuBLAS handles, algorithm cache

struct CudaBackendOptions {
  // TF32 tensor cores for f32 convolutions and matrix products: several times faster on H100, but products keep
  // a 10-bit mantissa, so results move outside the CPU-conformance tolerances. Off: full f32, like the CPU.
  bool allow_tf32 = false;
  // Convolution algorithms per shape: true times every candidate once with cudnnFind*AlgorithmEx (PyTorch's
  // cudnn.benchmark); false takes cuDNN's heuristic ranking (cudnnGet*Algorithm_v7) without running anything.
  bool benchmark_conv_algorithms = true;
  // Largest workspace a convolution algorithm may use; taken from the caching allocator per call.
  size_t conv_workspace_limit_bytes = size_t{256} << 20;
  CudaAllocatorOptions allocator;
};

class CudaBackend final : public Backend {
  struct PassKey {  // only Create constructs (the context can fail to start: a Status, not a throw)
    explicit PassKey() = default;
  };

 public:
  // Starts the backend on cuda:0: runtime context, stream, cuDNN and cuBLAS handles. kFailedPrecondition when
  // no device or driver is usable, kResourceExhausted when the device is out of memory.
  static Result<std::unique_ptr<CudaBackend>> Create(const CudaBackendOptions& options = {});
  CudaBackend(PassKey, const CudaBackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  Allocator& allocator() override { return allocator_; }
  void Synchronize() override;  // waits for the stream; a failure is logged (the seam returns void)
  void SetNumThreads(int n) override;  // no-op: GPU kernels have no host thread pool

  // cuda_backend.cc
  Status CopyFromHost(const void* src, size_t nbytes, Tensor* dst) override;
  Status CopyToHost(const Tensor& src, void* dst, size_t nbytes) override;
  Status Copy(const Tensor& src, Tensor* dst) override;
  Status Fill(float value, Tensor* dst) override;
  Status Cast(const Tensor& src, Tensor* dst) override;
  Status CopyBlocks(const Tensor& src, Tensor* dst, int64_t rows, size_t row_bytes, size_t src_stride,
                    size_t dst_stride, size_t src_offset, size_t dst_offset) override;

  // cuda_gather_scatter.cc (kernels in gather_scatter.cu)
  Status GatherRows(const Tensor& table, const Tensor& indices, Tensor* out) override;
  Status SegmentSumRows(const Tensor& src, const Tensor& order, const Tensor& offsets, const Tensor& dst_rows,
                        Tensor* out) override;
  Status CropAndResizeForward(const CropAndResizeParams& p, const Tensor& x, const Tensor& boxes,
                              const Tensor& box_index, Tensor* y) override;
  Status CropAndResizeBackward(const CropAndResizeParams& p, const Tensor& dy, const Tensor& boxes,
                               const Tensor& box_index, Tensor* dx) override;

  // cublas_matmul.cc
  Status MatMul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, bool accumulate,
                Tensor* c) override;
  Status LinearForward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) override;

  // cudnn_conv.cc
  Status Conv2dForward(const Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor* b,
                       Tensor* y) override;
  Status Conv2dBackwardData(const Conv2dParams& p, const Tensor& dy, const Tensor& w, Tensor* dx) override;
  Status Conv2dBackwardFilter(const Conv2dParams& p, const Tensor& x, const Tensor& dy, Tensor* dw,
                              Tensor* db) override;

  // cudnn_pool.cc. Max pooling: the workspace is a device copy of y (cuDNN's backward needs x, y and dy).
  Status Pool2dForward(const Pool2dParams& p, const Tensor& x, Tensor* y, Tensor* workspace) override;
  Status Pool2dBackward(const Pool2dParams& p, const Tensor& x, const Tensor& dy, const Tensor& workspace,
                        Tensor* dx) override;

  // cudnn_batchnorm.cc
  Status BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                  const Tensor& beta, Tensor* y, Tensor* save_mean, Tensor* save_var,
                                  Tensor* running_mean, Tensor* running_var) override;
  Status BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                   const Tensor& beta, const Tensor& running_mean, const Tensor& running_var,
                                   Tensor* y) override;
  Status BatchNormBackward(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                           const Tensor& save_mean, const Tensor& save_var, const Tensor& dy, Tensor* dx,
                           Tensor* dgamma, Tensor* dbeta) override;

  // cudnn_activation.cc (GELU through the kernels/activation.h functors)
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

  // cuda_elementwise.cc
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
  const CudaBackendOptions options_;
  CudaAllocator allocator_;
  std::unique_ptr<CudaContext> ctx_;  // set by Create
};

// How many CUDA devices the runtime reports. Failure (no driver, no device, driver too old) is not an error
// here: it means 0 devices, and `why` (when non-null) receives the runtime's explanation, e.g.
// "cudaGetDeviceCount: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version".
int CudaDeviceCount(std::string* why);

// The instance backend_registry.cc installs for DeviceKind::kCuda. Aborts with the reason when the backend
// cannot start: the registry only asks once a device was reported visible, so this is a broken invariant.
std::unique_ptr<Backend> MakeCudaBackend();

}  // namespace geomx
