// TSEngine's messages (docs/wire_format.md "TSEngine"): the ops, their fields and the checks both sides share.
// Internal to comm/tsengine/ (ts_root.cc, ts_member.cc). Pure functions; thread-safe.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/key_layout.h"
#include "comm/message.h"
#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::comm::ts {

// The ops (body field "op") and their fields.
inline constexpr const char* kOpField = "op";
inline constexpr const char* kAskPush = "ask_push";    // member -> server: my sum is ready
inline constexpr const char* kPushTo = "push_to";      // server -> member: pass your sum to "to"
inline constexpr const char* kPartial = "partial";     // member -> member: a partial sum ("covers", "num_merged")
inline constexpr const char* kModel = "model";         // -> member: the round's value (1 frame)
inline constexpr const char* kModelAck = "model_ack";  // member -> the model's sender
inline constexpr const char* kAskPull = "ask_pull";    // member -> server: whom next ("last", "bytes", "seconds")
inline constexpr const char* kPullTo = "pull_to";      // server -> member: send the value to "to" (-1: nobody)
// kModel and kPullTo: "1" when the transfer is timed (the measured slice): the receiver of the model acks it.
inline constexpr const char* kAckField = "ack";

// Open (slice, round) entries per slice a side keeps at most; beyond, asks are refused (bounded memory).
inline constexpr size_t kMaxOpenRoundsPerSlice = 64;

// Wall-clock seconds (steady clock).
double Now();

struct Op {
  std::string op;
  std::map<std::string, std::string> fields;
  uint64_t wire_key = 0;
  int64_t round = 0;
};

// One wire key, a round >= 0, control fields with an "op"; kInvalidArgument / kDataLoss otherwise.
Result<Op> ParseOp(const Message& msg);

// Field `name` as a number; `fallback` when absent; kInvalidArgument when it is not one.
template <typename T>
Result<T> NumberOf(const std::map<std::string, std::string>& fields, const std::string& name, T fallback) {
  auto it = fields.find(name);
  if (it == fields.end()) return fallback;
  T v{};
  const char* end = it->second.data() + it->second.size();
  auto [p, ec] = std::from_chars(it->second.data(), end, v);
  if (ec != std::errc() || p != end) return Status::InvalidArgument(name + " '" + it->second + "' is not a number");
  return v;
}

// A TSEngine message for (wire key, round) with these fields and f32 frames.
Message MakeOp(uint64_t wire_key, int64_t round, std::map<std::string, std::string> fields,
               std::vector<Bytes> data);

// The one f32 frame of a partial or a model, of the slice's length.
Status CheckValueFrame(const Message& msg, const KeyLayout& layout, uint64_t wire_key);

}  // namespace geomx::comm::ts
