#include "engine/half.h"

#include <bit>

#if defined(__x86_64__) && defined(__F16C__)
#include <immintrin.h>
#define GEOMX_HALF_HAS_F16C 1
#if defined(__clang__)
#include <cpuid.h>
#endif
#else
#define GEOMX_HALF_HAS_F16C 0
#endif

namespace geomx {

uint16_t FloatToHalfBits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) {
    // NaN: keep the top payload bits and force the quiet bit (what F16C's vcvtps2ph does).
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // |f| >= 65536 (and inf) -> inf
  if (a >= 0x38800000u) {
    // Normal half range: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
    // A carry out of the mantissa correctly bumps the exponent, up to inf for [65520, 65536).
    const uint32_t m = a - 0x38000000u;
    return static_cast<uint16_t>(sign | ((m + 0xfffu + ((m >> 13) & 1u)) >> 13));
  }
  if (a < 0x33000000u) return sign;  // below 2^-25: rounds to (signed) zero
  // Subnormal half: the value in units of 2^-24 is mant >> shift, shift in [14, 24]; round to nearest even.
  const uint32_t e = a >> 23;
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));  // inf / NaN
  if (e != 0) return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
  // Zero or subnormal: m * 2^-24 is exact in float.
  const float v = static_cast<float>(m) * 0x1p-24f;
  return sign ? -v : v;
}

uint16_t FloatToBFloat16Bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float BFloat16BitsToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

namespace {

#if GEOMX_HALF_HAS_F16C
// This file is compiled with -mf16c, but the vector paths below run only after this runtime check says yes, so
// the scalar paths keep working on CPUs without F16C.
bool HasF16c() {
#if defined(__clang__)
  // clang (14) knows no "f16c" feature name for __builtin_cpu_supports: CPUID leaf 1, ECX bit 29.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  static const bool has = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0 &&
                          __builtin_cpu_supports("avx");
#else
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#endif
  return has;
}

// Converts the largest multiple of 8 elements; returns how many were done.
size_t FloatToHalfF16c(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  return i;
}

size_t HalfToFloatF16c(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  return i;
}
#endif

}  // namespace

void FloatToHalf(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
#if GEOMX_HALF_HAS_F16C
  if (HasF16c()) i = FloatToHalfF16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = FloatToHalfBits(in[i]);
}

void HalfToFloat(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
#if GEOMX_HALF_HAS_F16C
  if (HasF16c()) i = HalfToFloatF16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = HalfBitsToFloat(in[i]);
}

}  // namespace geomx
