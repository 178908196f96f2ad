// CudaBackend::MatMul and LinearForward on cuBLAS SGEMM.
//
// cuBLAS is column-major; our tensors are row-major. A row-major [r, c] matrix read as column-major (ld = c) is its
// transpose, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: swap the operands and the m/n sizes, keep
// each operand's own transpose flag. No data moves.
#include <climits>
#include <cstdint>
#include <string>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/cuda_kernels.h"

namespace geomx {

namespace {

Status CheckGemmDims(int64_t m, int64_t k, int64_t n) {
  if (m > INT_MAX || k > INT_MAX || n > INT_MAX) {
    return Status::Unimplemented("MatMul: " + std::to_string(m) + "x" + std::to_string(k) + " by " +
                                 std::to_string(k) + "x" + std::to_string(n) + " exceeds cuBLAS's int dimensions");
  }
  return Status::Ok();
}

// Row-major c[m, n] = op(a) op(b) + beta * c. a is [m, k] ([k, m] when trans_a), b is [k, n] ([n, k] when
// trans_b). m, n, k > 0.
Status Sgemm(CudaContext& ctx, const float* a, bool trans_a, const float* b, bool trans_b, int64_t m, int64_t k,
             int64_t n, float beta, float* c) {
  GEOMX_RETURN_IF_ERROR(CheckGemmDims(m, k, n));
  const int mi = static_cast<int>(m), ki = static_cast<int>(k), ni = static_cast<int>(n);
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = trans_a ? mi : ki;  // the row length of a as stored
  const int ldb = trans_b ? ki : ni;
  const float alpha = 1.0f;
  auto lock = ctx.LockLibraries();
  GEOMX_CUDA_RETURN_IF_ERROR(
      cublasSgemm(ctx.cublas(), op_b, op_a, ni, mi, ki, &alpha, b, ldb, a, lda, &beta, c, ni));
  return Status::Ok();
}

}  // namespace

Status CudaBackend::MatMul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, bool accumulate, Tensor* c) {
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) return accumulate ? Status::Ok() : Fill(0.0f, c);  // an empty sum
  return Sgemm(*ctx_, DeviceF32(a), trans_a, DeviceF32(b), trans_b, m, k, n, accumulate ? 1.0f : 0.0f, DeviceF32(c));
}

Status CudaBackend::LinearForward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) {
  const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
  if (batch == 0 || out == 0) return Status::Ok();
  if (in == 0) {
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, y));
  } else {
    // y = x w^T: w is [out, in] row-major, i.e. the transposed operand.
    GEOMX_RETURN_IF_ERROR(Sgemm(*ctx_, DeviceF32(x), false, DeviceF32(w), true, batch, in, out, 0.0f, DeviceF32(y)));
  }
  if (b == nullptr) return Status::Ok();
  // Bias over the last dimension, in place (the add functor, like ops::Add with a [C] operand).
  GEOMX_CUDA_RETURN_IF_ERROR(cuda::LaunchBinary(BinaryOp::kAdd, DeviceF32(*y), DeviceF32(*b), out, DeviceF32(y),
                                                batch * out, ctx_->stream()));
  return Status::Ok();
}

}  // namespace geomx
