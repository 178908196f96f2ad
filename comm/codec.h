// codec: msgpack encoding of the message header (Meta) and of the small typed payloads that control commands
// carry in Meta::body. The schema is docs/wire_format.md; this is the only place that knows msgpack
// (codec.cc). All functions are pure and thread-safe. Decoders never throw and never abort on peer input: a
// malformed, truncated, trailing-garbage or wrong-version buffer is refused with kDataLoss naming the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "comm/message.h"
#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::comm {

// The msgpack encoding of `meta` (frame 0 of every message). Never fails.
Bytes EncodeMeta(const Meta& meta);
// The size EncodeMeta(meta) would have, computed without allocating (traffic accounting).
size_t EncodedMetaSize(const Meta& meta);
// Parses frame 0. kDataLoss ("meta.sender: expected an int32, got str", "meta: protocol version 2, this node
// speaks 1", "meta: 3 trailing bytes", ...) for anything but an exact, well-formed encoding of the current
// kProtocolVersion with a known Command. `*meta` is unspecified on error.
Status DecodeMeta(const uint8_t* data, size_t size, Meta* meta);

// Typed control payloads: a msgpack map of string -> string (e.g. the optimizer's settings: {"name": "sgd",
// "lr": "0.1"}), shipped in Meta::body. Keys are unique and sorted (std::map), so the encoding is deterministic.
std::string EncodeFields(const std::map<std::string, std::string>& fields);
// kDataLoss for anything but one msgpack map whose keys and values are all strings, keys unique, no trailing
// bytes. `*fields` is replaced (cleared first).
Status DecodeFields(std::string_view data, std::map<std::string, std::string>* fields);
// A number as a control field's text: the shortest "%.9g" form, which reads back to the same float.
std::string NumberField(double value);

}  // namespace geomx::comm
