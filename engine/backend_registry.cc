// The only file that knows which backends were compiled in (docs/style.md R6).
#include "engine/backend_registry.h"

#include <memory>
#include <string>

#include "engine/base/check.h"
#include "engine/cpu/cpu_backend.h"

#if GEOMX_WITH_CUDA
#include "engine/cuda/cuda_backend.h"  // MakeCudaBackend, CudaDeviceCount (no CUDA header behind it)
#endif

namespace geomx {

namespace {

// Backends are process-lifetime objects and deliberately never destroyed: tensors held by other static objects
// free through their allocator during exit, in an order no destructor sequence could guarantee.
Backend& CpuBackendInstance() {
  static Backend* const backend = std::make_unique<CpuBackend>().release();
  return *backend;
}

#if GEOMX_WITH_CUDA
Backend& CudaBackendInstance() {
  static Backend* const backend = MakeCudaBackend().release();
  return *backend;
}
#endif

// What the CUDA runtime reported, asked once per process (devices do not come and go). No driver or no device is
// not an error: zero devices, with the runtime's reason kept for the kFailedPrecondition of ResolveDevice.
struct CudaProbe {
  int count = 0;
  std::string why;
};

const CudaProbe& ProbeCuda() {
  static const CudaProbe probe = [] {
    CudaProbe p;
#if GEOMX_WITH_CUDA
    p.count = CudaDeviceCount(&p.why);
#else
    p.why = "this build has no CUDA backend (configure with -DGEOMX_WITH_CUDA=ON)";
#endif
    return p;
  }();
  return probe;
}

// The CUDA backend drives one device, cuda:0 (engine/cuda/cuda_backend.h): a process picks its GPU with
// CUDA_VISIBLE_DEVICES, so more visible devices still make one usable index.
int VisibleCudaDevices() { return ProbeCuda().count > 0 ? 1 : 0; }

}  // namespace

Backend& BackendFor(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return CpuBackendInstance();
    case DeviceKind::kCuda:
#if GEOMX_WITH_CUDA
      return CudaBackendInstance();
#else
      break;
#endif
  }
  GEOMX_CHECK(false) << "BackendFor: device kind " << static_cast<int>(kind) << " is not compiled in";
  return CpuBackendInstance();  // unreachable
}

bool DeviceAvailable(Device device) {
  switch (device.kind) {
    case DeviceKind::kCpu: return device.index == 0;
    case DeviceKind::kCuda: return device.index >= 0 && device.index < VisibleCudaDevices();
  }
  return false;
}

std::vector<Device> AvailableDevices() {
  std::vector<Device> out{Device::Cpu()};
  for (int i = 0; i < VisibleCudaDevices(); ++i) out.push_back(Device::Cuda(i));
  return out;
}

Result<Device> ResolveDevice(const std::string& spec) {
  if (spec == "cpu") return Device::Cpu();
  if (spec == "auto") return VisibleCudaDevices() > 0 ? Device::Cuda(0) : Device::Cpu();
  if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (spec.size() > 5) {
      const std::string digits = spec.substr(5);
      if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 6) {
        return Status::InvalidArgument("device: bad CUDA index in '" + spec + "' (expected cuda or cuda:N)");
      }
      index = std::stoi(digits);
    } else if (spec.size() == 5) {
      return Status::InvalidArgument("device: missing CUDA index in '" + spec + "' (expected cuda or cuda:N)");
    }
#if GEOMX_WITH_CUDA
    const CudaProbe& probe = ProbeCuda();
    if (probe.count == 0) {
      return Status::FailedPrecondition("device: " + spec + " requested but no CUDA device is visible (" + probe.why +
                                        ")");
    }
    if (index >= VisibleCudaDevices()) {
      return Status::FailedPrecondition("device: " + spec + " requested but this process drives one GPU, cuda:0 (" +
                                        std::to_string(probe.count) +
                                        " visible); select the GPU with CUDA_VISIBLE_DEVICES=" + spec.substr(5) +
                                        " and use device: cuda");
    }
    return Device::Cuda(index);
#else
    (void)index;
    return Status::FailedPrecondition("device: " + spec + " requested but " + ProbeCuda().why);
#endif
  }
  return Status::InvalidArgument("device: unknown device '" + spec + "' (expected cpu, cuda, cuda:N or auto)");
}

}  // namespace geomx
