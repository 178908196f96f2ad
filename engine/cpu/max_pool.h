// Max pooling on NCHW f32 planes as plain loops: CpuBackend's max pooling (onednn_pool.cc keeps average pooling).
//
// Why not oneDNN: the engine keeps activations in plain NCHW between ops, and oneDNN's pooling on that layout is
// several times slower than memory speed (on the 2x2 pools of geomx-cnn, forward plus backward were a quarter of a
// training step; `geomx bench kernels`, docs/benchmarks.md). Windows are small and independent: a loop over each
// plane is as fast as reading the input once.
//
// Contract (the same as Backend::Pool2dForward/Backward for max pooling):
//  - the output is the largest input of each window; positions in the padding never win; on a tie the first
//    position in row-major window order wins; a NaN in a window is not propagated reliably (its winner is
//    unspecified), as with oneDNN;
//  - the workspace is one byte per output: the winner's offset in its window, ky * kernel_w + kx, so windows have
//    at most kMaxPoolWindowLimit positions (MaxPoolDirectApplies);
//  - backward: dx is zero except at the winners, where it sums the dy of every window the position won
//    (overlapping windows can pick the same input).
// Only engine/cpu/ includes it.
#pragma once

#include <cstdint>

#include "engine/op_params.h"

namespace geomx::cpu {

inline constexpr int kMaxPoolWindowLimit = 255;

struct PoolPlanes {
  int64_t planes = 0;  // N * C
  int64_t h = 0, w = 0;    // input plane
  int64_t oh = 0, ow = 0;  // output plane
};

// Whether these loops take `p`: max pooling with a window the one-byte workspace can index.
bool MaxPoolDirectApplies(const Pool2dParams& p);

// y: planes x oh x ow; argmax (may be null: inference): one byte per output.
void MaxPoolForward(const Pool2dParams& p, const PoolPlanes& g, const float* x, float* y, uint8_t* argmax);

// dx: planes x h x w, fully written.
void MaxPoolBackward(const Pool2dParams& p, const PoolPlanes& g, const float* dy, const uint8_t* argmax,
                     float* dx);

}  // namespace geomx::cpu
