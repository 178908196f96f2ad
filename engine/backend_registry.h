// The backends compiled into this binary. backend_registry.cc is the ONLY file that knows which ones exist
// (docs/style.md R6): `#if GEOMX_WITH_CUDA` lives there and nowhere else outside engine/cuda/.
#pragma once

#include <vector>

#include "engine/backend.h"
#include "engine/base/status.h"
#include "engine/device.h"

namespace geomx {

// The backend for a device kind. Process-lifetime object; aborts if the kind was not compiled in (callers check
// DeviceAvailable first at the edges).
Backend& BackendFor(DeviceKind kind);
inline Backend& BackendFor(Device d) { return BackendFor(d.kind); }

// True when the kind is compiled in AND a device of that kind is visible at runtime.
bool DeviceAvailable(Device device);
// Every usable device (always contains Cpu()). Tests parameterise over this (docs/style.md R14).
std::vector<Device> AvailableDevices();
// Resolves a recipe's device string: "cpu", "cuda", "cuda:N" or "auto" (CUDA when visible, else CPU).
// kFailedPrecondition when CUDA was asked for and is not available (names why).
Result<Device> ResolveDevice(const std::string& spec);

}  // namespace geomx
