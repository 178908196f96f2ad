#include "engine/cpu/max_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/cpu/parallel_for.h"

namespace geomx::cpu {

namespace {

bool IsTwoByTwo(const Pool2dParams& p) {
  return p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 && p.pad_h == 0 && p.pad_w == 0;
}

// The common 2x2 stride-2 window without padding. Four outputs at a time with SSE2 (part of every x86-64 CPU),
// the rest one by one with the same rule: pairwise maxima with strict comparisons, so that of equal values the
// first in row-major window order wins, as in the general loop.
#if defined(__SSE2__)
constexpr int64_t kLanes = 4;

// The even and odd elements of 8 consecutive floats.
inline void Deinterleave(const float* p, __m128* even, __m128* odd) {
  const __m128 lo = _mm_loadu_ps(p), hi = _mm_loadu_ps(p + 4);
  *even = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  *odd = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
}

// Four outputs of two input rows; the winners' offsets as four bytes.
inline void TwoByTwoLanes(const float* r0, const float* r1, float* y, uint8_t* argmax) {
  __m128 a, b, c, d;
  Deinterleave(r0, &a, &b);
  Deinterleave(r1, &c, &d);
  const __m128 top = _mm_max_ps(a, b), bottom = _mm_max_ps(c, d);
  _mm_storeu_ps(y, _mm_max_ps(top, bottom));
  if (argmax == nullptr) return;
  const __m128i one = _mm_set1_epi32(1);
  const __m128i top_right = _mm_and_si128(_mm_castps_si128(_mm_cmpgt_ps(b, a)), one);
  const __m128i bottom_right = _mm_and_si128(_mm_castps_si128(_mm_cmpgt_ps(d, c)), one);
  const __m128i lower = _mm_castps_si128(_mm_cmpgt_ps(bottom, top));
  const __m128i at = _mm_or_si128(_mm_and_si128(lower, _mm_add_epi32(bottom_right, _mm_set1_epi32(2))),
                                  _mm_andnot_si128(lower, top_right));
  const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(at, at), _mm_setzero_si128());
  const int32_t packed = _mm_cvtsi128_si32(bytes);
  std::memcpy(argmax, &packed, sizeof(packed));
}

// dy of four outputs to their 2x4 inputs: each goes to its winner, the others get 0.
inline void TwoByTwoLanesBack(const float* dy, const uint8_t* argmax, float* r0, float* r1) {
  int32_t packed;
  std::memcpy(&packed, argmax, sizeof(packed));
  const __m128i zero = _mm_setzero_si128();
  const __m128i at = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(packed), zero), zero);
  const __m128 v = _mm_loadu_ps(dy);
  const auto pick = [&](int k) { return _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(at, _mm_set1_epi32(k))), v); };
  const __m128 p0 = pick(0), p1 = pick(1), p2 = pick(2), p3 = pick(3);
  _mm_storeu_ps(r0, _mm_unpacklo_ps(p0, p1));
  _mm_storeu_ps(r0 + 4, _mm_unpackhi_ps(p0, p1));
  _mm_storeu_ps(r1, _mm_unpacklo_ps(p2, p3));
  _mm_storeu_ps(r1 + 4, _mm_unpackhi_ps(p2, p3));
}
#endif

void TwoByTwoForward(const PoolPlanes& g, int64_t plane, const float* x, float* y, uint8_t* argmax) {
  const float* xp = x + plane * g.h * g.w;
  float* yp = y + plane * g.oh * g.ow;
  uint8_t* ap = argmax != nullptr ? argmax + plane * g.oh * g.ow : nullptr;
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    const float* r0 = xp + 2 * oh * g.w;
    const float* r1 = r0 + g.w;
    float* yr = yp + oh * g.ow;
    uint8_t* ar = ap != nullptr ? ap + oh * g.ow : nullptr;
    int64_t ow = 0;
#if defined(__SSE2__)
    for (; ow + kLanes <= g.ow; ow += kLanes) {
      TwoByTwoLanes(r0 + 2 * ow, r1 + 2 * ow, yr + ow, ar != nullptr ? ar + ow : nullptr);
    }
#endif
    for (; ow < g.ow; ++ow) {
      const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
      const bool top_right = b > a, bottom_right = d > c;
      const float top = top_right ? b : a, bottom = bottom_right ? d : c;
      const bool lower = bottom > top;
      yr[ow] = lower ? bottom : top;
      if (ar != nullptr) {
        ar[ow] = static_cast<uint8_t>(lower ? 2 + static_cast<int>(bottom_right) : static_cast<int>(top_right));
      }
    }
  }
}

void TwoByTwoBackward(const PoolPlanes& g, int64_t plane, const float* dy, const uint8_t* argmax, float* dx) {
  float* dp = dx + plane * g.h * g.w;
  const float* gp = dy + plane * g.oh * g.ow;
  const uint8_t* ap = argmax + plane * g.oh * g.ow;
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    float* r0 = dp + 2 * oh * g.w;
    float* r1 = r0 + g.w;
    const float* gr = gp + oh * g.ow;
    const uint8_t* ar = ap + oh * g.ow;
    int64_t ow = 0;
#if defined(__SSE2__)
    for (; ow + kLanes <= g.ow; ow += kLanes) TwoByTwoLanesBack(gr + ow, ar + ow, r0 + 2 * ow, r1 + 2 * ow);
#endif
    for (; ow < g.ow; ++ow) {
      const float v = gr[ow];
      const int at = ar[ow];
      r0[2 * ow] = at == 0 ? v : 0.0f;
      r0[2 * ow + 1] = at == 1 ? v : 0.0f;
      r1[2 * ow] = at == 2 ? v : 0.0f;
      r1[2 * ow + 1] = at == 3 ? v : 0.0f;
    }
    // An odd width leaves the last column out of every window.
    for (int64_t col = 2 * g.ow; col < g.w; ++col) r0[col] = r1[col] = 0.0f;
  }
  // An odd height leaves the last row out of every window.
  for (int64_t row = 2 * g.oh; row < g.h; ++row) std::memset(dp + row * g.w, 0, sizeof(float) * g.w);
}

// The window of output (oh, ow) clipped to the input: rows [y0 + ky_lo, y0 + ky_hi), columns likewise.
struct Window {
  int64_t y0, x0;
  int ky_lo, ky_hi, kx_lo, kx_hi;
};

Window WindowOf(const Pool2dParams& p, const PoolPlanes& g, int64_t oh, int64_t ow) {
  Window win;
  win.y0 = oh * p.stride_h - p.pad_h;
  win.x0 = ow * p.stride_w - p.pad_w;
  win.ky_lo = static_cast<int>(std::max<int64_t>(0, -win.y0));
  win.ky_hi = static_cast<int>(std::min<int64_t>(p.kernel_h, g.h - win.y0));
  win.kx_lo = static_cast<int>(std::max<int64_t>(0, -win.x0));
  win.kx_hi = static_cast<int>(std::min<int64_t>(p.kernel_w, g.w - win.x0));
  return win;
}

void GeneralForward(const Pool2dParams& p, const PoolPlanes& g, int64_t plane, const float* x, float* y,
                    uint8_t* argmax) {
  const float* xp = x + plane * g.h * g.w;
  const int64_t out_base = plane * g.oh * g.ow;
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const Window win = WindowOf(p, g, oh, ow);
      float best = -INFINITY;
      int at = win.ky_lo * p.kernel_w + win.kx_lo;  // Pool2dOutputShape keeps every window non-empty
      for (int ky = win.ky_lo; ky < win.ky_hi; ++ky) {
        const float* row = xp + (win.y0 + ky) * g.w + win.x0;
        for (int kx = win.kx_lo; kx < win.kx_hi; ++kx) {
          if (row[kx] > best) {
            best = row[kx];
            at = ky * p.kernel_w + kx;
          }
        }
      }
      y[out_base + oh * g.ow + ow] = best;
      if (argmax != nullptr) argmax[out_base + oh * g.ow + ow] = static_cast<uint8_t>(at);
    }
  }
}

void GeneralBackward(const Pool2dParams& p, const PoolPlanes& g, int64_t plane, const float* dy,
                     const uint8_t* argmax, float* dx) {
  float* dp = dx + plane * g.h * g.w;
  std::memset(dp, 0, sizeof(float) * g.h * g.w);
  const int64_t out_base = plane * g.oh * g.ow;
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const Window win = WindowOf(p, g, oh, ow);
      const int at = argmax[out_base + oh * g.ow + ow];
      const int ky = at / p.kernel_w, kx = at % p.kernel_w;
      dp[(win.y0 + ky) * g.w + win.x0 + kx] += dy[out_base + oh * g.ow + ow];
    }
  }
}

// body(plane) for every plane, the planes split over the OpenMP pool (parallel_for.h).
template <typename Body>
void ForEachPlane(const PoolPlanes& g, const Body& body) {
  ParallelFor(g.planes, g.h * g.w, [&](int64_t lo, int64_t hi) {
    for (int64_t plane = lo; plane < hi; ++plane) body(plane);
  });
}

}  // namespace

bool MaxPoolDirectApplies(const Pool2dParams& p) {
  return p.kind == PoolKind::kMax && p.kernel_h > 0 && p.kernel_w > 0 &&
         static_cast<int64_t>(p.kernel_h) * p.kernel_w <= kMaxPoolWindowLimit;
}

void MaxPoolForward(const Pool2dParams& p, const PoolPlanes& g, const float* x, float* y, uint8_t* argmax) {
  if (IsTwoByTwo(p)) {
    ForEachPlane(g, [&](int64_t plane) { TwoByTwoForward(g, plane, x, y, argmax); });
  } else {
    ForEachPlane(g, [&](int64_t plane) { GeneralForward(p, g, plane, x, y, argmax); });
  }
}

void MaxPoolBackward(const Pool2dParams& p, const PoolPlanes& g, const float* dy, const uint8_t* argmax,
                     float* dx) {
  if (IsTwoByTwo(p)) {
    ForEachPlane(g, [&](int64_t plane) { TwoByTwoBackward(g, plane, dy, argmax, dx); });
  } else {
    ForEachPlane(g, [&](int64_t plane) { GeneralBackward(p, g, plane, dy, argmax, dx); });
  }
}

}  // namespace geomx::cpu
