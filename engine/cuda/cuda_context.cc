#include "engine/cuda/cuda_context.h"

#include "engine/cuda/cuda_check.h"

namespace geomx {

Result<std::unique_ptr<CudaContext>> CudaContext::Create(const CudaBackendOptions& options, Allocator* allocator) {
  // Not make_unique: the constructor is private (contexts only come out of Create, fully initialised).
  std::unique_ptr<CudaContext> ctx(new CudaContext(options, allocator));
  GEOMX_ASSIGN_OR_RETURN(ctx->stream_, MakeCudaStream());
  GEOMX_ASSIGN_OR_RETURN(ctx->cudnn_, MakeCudnnHandle(ctx->stream()));
  GEOMX_ASSIGN_OR_RETURN(ctx->cublas_, MakeCublasHandle(ctx->stream(), options.allow_tf32));
  return ctx;
}

Result<std::shared_ptr<Storage>> CudaContext::Scratch(size_t nbytes) { return Storage::TryCreate(*allocator_, nbytes); }

Status CudaContext::Sync() {
  GEOMX_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  return Status::Ok();
}

}  // namespace geomx
