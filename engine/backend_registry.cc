// The only file that knows which backends were compiled in (docs/style.md R6).
#include "engine/backend_registry.h"

#include <memory>
#include <string>

#include "engine/base/check.h"
#include "engine/cpu/cpu_backend.h"

#if GEOMX_WITH_CUDA
namespace geomx {
// Provided by engine/cuda/ (geomx_engine_cuda) once it exists.
std::unique_ptr<Backend> MakeCudaBackend();
int CudaDeviceCount();
}  // namespace geomx
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

int VisibleCudaDevices() {
#if GEOMX_WITH_CUDA
  return CudaDeviceCount();
#else
  return 0;
#endif
}

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
    const int count = VisibleCudaDevices();
    if (count == 0) return Status::FailedPrecondition("device: cuda requested but no CUDA device is visible");
    if (index >= count) {
      return Status::FailedPrecondition("device: " + spec + " requested but only " + std::to_string(count) +
                                        " CUDA device(s) are visible");
    }
    return Device::Cuda(index);
#else
    (void)index;
    return Status::FailedPrecondition(
        "device: cuda requested but this build has no CUDA backend (configure with -DGEOMX_WITH_CUDA=ON)");
#endif
  }
  return Status::InvalidArgument("device: unknown device '" + spec + "' (expected cpu, cuda, cuda:N or auto)");
}

}  // namespace geomx
