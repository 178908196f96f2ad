// Optimizer updates: one grid-stride kernel per UpdateRule over the functors of engine/kernels/optimizer_update.h
// and online_update.h
// (the CPU's UpdateLoop runs the same functors). Declarations and contracts: cuda_kernels.h.
#include <cstdint>

#include "engine/cuda/cuda_kernels.h"
#include "engine/cuda/grid.cuh"
#include "engine/kernels/online_update.h"
#include "engine/kernels/optimizer_update.h"

namespace geomx::cuda {

namespace {

template <typename Update>
__global__ void UpdateKernel(Update u, const float* grad, float* w, float* s0, float* s1, float* s2, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    if constexpr (Update::kStates == 0) {
      u(w[i], grad[i]);
    } else if constexpr (Update::kStates == 1) {
      u(w[i], grad[i], s0[i]);
    } else if constexpr (Update::kStates == 2) {
      u(w[i], grad[i], s0[i], s1[i]);
    } else {
      u(w[i], grad[i], s0[i], s1[i], s2[i]);
    }
  }
}

template <typename Update>
cudaError_t Run(const Update& u, const float* grad, float* w, float* s0, float* s1, float* s2, int64_t n,
                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  UpdateKernel<Update><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(u, grad, w, s0, s1, s2, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchUpdate(UpdateRule rule, const UpdateHyper& h, const float* grad, float* param, float* s0, float* s1,
                         float* s2, int64_t n, cudaStream_t stream) {
  switch (rule) {
    case UpdateRule::kSgd: return Run(kernels::SgdUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kMomentum: return Run(kernels::MomentumUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kNesterov: return Run(kernels::NesterovUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kAdaGrad: return Run(kernels::AdaGradUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kRmsProp: return Run(kernels::RmsPropUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kAdaDelta: return Run(kernels::AdaDeltaUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kAdam: return Run(kernels::AdamUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kAdamW: return Run(kernels::AdamWUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kFtrl: return Run(kernels::FtrlUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
    case UpdateRule::kFtml: return Run(kernels::FtmlUpdate::Make(h), grad, param, s0, s1, s2, n, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace geomx::cuda
