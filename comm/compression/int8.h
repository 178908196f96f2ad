// "int8": int8 quantisation with per-block scales and error feedback, registered as compressor "int8", frame kind
// kInt8 and link scheme "int8" (accelerators.compression / links: int8; docs/accelerators.md).
//
// Encode(g, state), per wire key of one link, by its sender:
//   v = g + residual
//   per block of CompressorConfig::int8_block elements (the last may be shorter): scale = max |v| / 127 (f32)
//   code = round(v / scale) clamped to [-127, 127]: to nearest (ties away from zero), or with
//   int8_stochastic stochastic rounding, floor(x) + (u < x - floor(x)), u uniform in [0, 1) from a counter-based
//   generator seeded by (CompressorConfig::seed, CompressorState::stream = sender/link/wire key, round, element):
//   unbiased, and reproducible for a given seed
//   decoded = code * scale;  residual = v - decoded   (error feedback)
//   A block of zeros has scale 0 and codes 0. A block holding inf or NaN gets scale NaN and codes 0, so the
//   receiver sees NaN (as with the dense links) instead of a silently dropped value.
// Frame (docs/wire_format.md "Compressed frames"), after the 16-byte header with kind 4:
//   u32 block | u32 0 | ceil(n / block) x f32 scale | n x i8 code
// Size: 24 + 4 * ceil(n / block) + n bytes for n elements (Int8FrameBytes).
#pragma once

#include <cstdint>

namespace geomx::comm {

uint64_t Int8FrameBytes(uint64_t elements, uint32_t block);

}  // namespace geomx::comm
