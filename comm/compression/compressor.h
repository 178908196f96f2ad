// Compression of the values that travel between parameter-server tiers (recipe `accelerators`,
// docs/accelerators.md, wire format in docs/wire_format.md "Compressed frames").
//
// A compressed request carries Meta.codec == kCompressedCodec and one self-describing *frame* per wire key:
//   header: u32 magic 'GXC1' | u8 kind | u8 reserved[3] | u64 length (elements of the dense slice)
//   kind kRaw    length x f32
//   kind kFp16   length x IEEE binary16 (round-to-nearest-even, subnormals, inf, NaN preserved)
//   kind kSparse u64 count | count x u32 index (strictly increasing, < length) | count x f32 value
//   kind kSign   1-bit signs with per-block scales (sign.h); kind kInt8: int8 with per-block scales (int8.h);
//                kind kPowerSgd: rank-r factors (powersgd.h).
//                These kinds register their validator and decoder (RegisterFrameKind) from their own file.
// A receiver decodes any frame without knowing which compressor made it (DecodeFrame / AddFrame), so one
// request may mix kinds (MPQ: small slices FP16, large ones sparse).
//
// A Compressor turns one dense slice into a frame. It is immutable and shared; everything it remembers between
// calls (error-feedback residual, momentum, the call counter that seeds sampling) lives in the caller's
// CompressorState, one per (link, wire key), kept by the *sender*. Built-in compressors (registry names):
//   "raw"     kRaw, lossless
//   "fp16"    kFp16
//   "sparse"  lossless: every non-zero as (index, value); falls back to kRaw when that is smaller (used on pull
//             links, where the value is a sum of sparse pushes: Bi-Sparse's "union of selections")
//   "bsc"     Bi-Sparse push (DGC-style): u = m*u + g (momentum correction, m = config.momentum), v = b*v + u
//             (or v = b*v + g when m == 0; b = config.residual_decay, 1 but for diloco's SparseLoCo);
//             keep k = max(1, floor(ratio*length)) entries of largest |v| (exact
//             selection, or a threshold estimated from a fresh random sample: config.selection); send them as
//             kSparse; zero them in v (and u): what was not sent stays in the residual v.
//             Invariant (tested): sum of everything decoded + residual == sum of everything pushed (m == 0, b == 1).
//   "sign"    EF-SignSGD (sign.h): v = value + residual; per block, mean |v| and the sign bits; residual = v - decoded
//   "int8"    int8 with per-block scales max |v| / 127 (int8.h), optional stochastic rounding; error feedback
//   "powersgd" rank-r factors P, Q of the slice as a matrix (powersgd.h), warm start, error feedback
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/bytes.h"
#include "engine/base/registry.h"
#include "engine/base/status.h"

namespace geomx::comm {

inline constexpr const char* kCompressedCodec = "gx";

enum class FrameKind : uint8_t { kRaw = 0, kFp16 = 1, kSparse = 2, kSign = 3, kInt8 = 4, kPowerSgd = 5 };

inline constexpr size_t kFrameHeaderBytes = 16;  // magic, kind, 3 reserved bytes, u64 length

struct CompressorConfig {
  float ratio = 0.01f;            // bsc: kept fraction, (0, 1)
  float momentum = 0.0f;          // bsc: momentum correction, [0, 1)
  float residual_decay = 1.0f;    // bsc: the residual decays by this before each push is added, [0, 1]
                                  // (1: plain error feedback; < 1: SparseLoCo's error feedback, diloco)
  bool sampled = false;           // bsc: threshold from a random sample instead of exact selection
  float sample_fraction = 0.005f; // bsc sampled: share of elements sampled (at least a few hundred are taken)
  uint64_t seed = 42;             // bsc sampled: mixed with the state's call counter: fresh randomness per call
                                  // int8 stochastic: mixed with CompressorState::stream and the round
  uint32_t sign_block = 4096;     // sign: elements per scale (the last block may be shorter), >= 1
  uint32_t int8_block = 256;      // int8: elements per scale, >= 1
  bool int8_stochastic = false;   // int8: stochastic rounding (unbiased) instead of round-to-nearest
  uint32_t powersgd_rank = 4;     // powersgd: rank r of the factors, >= 1
};

// The sender's memory for one wire key of one link. Empty until the first Encode.
struct CompressorState {
  std::vector<float> residual;  // bsc: v
  std::vector<float> momentum;  // bsc: u
  uint64_t calls = 0;            // the round: how many times this key was encoded
  uint64_t stream = 0;           // identifies (sender, link, wire key) for seeded randomness (LinkEncoder sets it)
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  virtual std::string_view name() const = 0;
  // Encodes one dense slice. The state must belong to this (link, wire key); its vectors are sized on first use
  // (a later call with another length is kInvalidArgument).
  virtual Result<Bytes> Encode(std::span<const float> values, CompressorState& state) const = 0;
};

using CompressorRegistry = Registry<Compressor, const CompressorConfig&>;

// kNotFound listing the known names for an unknown name.
Result<std::unique_ptr<Compressor>> MakeCompressor(const std::string& name, const CompressorConfig& config);

// The dense slice length a frame describes; kDataLoss for a frame that is not well formed (bad magic, kind,
// truncated, trailing bytes, indices out of range or not increasing, counts that do not match the size).
Result<uint64_t> FrameLength(const Bytes& frame);
// Checks a frame completely (as FrameLength) and that it describes `length` elements.
Status ValidateFrame(const Bytes& frame, uint64_t length);
// out = decoded frame (out.size() must equal the frame's length). Validates first; `out` is untouched on error.
Status DecodeFrame(const Bytes& frame, std::span<float> out);
// acc += decoded frame (the reducer "gx_sum"). Validates first; `acc` is untouched on error.
Status AddFrame(const Bytes& frame, std::span<float> acc);
// Frame kinds beyond kRaw/kFp16/kSparse describe themselves to the decoder here, once, from their own file.
// `check` validates a body (the bytes after the 16-byte header) for a frame of `length` elements: every size
// compared against `body_size` without overflow; returns kDataLoss naming the problem. `decode` writes the
// `length` decoded values of a checked body to `out`. Thread-safe after static initialisation.
struct FrameKindDef {
  FrameKind kind;
  const char* name;
  Status (*check)(const uint8_t* body, uint64_t body_size, uint64_t length);
  void (*decode)(const uint8_t* body, uint64_t length, float* out);
};
bool RegisterFrameKind(const FrameKindDef& def);  // false when the kind was taken
// A frame of `kind` with the header filled in and `body` zeroed bytes after it.
Bytes NewFrame(FrameKind kind, uint64_t length, size_t body);
// splitmix64, for seeding.
uint64_t MixBits(uint64_t x);

// A kRaw frame of `values` (e.g. initial weights sent into a compressed tier).
Bytes RawFrame(std::span<const float> values);

// IEEE 754 binary32 <-> binary16, round-to-nearest-even; F16C instructions when the CPU has them.
void FloatToHalf(std::span<const float> in, std::span<uint16_t> out);
void HalfToFloat(std::span<const uint16_t> in, std::span<float> out);

}  // namespace geomx::comm
