// "sign": EF-SignSGD (Karimireddy et al. 2019, "Error Feedback Fixes SignSGD"), registered as compressor "sign",
// frame kind kSign and link scheme "sign" (accelerators.compression / links: sign; docs/accelerators.md).
//
// Encode(g, state), per wire key of one link, by its sender:
//   v = g + residual
//   per block of CompressorConfig::sign_block elements (the last may be shorter): scale = mean |v| over the block
//   send scale (f32) and one bit per element: bit set = v < 0 (sign bit), clear = v >= 0
//   decoded = bit ? -scale : +scale;  residual = v - decoded   (error feedback: what was not sent goes next round)
// Frame (docs/wire_format.md "Compressed frames"), after the 16-byte header with kind 3:
//   u32 block | u32 0 | ceil(n / block) x f32 scale | ceil(n / 8) bytes of bits (element i: byte i / 8, bit i % 8,
//   least significant first; unused bits of the last byte are 0)
// Size: 24 + 4 * ceil(n / block) + ceil(n / 8) bytes for n elements (SignFrameBytes).
#pragma once

#include <cstdint>

namespace geomx::comm {

uint64_t SignFrameBytes(uint64_t elements, uint32_t block);

}  // namespace geomx::comm
