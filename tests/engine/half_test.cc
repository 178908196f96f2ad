#include "engine/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/base/rng.h"

namespace geomx {
namespace {

// Independent reference: the value of a binary16 bit pattern from its definition.
double ReferenceHalfValue(uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -24);
  return sign * std::ldexp(1.0 + m / 1024.0, e - 15);
}

// Independent reference rounding: the nearest finite half (ties to the even bit pattern), or inf past the
// rounding boundary 65520 = max + half an ulp.
uint16_t ReferenceFloatToHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return 0x7e00;  // callers compare NaN-ness only
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  // Binary search the positive finite halves 0x0000..0x7bff, which are ordered like their bit patterns.
  uint16_t lo = 0, hi = 0x7bff;
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (ReferenceHalfValue(mid) <= a) lo = mid; else hi = mid;
  }
  if (ReferenceHalfValue(hi) <= a) lo = hi;  // a at or above the largest finite half
  if (ReferenceHalfValue(lo) == a || lo == 0x7bff) return sign | lo;
  hi = static_cast<uint16_t>(lo + 1);
  const double dl = a - ReferenceHalfValue(lo), dh = ReferenceHalfValue(hi) - a;
  if (dl < dh) return sign | lo;
  if (dh < dl) return sign | hi;
  return sign | ((lo & 1) ? hi : lo);
}

TEST(HalfTest, EveryHalfDecodesToItsDefinedValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float got = HalfBitsToFloat(static_cast<uint16_t>(h));
    const double want = ReferenceHalfValue(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
      ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    }
  }
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const uint16_t back = FloatToHalfBits(HalfBitsToFloat(bits));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      // NaN stays NaN with its sign, top payload bits kept and the quiet bit set.
      EXPECT_EQ(back, bits | 0x0200) << std::hex << h;
    } else {
      ASSERT_EQ(back, bits) << std::hex << h;
    }
  }
}

TEST(HalfTest, EdgeValues) {
  EXPECT_EQ(FloatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(FloatToHalfBits(65519.99f), 0x7bff);  // just below the rounding boundary
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);   // tie between max and 2^16: even (inf)
  EXPECT_EQ(FloatToHalfBits(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(INFINITY), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-INFINITY), 0xfc00);
  const uint16_t nan = FloatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(nan)));
  EXPECT_NE(FloatToHalfBits(std::bit_cast<float>(0x7f800001u)) & 0x3ff, 0);  // signalling NaN stays NaN
  EXPECT_EQ(FloatToHalfBits(0x1p-14f), 0x0400);           // smallest normal
  EXPECT_EQ(FloatToHalfBits(0x1p-24f), 0x0001);           // smallest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1p-25f), 0x0000);           // half of it: tie to even (zero)
  EXPECT_EQ(FloatToHalfBits(0x1.8p-25f), 0x0001);         // above the tie
  EXPECT_EQ(FloatToHalfBits(0x1.8p-24f), 0x0002);         // 1.5 ulp: tie, to even (2)
  EXPECT_EQ(FloatToHalfBits(0x1.4p-24f), 0x0001);         // 1.25 ulp: down
  EXPECT_EQ(FloatToHalfBits(-0x1p-26f), 0x8000);          // underflow keeps the sign
  EXPECT_EQ(FloatToHalfBits(0x1.ff8p-15f), 0x03ff);       // largest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1.ffap-15f), 0x03ff);       // below the tie with the smallest normal
  EXPECT_EQ(FloatToHalfBits(0x1.ffcp-15f), 0x0400);       // tie: to even, up into the normals
  EXPECT_EQ(FloatToHalfBits(1.0f + 0x1p-11f), 0x3c00);    // tie: to even (down)
  EXPECT_EQ(FloatToHalfBits(1.0f + 0x3p-11f), 0x3c02);    // tie: to even (up)
  EXPECT_EQ(FloatToHalfBits(1.0f + 0x1.2p-11f), 0x3c01);  // above the tie
  EXPECT_EQ(FloatToHalfBits(std::bit_cast<float>(1u)), 0x0000);  // float subnormal -> 0
  EXPECT_EQ(HalfBitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(HalfBitsToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::signbit(HalfBitsToFloat(0x8000)));
}

TEST(HalfTest, RandomFloatsMatchReferenceRounding) {
  Rng rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns concentrated on the half range (exponents 100..145) plus fully random ones.
    uint32_t bits = static_cast<uint32_t>(rng.NextU64());
    if (i % 4 != 0) bits = (bits & 0x807fffffu) | ((100u + static_cast<uint32_t>(rng.Below(46))) << 23);
    const float f = std::bit_cast<float>(bits);
    const uint16_t got = FloatToHalfBits(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfBitsToFloat(got)));
      continue;
    }
    ASSERT_EQ(got, ReferenceFloatToHalf(f)) << std::hexfloat << f;
  }
}

TEST(HalfTest, BulkConversionsMatchScalar) {
  Rng rng(11);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{64}, size_t{1003}}) {
    std::vector<float> in(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits = static_cast<uint32_t>(rng.NextU64());
      bits = (bits & 0x807fffffu) | ((98u + static_cast<uint32_t>(rng.Below(50))) << 23);
      in[i] = std::bit_cast<float>(bits);
    }
    if (n > 5) {  // specials inside the vector part
      in[0] = INFINITY;
      in[1] = -0.0f;
      in[2] = 65520.0f;
      in[3] = 0x1p-25f;
      in[4] = 1.0f + 0x1p-11f;
    }
    std::vector<uint16_t> h(n);
    FloatToHalf(in.data(), h.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], FloatToHalfBits(in[i])) << i;
    std::vector<float> back(n);
    HalfToFloat(h.data(), back.data(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(HalfBitsToFloat(h[i]))) << i;
    }
  }
  // NaN through the bulk path stays NaN.
  std::vector<float> nans(16, std::numeric_limits<float>::quiet_NaN());
  std::vector<uint16_t> hn(16);
  FloatToHalf(nans.data(), hn.data(), nans.size());
  for (uint16_t v : hn) EXPECT_TRUE(std::isnan(HalfBitsToFloat(v)));
}

TEST(BFloat16Test, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16Bits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToBFloat16Bits(0.0f), 0x0000);
  EXPECT_EQ(FloatToBFloat16Bits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie: even (down)
  EXPECT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie: even (up)
  EXPECT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(FloatToBFloat16Bits(INFINITY), 0x7f80);
  EXPECT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(FloatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lives only in the low 16 bits must not become inf.
  EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(FloatToBFloat16Bits(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_EQ(BFloat16BitsToFloat(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16BitsToFloat(0x4049), 3.140625f);
  // Every bf16 round-trips exactly.
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) continue;  // NaN payloads gain the quiet bit
    ASSERT_EQ(FloatToBFloat16Bits(BFloat16BitsToFloat(static_cast<uint16_t>(b))), b) << std::hex << b;
  }
}

}  // namespace
}  // namespace geomx
