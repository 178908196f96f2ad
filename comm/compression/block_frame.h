// The layout the per-block quantising codecs (sign.h, int8.h) share after the 16-byte frame header:
//   u32 block (elements per scale, >= 1) | u32 reserved (0) | nblocks x f32 scale | payload
// with nblocks = ceil(length / block) and a payload whose size the codec derives from `length`. Internal to
// comm/compression; pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "comm/compression/compressor.h"
#include "engine/base/status.h"

namespace geomx::comm::block_frame {

inline constexpr size_t kPrefixBytes = 8;  // u32 block, u32 reserved

inline uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Frame size in bytes (header included) for `length` elements, `block` per scale, `payload` payload bytes.
inline uint64_t FrameBytes(uint64_t length, uint32_t block, uint64_t payload) {
  return kFrameHeaderBytes + kPrefixBytes + 4 * CeilDiv(length, block) + payload;
}

struct View {
  uint32_t block = 0;
  uint64_t blocks = 0;
  const uint8_t* scales = nullptr;   // blocks x f32 (unaligned)
  const uint8_t* payload = nullptr;
};

// Checks the prefix and that the body holds exactly nblocks scales and `payload_bytes(length)` payload bytes,
// every size compared without overflow. kDataLoss naming the mismatch.
template <typename PayloadBytes>
Result<View> Check(const uint8_t* body, uint64_t body_size, uint64_t length, PayloadBytes payload_bytes) {
  if (body_size < kPrefixBytes) {
    return Status::DataLoss("body of " + std::to_string(body_size) + " bytes is shorter than its 8-byte prefix");
  }
  View v;
  uint32_t reserved = 0;
  std::memcpy(&v.block, body, 4);
  std::memcpy(&reserved, body + 4, 4);
  if (v.block == 0) return Status::DataLoss("block size 0");
  if (reserved != 0) return Status::DataLoss("reserved prefix bytes are not zero");
  v.blocks = CeilDiv(length, v.block);
  const uint64_t rest = body_size - kPrefixBytes;
  if (v.blocks > rest / 4) {
    return Status::DataLoss(std::to_string(v.blocks) + " blocks of " + std::to_string(v.block) +
                            " need more scale bytes than the " + std::to_string(rest) + " left");
  }
  const uint64_t payload = rest - 4 * v.blocks;
  const uint64_t want = payload_bytes(length);
  if (payload != want) {
    return Status::DataLoss("payload of " + std::to_string(payload) + " bytes, expected " + std::to_string(want));
  }
  v.scales = body + kPrefixBytes;
  v.payload = v.scales + 4 * v.blocks;
  return v;
}

// The view of a body that Check accepted.
inline View Trusted(const uint8_t* body, uint64_t length) {
  View v;
  std::memcpy(&v.block, body, 4);
  v.blocks = CeilDiv(length, v.block);
  v.scales = body + kPrefixBytes;
  v.payload = v.scales + 4 * v.blocks;
  return v;
}

inline float Scale(const View& v, uint64_t b) {
  float s;
  std::memcpy(&s, v.scales + 4 * b, 4);
  return s;
}

// A frame of `kind` with the prefix written; returns it and pointers to its scales and payload.
struct Out {
  Bytes frame;
  uint8_t* scales = nullptr;
  uint8_t* payload = nullptr;
};
inline Out Make(FrameKind kind, uint64_t length, uint32_t block, uint64_t payload) {
  const uint64_t blocks = CeilDiv(length, block);
  Out o;
  o.frame = NewFrame(kind, length, kPrefixBytes + 4 * blocks + payload);
  uint8_t* p = o.frame.mutable_data() + kFrameHeaderBytes;
  std::memcpy(p, &block, 4);
  o.scales = p + kPrefixBytes;
  o.payload = o.scales + 4 * blocks;
  return o;
}

// Sizes the residual on first use; kInvalidArgument when a later call has another length.
inline Status PrepareResidual(const char* who, uint64_t n, CompressorState& state) {
  if (state.residual.empty() && n > 0) state.residual.assign(n, 0.0f);
  if (state.residual.size() != n) {
    return Status::InvalidArgument(std::string(who) + ": slice of " + std::to_string(n) +
                                   " elements, this key's state has " + std::to_string(state.residual.size()));
  }
  return Status::Ok();
}

}  // namespace geomx::comm::block_frame
