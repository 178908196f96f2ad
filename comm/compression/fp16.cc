#include "comm/compression/fp16.h"

#include <cstring>

#include "comm/compression/compressor.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEOMX_HAVE_F16C_PATH 1
#include <immintrin.h>
#if defined(__clang__)
#include <cpuid.h>
#endif
#else
#define GEOMX_HAVE_F16C_PATH 0
#endif

namespace geomx::comm {
namespace fp16 {

uint16_t FloatToHalfScalar(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) {  // inf or NaN
    if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: rounds to inf
  const uint32_t e = a >> 23;
  if (e <= 112) {  // below 2^-14: a half subnormal (or zero); unit 2^-24
    if (e < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal: still correct
    return static_cast<uint16_t>(sign | r);
  }
  const uint32_t r = a - (112u << 23);  // rebias 127 -> 15
  uint32_t h = r >> 13;
  const uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloatScalar(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    std::memcpy(&x, &v, 4);
    x |= sign;
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13) | (m != 0 ? 0x00400000u : 0u);  // NaN comes out quiet (as F16C)
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

#if GEOMX_HAVE_F16C_PATH
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

__attribute__((target("avx,f16c"))) static void ToHalfHw(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = FloatToHalfScalar(in[i]);
}

__attribute__((target("avx,f16c"))) static void ToFloatHw(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = HalfToFloatScalar(in[i]);
}

void FloatToHalfF16c(std::span<const float> in, std::span<uint16_t> out) {
  if (!HasF16c()) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = FloatToHalfScalar(in[i]);
    return;
  }
  ToHalfHw(in.data(), out.data(), in.size());
}
void HalfToFloatF16c(std::span<const uint16_t> in, std::span<float> out) {
  if (!HasF16c()) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = HalfToFloatScalar(in[i]);
    return;
  }
  ToFloatHw(in.data(), out.data(), in.size());
}
#else
bool HasF16c() { return false; }
void FloatToHalfF16c(std::span<const float> in, std::span<uint16_t> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = FloatToHalfScalar(in[i]);
}
void HalfToFloatF16c(std::span<const uint16_t> in, std::span<float> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = HalfToFloatScalar(in[i]);
}
#endif

}  // namespace fp16

void FloatToHalf(std::span<const float> in, std::span<uint16_t> out) {
  const size_t n = in.size() < out.size() ? in.size() : out.size();
  fp16::FloatToHalfF16c(in.first(n), out.first(n));
}
void HalfToFloat(std::span<const uint16_t> in, std::span<float> out) {
  const size_t n = in.size() < out.size() ? in.size() : out.size();
  fp16::HalfToFloatF16c(in.first(n), out.first(n));
}

}  // namespace geomx::comm
