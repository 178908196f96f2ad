// "powersgd": rank-r low-rank compression with error feedback and warm start (Vogels et al. 2019, "PowerSGD:
// Practical Low-Rank Gradient Compression"), registered as compressor "powersgd", frame kind kPowerSgd and link
// scheme "powersgd" (accelerators.compression / links: powersgd; rank: accelerators.powersgd.rank;
// docs/accelerators.md).
//
// A slice of n elements is read as a matrix M of rows x cols, cols = ceil(sqrt(n)), rows = ceil(n / cols),
// row-major, zero-padded. Encode(g, state), per wire key of one link, by its sender:
//   M = g + residual                                   (error feedback)
//   P = M Q;  orthonormalise P's columns (Gram-Schmidt; a column that vanishes becomes 0)
//   Q = M^T P;  send P (rows x r) and Q (cols x r)
//   decoded = P Q^T;  residual = M - decoded;  keep Q for the next call (warm start: one power iteration per
//   round refines the subspace across rounds)
// with r = min(rank, rows, cols) and Q initialised from a seeded normal draw on the first call. The residual lives
// in CompressorState::residual, Q in CompressorState::momentum.
// Frame (docs/wire_format.md "Compressed frames"), after the 16-byte header with kind 5:
//   u32 rows | u32 cols | u32 r | u32 0 | rows x r f32 P (row-major) | cols x r f32 Q (row-major)
// Size: 32 + 4 r (rows + cols) bytes (PowerSgdFrameBytes); for a 1,000,000-element slice and r = 4: 32,032 bytes
// instead of 4,000,016 (kRaw). The receiver decodes out[i] = sum_k P[i / cols][k] Q[i % cols][k].
#pragma once

#include <cstdint>

namespace geomx::comm {

// The matrix shape of an n-element slice: cols = ceil(sqrt(n)), rows = ceil(n / cols) (both >= 1).
void PowerSgdShape(uint64_t n, uint64_t* rows, uint64_t* cols);
// Bytes of the frame of an n-element slice at rank `rank` (header included).
uint64_t PowerSgdFrameBytes(uint64_t n, uint32_t rank);

}  // namespace geomx::comm
