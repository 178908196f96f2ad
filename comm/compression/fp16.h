// IEEE 754 binary32 <-> binary16 conversion paths behind comm::FloatToHalf / HalfToFloat (compressor.h), exposed
// so tests can check the portable path against the hardware one. Pure, thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace geomx::comm::fp16 {

// Portable conversion: round-to-nearest-even, subnormals produced and consumed, +-inf kept, NaN stays NaN (quiet
// bit set, sign and the top payload bits kept: what F16C does).
uint16_t FloatToHalfScalar(float f);
float HalfToFloatScalar(uint16_t h);

// Whether this CPU has F16C (x86-64 only); FloatToHalf/HalfToFloat use it when true.
bool HasF16c();
// Hardware paths; fall back to the scalar ones when !HasF16c().
void FloatToHalfF16c(std::span<const float> in, std::span<uint16_t> out);
void HalfToFloatF16c(std::span<const uint16_t> in, std::span<float> out);

}  // namespace geomx::comm::fp16
