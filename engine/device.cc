#include "engine/device.h"

namespace geomx {

std::string Device::ToString() const {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kCuda: return "cuda:" + std::to_string(index);
  }
  return "unknown";
}

}  // namespace geomx
