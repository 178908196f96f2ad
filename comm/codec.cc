#include "comm/codec.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include <msgpack.hpp>

#include "engine/base/check.h"

namespace geomx::comm {
namespace {

// Meta is a msgpack array with these positions (docs/wire_format.md, "Meta"). The version comes first so that a
// node can name a version mismatch before it tries to make sense of the rest.
enum MetaField : uint32_t {
  kFieldVersion = 0,
  kFieldCommand,
  kFieldSender,
  kFieldRecipient,
  kFieldAppId,
  kFieldTimestamp,
  kFieldRequest,
  kFieldRound,
  kFieldKeys,
  kFieldLens,
  kFieldCodec,
  kFieldPriority,
  kFieldStatusCode,
  kFieldBody,
  kNumMetaFields,
};

// msgpack output streams: one that only counts, one that fills a buffer of known size.
struct CountingStream {
  size_t size = 0;
  void write(const char*, size_t n) { size += n; }
};
struct SpanStream {
  uint8_t* data;
  size_t capacity;
  size_t size = 0;
  void write(const char* p, size_t n) {
    GEOMX_CHECK_LE(size + n, capacity) << "EncodeMeta: size changed between passes";
    std::memcpy(data + size, p, n);
    size += n;
  }
};

template <typename Stream>
void PackMeta(const Meta& m, Stream* stream) {
  msgpack::packer<Stream> pk(*stream);
  pk.pack_array(kNumMetaFields);
  pk.pack_uint16(m.version);
  pk.pack_uint8(static_cast<uint8_t>(m.command));
  pk.pack_int32(m.sender);
  pk.pack_int32(m.recipient);
  pk.pack_int32(m.app_id);
  pk.pack_int64(m.timestamp);
  if (m.request) {
    pk.pack_true();
  } else {
    pk.pack_false();
  }
  pk.pack_int64(m.round);
  pk.pack_array(static_cast<uint32_t>(m.keys.size()));
  for (uint64_t k : m.keys) pk.pack_uint64(k);
  pk.pack_array(static_cast<uint32_t>(m.lens.size()));
  for (uint32_t l : m.lens) pk.pack_uint32(l);
  pk.pack_str(static_cast<uint32_t>(m.codec.size()));
  pk.pack_str_body(m.codec.data(), static_cast<uint32_t>(m.codec.size()));
  pk.pack_int32(m.priority);
  pk.pack_int32(m.status_code);
  pk.pack_bin(static_cast<uint32_t>(m.body.size()));
  pk.pack_bin_body(m.body.data(), static_cast<uint32_t>(m.body.size()));
}

const char* TypeName(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER: return "uint";
    case msgpack::type::NEGATIVE_INTEGER: return "int";
    case msgpack::type::FLOAT32: return "float32";
    case msgpack::type::FLOAT64: return "float64";
    case msgpack::type::STR: return "str";
    case msgpack::type::BIN: return "bin";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
  }
  return "?";
}

Status Mismatch(std::string_view field, std::string_view expected, const msgpack::object& o) {
  return Status::DataLoss("meta." + std::string(field) + ": expected " + std::string(expected) + ", got " +
                          TypeName(o));
}

// Reads an integer of type T, refusing other types and out-of-range values.
template <typename T>
Status GetInt(const msgpack::object& o, std::string_view field, std::string_view type_name, T* out) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) {
    if (o.via.u64 > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return Status::DataLoss("meta." + std::string(field) + ": " + std::to_string(o.via.u64) +
                              " does not fit in " + std::string(type_name));
    }
    *out = static_cast<T>(o.via.u64);
    return Status::Ok();
  }
  if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    if (!std::numeric_limits<T>::is_signed || o.via.i64 < static_cast<int64_t>(std::numeric_limits<T>::min())) {
      return Status::DataLoss("meta." + std::string(field) + ": " + std::to_string(o.via.i64) +
                              " does not fit in " + std::string(type_name));
    }
    *out = static_cast<T>(o.via.i64);
    return Status::Ok();
  }
  return Mismatch(field, type_name, o);
}

template <typename T>
Status GetIntArray(const msgpack::object& o, std::string_view field, std::string_view type_name,
                   std::vector<T>* out) {
  if (o.type != msgpack::type::ARRAY) return Mismatch(field, std::string("an array of ") + std::string(type_name), o);
  out->resize(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    GEOMX_RETURN_IF_ERROR(
        GetInt(o.via.array.ptr[i], std::string(field) + "[" + std::to_string(i) + "]", type_name, &(*out)[i]));
  }
  return Status::Ok();
}

// Strings and binaries point into the caller's buffer while parsing (we copy them into the Meta anyway).
bool ReferenceEverything(msgpack::type::object_type, std::size_t, void*) { return true; }

// Parses exactly one msgpack object filling [data, data + size). Every container and string is bounded by the
// input size, so garbage cannot make the parser reserve more than a few times the input.
Status ParseOne(const char* what, const uint8_t* data, size_t size, msgpack::object_handle* out) {
  if (size == 0) return Status::DataLoss(std::string(what) + ": empty");
  const msgpack::unpack_limit limit(/*array=*/size, /*map=*/size, /*str=*/size, /*bin=*/size, /*ext=*/0,
                                    /*depth=*/4);
  size_t offset = 0;
  try {
    msgpack::unpack(*out, reinterpret_cast<const char*>(data), size, offset, ReferenceEverything, nullptr, limit);
  } catch (const msgpack::insufficient_bytes&) {
    return Status::DataLoss(std::string(what) + ": truncated (" + std::to_string(size) + " bytes)");
  } catch (const msgpack::unpack_error& e) {
    return Status::DataLoss(std::string(what) + ": not valid msgpack (" + e.what() + ")");
  } catch (const std::bad_alloc&) {
    return Status::DataLoss(std::string(what) + ": implausible sizes (allocation failed)");
  } catch (const std::exception& e) {
    return Status::DataLoss(std::string(what) + ": not valid msgpack (" + e.what() + ")");
  }
  if (offset != size) {
    return Status::DataLoss(std::string(what) + ": " + std::to_string(size - offset) + " trailing bytes");
  }
  return Status::Ok();
}

Status DecodeMetaObject(const msgpack::object& root, Meta* m) {
  if (root.type != msgpack::type::ARRAY) return Status::DataLoss(std::string("meta: expected an array, got ") +
                                                                 TypeName(root));
  const msgpack::object_array& a = root.via.array;
  if (a.size == 0) return Status::DataLoss("meta: empty array");
  uint64_t version = 0;
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldVersion], "version", "uint16", &version));
  if (version != kProtocolVersion) {
    return Status::DataLoss("meta: protocol version " + std::to_string(version) + ", this node speaks " +
                            std::to_string(kProtocolVersion));
  }
  if (a.size != kNumMetaFields) {
    return Status::DataLoss("meta: " + std::to_string(a.size) + " fields, protocol version " +
                            std::to_string(kProtocolVersion) + " has " + std::to_string(kNumMetaFields));
  }
  m->version = static_cast<uint16_t>(version);
  uint8_t command = 0;
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldCommand], "command", "uint8", &command));
  if (!IsKnownCommand(command)) {
    return Status::DataLoss("meta.command: unknown command " + std::to_string(command));
  }
  m->command = static_cast<Command>(command);
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldSender], "sender", "int32", &m->sender));
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldRecipient], "recipient", "int32", &m->recipient));
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldAppId], "app_id", "int32", &m->app_id));
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldTimestamp], "timestamp", "int64", &m->timestamp));
  const msgpack::object& request = a.ptr[kFieldRequest];
  if (request.type != msgpack::type::BOOLEAN) return Mismatch("request", "bool", request);
  m->request = request.via.boolean;
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldRound], "round", "int64", &m->round));
  GEOMX_RETURN_IF_ERROR(GetIntArray(a.ptr[kFieldKeys], "keys", "uint64", &m->keys));
  GEOMX_RETURN_IF_ERROR(GetIntArray(a.ptr[kFieldLens], "lens", "uint32", &m->lens));
  const msgpack::object& codec = a.ptr[kFieldCodec];
  if (codec.type != msgpack::type::STR) return Mismatch("codec", "str", codec);
  m->codec.assign(codec.via.str.ptr, codec.via.str.size);
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldPriority], "priority", "int32", &m->priority));
  GEOMX_RETURN_IF_ERROR(GetInt(a.ptr[kFieldStatusCode], "status_code", "int32", &m->status_code));
  const msgpack::object& body = a.ptr[kFieldBody];
  if (body.type != msgpack::type::BIN) return Mismatch("body", "bin", body);
  m->body.assign(body.via.bin.ptr, body.via.bin.size);
  return Status::Ok();
}

}  // namespace

Bytes EncodeMeta(const Meta& meta) {
  Bytes out(EncodedMetaSize(meta));
  SpanStream stream{out.mutable_data(), out.size()};
  PackMeta(meta, &stream);
  GEOMX_CHECK_EQ(stream.size, out.size());
  return out;
}

size_t EncodedMetaSize(const Meta& meta) {
  CountingStream counter;
  PackMeta(meta, &counter);
  return counter.size;
}

Status DecodeMeta(const uint8_t* data, size_t size, Meta* meta) {
  msgpack::object_handle handle;
  GEOMX_RETURN_IF_ERROR(ParseOne("meta", data, size, &handle));
  return DecodeMetaObject(handle.get(), meta);
}

std::string EncodeFields(const std::map<std::string, std::string>& fields) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_map(static_cast<uint32_t>(fields.size()));
  for (const auto& [key, value] : fields) {
    pk.pack_str(static_cast<uint32_t>(key.size()));
    pk.pack_str_body(key.data(), static_cast<uint32_t>(key.size()));
    pk.pack_str(static_cast<uint32_t>(value.size()));
    pk.pack_str_body(value.data(), static_cast<uint32_t>(value.size()));
  }
  return std::string(buffer.data(), buffer.size());
}

Status DecodeFields(std::string_view data, std::map<std::string, std::string>* fields) {
  fields->clear();
  msgpack::object_handle handle;
  GEOMX_RETURN_IF_ERROR(ParseOne("fields", reinterpret_cast<const uint8_t*>(data.data()), data.size(), &handle));
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::MAP) {
    return Status::DataLoss(std::string("fields: expected a map, got ") + TypeName(root));
  }
  for (uint32_t i = 0; i < root.via.map.size; ++i) {
    const msgpack::object& k = root.via.map.ptr[i].key;
    const msgpack::object& v = root.via.map.ptr[i].val;
    if (k.type != msgpack::type::STR) {
      return Status::DataLoss("fields: key #" + std::to_string(i) + " is " + TypeName(k) + ", expected str");
    }
    std::string key(k.via.str.ptr, k.via.str.size);
    if (v.type != msgpack::type::STR) {
      return Status::DataLoss("fields." + key + ": expected str, got " + TypeName(v));
    }
    if (!fields->emplace(key, std::string(v.via.str.ptr, v.via.str.size)).second) {
      return Status::DataLoss("fields: duplicate key '" + key + "'");
    }
  }
  return Status::Ok();
}

std::string NumberField(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", value);
  return buf;
}

}  // namespace geomx::comm
