// The wire format of geomx's parameter server (mirrors docs/wire_format.md; change both together, R13).
// A message is a ZeroMQ multipart message: frame 0 is the msgpack-encoded Meta (codec.h), frames 1..n are the
// data frames (raw little-endian arrays: keys' values, indices, ...) whose meaning depends on the command.
#pragma once

#include <cstdint>

namespace geomx::comm {

// Bump on any change of Meta's fields or of a command's frame layout. A node refuses other versions.
inline constexpr uint16_t kProtocolVersion = 1;

enum class Command : uint8_t {
  kRegister = 1,     // node -> scheduler: body = NodeInfo of the sender (no id yet)
  kNodeTable = 2,    // scheduler -> all: body = the tier's node table (ids assigned)
  kBarrier = 3,      // node -> scheduler: body = group name; request
  kBarrierDone = 4,  // scheduler -> node: response to kBarrier
  kHeartbeat = 5,    // node -> scheduler, periodically
  kShutdown = 6,     // scheduler -> all: leave; node -> scheduler: I am done (request)
  kPush = 7,         // worker -> server: values for keys (data: one frame per key slice)
  kPull = 8,         // worker -> server: request values; response carries them
  kPushPull = 9,     // push, and respond with the updated values (one round trip instead of two)
  kControl = 10,     // application-level command, body = typed msgpack payload (e.g. optimizer settings)
  kError = 11,       // response refusing a request; body = reason
  kNodeLeft = 12,    // scheduler -> all: a worker left and the tier goes on without it; body = id and reason
  kNodeJoined = 13,  // scheduler -> all (request, acked): a lost worker rejoined at a new endpoint; body = id, endpoint
};

// kNodeTable's timestamp when it answers a worker that rejoins a running tier (comm/scheduler.h); 0 otherwise.
inline constexpr int64_t kRejoinTable = 1;

// "push", "barrier_done", ...; "unknown" for a value outside the enum.
const char* CommandName(Command c);
// True when `value` is one of the Command enumerators (a decoder refuses anything else).
bool IsKnownCommand(uint8_t value);

}  // namespace geomx::comm
