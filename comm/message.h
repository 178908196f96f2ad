// Message: a header (Meta) plus zero-copy data frames. Value type; copying shares the frames' buffers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/wire_format.h"
#include "engine/base/bytes.h"

namespace geomx::comm {

inline constexpr int kSchedulerId = 0;  // the scheduler of every tier has node id 0

struct Meta {
  uint16_t version = kProtocolVersion;
  Command command = Command::kControl;
  int32_t sender = -1;     // node id in the tier (-1 before rendezvous)
  int32_t recipient = -1;
  int32_t app_id = 0;      // which Customer (KvWorker/KvServer pair) the message belongs to
  int64_t timestamp = -1;  // the requester's request id; responses echo it
  bool request = true;     // false: a response
  int64_t round = -1;      // training iteration / sync round this belongs to (detects late or duplicate data)
  std::vector<uint64_t> keys;  // wire keys, one per data frame for kPush/kPushPull and their responses
  std::vector<uint32_t> lens;  // values per key (elements), one per key
  std::string codec;       // how data frames are encoded: "" = dense f32; compressors add names later
  int32_t priority = 0;    // larger is more urgent (P3 later)
  int32_t status_code = 0; // responses: a StatusCode != 0 means the request failed; body holds the message
  std::string body;        // small typed payload (msgpack) for control commands, or an error message
};

struct Message {
  Meta meta;
  // Payload frames. A Van delivers each received frame 8-byte aligned (readable as float, int64, double).
  std::vector<Bytes> data;
  // Never on the wire: the authenticated member name of the sender ("dc-a/worker1"), set by the receiving Van
  // from the key the sender proved to hold (ZmqVan with CURVE: the name the ZAP handler gave that key). Empty
  // when the Van does not authenticate (plain ZmqVan, LoopbackVan) and on messages being sent. Unlike
  // meta.sender, which the sender fills in, a peer cannot forge it.
  std::string peer;
  // Total bytes of the data frames (header not included).
  size_t data_bytes() const {
    size_t n = 0;
    for (const auto& d : data) n += d.size();
    return n;
  }
};

}  // namespace geomx::comm
