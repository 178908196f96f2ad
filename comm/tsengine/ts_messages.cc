#include "comm/tsengine/ts_messages.h"

#include <chrono>
#include <utility>

#include "comm/codec.h"
#include "comm/handlers/request_checks.h"
#include "comm/tsengine/ts_relay.h"

namespace geomx::comm::ts {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Result<Op> ParseOp(const Message& msg) {
  const Meta& meta = msg.meta;
  if (meta.keys.size() != 1) return Status::InvalidArgument("expected one wire key, got " +
                                                            std::to_string(meta.keys.size()));
  if (meta.round < 0) return Status::InvalidArgument("round " + std::to_string(meta.round));
  Op op;
  GEOMX_RETURN_IF_ERROR(DecodeFields(meta.body, &op.fields));
  auto it = op.fields.find(kOpField);
  if (it == op.fields.end()) return Status::InvalidArgument("no op");
  op.op = it->second;
  op.wire_key = meta.keys[0];
  op.round = meta.round;
  return op;
}

Message MakeOp(uint64_t wire_key, int64_t round, std::map<std::string, std::string> fields,
               std::vector<Bytes> data) {
  Message m;
  m.meta.command = Command::kControl;
  m.meta.app_id = kTsAppId;
  m.meta.request = true;
  m.meta.round = round;
  m.meta.keys = {wire_key};
  for (const Bytes& d : data) m.meta.lens.push_back(static_cast<uint32_t>(d.count<float>()));
  m.meta.body = EncodeFields(fields);
  m.data = std::move(data);
  return m;
}

Status CheckValueFrame(const Message& msg, const KeyLayout& layout, uint64_t wire_key) {
  const KeySlice* s = layout.FindWireKey(wire_key);
  if (s == nullptr) return Status::InvalidArgument("wire key " + std::to_string(wire_key) + " is not in the layout");
  if (msg.data.size() != 1 || msg.data[0].size() != s->length * sizeof(float)) {
    return Status::InvalidArgument(KeyText(wire_key) + ": expected one frame of " + std::to_string(s->length) +
                                   " floats");
  }
  return Status::Ok();
}

}  // namespace geomx::comm::ts
