// IEEE 754 binary16 and bfloat16 conversions, round-to-nearest-even, with subnormals, infinities and NaN.
// Host code (and, later, device code through GEOMX_HOST_DEVICE in kernels/) uses these; no math elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace geomx {

struct Half { uint16_t bits = 0; };
struct BFloat16 { uint16_t bits = 0; };

uint16_t FloatToHalfBits(float f);
float HalfBitsToFloat(uint16_t h);
uint16_t FloatToBFloat16Bits(float f);
float BFloat16BitsToFloat(uint16_t b);

// Bulk conversions (vectorised with F16C when the CPU has it).
void FloatToHalf(const float* in, uint16_t* out, size_t n);
void HalfToFloat(const uint16_t* in, float* out, size_t n);

}  // namespace geomx
