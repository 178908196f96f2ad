// CudaBackend: start-up, the device probe, synchronisation, and memory movement (copies, fill, dtype casts). The
// dense ops live in cudnn_*.cc and cublas_matmul.cc, the elementwise math in cuda_elementwise.cc and *.cu.
#include "engine/cuda/cuda_backend.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "engine/base/check.h"
#include "engine/base/logging.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/cuda_kernels.h"
#include "engine/half.h"

namespace geomx {

namespace {

// The bit pattern of `value` stored as T, converted like CpuBackend::Fill (through double; 16-bit floats rounded
// to nearest even).
template <typename T>
uint64_t FillPattern(float value) {
  T v;
  if constexpr (std::is_same_v<T, Half>) {
    v = Half{FloatToHalfBits(value)};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    v = BFloat16{FloatToBFloat16Bits(value)};
  } else {
    v = static_cast<T>(static_cast<double>(value));
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));  // little-endian: the element's bytes are the pattern's low bytes
  return bits;
}

Status CheckBytes(const char* op, size_t nbytes, const Tensor& t) {
  if (nbytes != t.nbytes()) {
    return Status::InvalidArgument(std::string(op) + ": " + std::to_string(nbytes) + " bytes for " + t.ToString() +
                                   " (" + std::to_string(t.nbytes()) + " bytes)");
  }
  return Status::Ok();
}

}  // namespace

int CudaDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; leave no trace for later launches
    if (why != nullptr) {
      *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
    }
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "cudaGetDeviceCount: 0 devices";
  return count;
}

std::unique_ptr<Backend> MakeCudaBackend() {
  auto backend = CudaBackend::Create();
  GEOMX_CHECK(backend.ok()) << "the CUDA backend failed to start on cuda:0: " << backend.status().ToString();
  return std::move(backend).value();
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::Create(const CudaBackendOptions& options) {
  GEOMX_CUDA_RETURN_IF_ERROR(cudaSetDevice(0));
  GEOMX_CUDA_RETURN_IF_ERROR(cudaFree(nullptr));  // creates the runtime context now, so failures surface here
  auto backend = std::make_unique<CudaBackend>(PassKey{}, options);
  GEOMX_ASSIGN_OR_RETURN(backend->ctx_, CudaContext::Create(options, &backend->allocator_));
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    GEOMX_LOG(kInfo) << "cuda:0: " << prop.name << " (sm_" << prop.major << prop.minor << ", "
                     << prop.totalGlobalMem / (1024 * 1024) << " MiB), cuDNN " << cudnnGetVersion()
                     << (options.allow_tf32 ? ", TF32 allowed" : ", full f32");
  } else {
    (void)cudaGetLastError();
  }
  return backend;
}

CudaBackend::CudaBackend(PassKey, const CudaBackendOptions& options)
    : options_(options), allocator_(Device::Cuda(0), options.allocator) {}

CudaBackend::~CudaBackend() = default;

void CudaBackend::Synchronize() {
  const Status s = ctx_->Sync();
  if (!s.ok()) {
    GEOMX_LOG(kError) << "CudaBackend::Synchronize: " << s.ToString();
  }
}

void CudaBackend::SetNumThreads(int /*n*/) {}

Status CudaBackend::CopyFromHost(const void* src, size_t nbytes, Tensor* dst) {
  GEOMX_RETURN_IF_ERROR(CheckBytes("CopyFromHost", nbytes, *dst));
  if (nbytes == 0) return Status::Ok();
  // From pageable host memory (all host tensors are), cudaMemcpyAsync returns once `src` has been staged, so the
  // caller may reuse or free it immediately; the device copy itself stays ordered on the stream.
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst->raw_data(), src, nbytes, cudaMemcpyHostToDevice, ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::CopyToHost(const Tensor& src, void* dst, size_t nbytes) {
  GEOMX_RETURN_IF_ERROR(CheckBytes("CopyToHost", nbytes, src));
  if (nbytes == 0) return Status::Ok();
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src.raw_data(), nbytes, cudaMemcpyDeviceToHost, ctx_->stream()));
  return ctx_->Sync();  // the caller reads `dst` next
}

Status CudaBackend::Copy(const Tensor& src, Tensor* dst) {
  GEOMX_RETURN_IF_ERROR(CheckBytes("Copy", src.nbytes(), *dst));
  const size_t n = src.nbytes();
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst->raw_data());
  if (n == 0 || s == d) return Status::Ok();
  if (s < d + n && d < s + n) {
    // Overlapping views of one storage (memmove semantics): cudaMemcpy does not allow overlap; stage the bytes.
    GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> staging, ctx_->Scratch(n));
    GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging->data(), s, n, cudaMemcpyDeviceToDevice, ctx_->stream()));
    s = static_cast<const char*>(staging->data());
    GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, ctx_->stream()));
    return Status::Ok();
  }
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::Fill(float value, Tensor* dst) {
  if (dst->numel() == 0) return Status::Ok();
  if (value == 0.0f && !std::signbit(value)) {  // +0 is all-zero bits in every dtype
    GEOMX_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst->raw_data(), 0, dst->nbytes(), ctx_->stream()));
    return Status::Ok();
  }
  const uint64_t pattern =
      VisitDType(dst->dtype(), [&](auto tag) { return FillPattern<decltype(tag)>(value); });
  GEOMX_CUDA_RETURN_IF_ERROR(
      cuda::LaunchFill(dst->raw_data(), SizeOf(dst->dtype()), pattern, dst->numel(), ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::CopyBlocks(const Tensor& src, Tensor* dst, int64_t rows, size_t row_bytes, size_t src_stride,
                               size_t dst_stride, size_t src_offset, size_t dst_offset) {
  if (rows <= 0 || row_bytes == 0) return Status::Ok();
  const char* s = static_cast<const char*>(src.raw_data()) + src_offset;
  char* d = static_cast<char*>(dst->raw_data()) + dst_offset;
  if (rows == 1) {
    GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d, s, row_bytes, cudaMemcpyDeviceToDevice, ctx_->stream()));
    return Status::Ok();
  }
  // cudaMemcpy2DAsync rejects pitches above the device's memPitch (2^31 - 1 on current GPUs): larger strides,
  // which need tensors of several GiB, fall back to one copy per row.
  constexpr size_t kMaxPitch = (size_t{1} << 31) - 1;
  if (src_stride > kMaxPitch || dst_stride > kMaxPitch) {
    for (int64_t r = 0; r < rows; ++r, s += src_stride, d += dst_stride) {
      GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d, s, row_bytes, cudaMemcpyDeviceToDevice, ctx_->stream()));
    }
    return Status::Ok();
  }
  // (dst, dpitch, src, spitch, width in bytes, height in rows, kind, stream)
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(d, dst_stride, s, src_stride, row_bytes, static_cast<size_t>(rows),
                                               cudaMemcpyDeviceToDevice, ctx_->stream()));
  return Status::Ok();
}

Status CudaBackend::Cast(const Tensor& src, Tensor* dst) {
  if (src.numel() != dst->numel()) {
    return Status::InvalidArgument("Cast: " + src.ToString() + " into " + dst->ToString());
  }
  if (src.dtype() == dst->dtype()) return Copy(src, dst);
  GEOMX_CUDA_RETURN_IF_ERROR(
      cuda::LaunchCast(src.dtype(), src.raw_data(), dst->dtype(), dst->raw_data(), src.numel(), ctx_->stream()));
  return Status::Ok();
}

}  // namespace geomx
