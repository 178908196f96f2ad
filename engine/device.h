// Device: where a tensor lives. A plain value type with no behaviour: {kind, index}.
#pragma once

#include <string>

namespace geomx {

enum class DeviceKind : uint8_t { kCpu = 0, kCuda = 1 };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  static constexpr Device Cpu() { return Device{DeviceKind::kCpu, 0}; }
  static constexpr Device Cuda(int i = 0) { return Device{DeviceKind::kCuda, i}; }
  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  // "cpu", "cuda:0"
  std::string ToString() const;
};

}  // namespace geomx
