#include "algorithms/ps/key_schema.h"

#include <cctype>
#include <charconv>
#include <set>

#include "comm/handlers/reducer.h"
#include "nn/module.h"

namespace geomx::ps {
namespace {

constexpr uint64_t kMaxElems = uint64_t{1} << 40;
constexpr std::string_view kHeader = "geomx-keys 1";

bool HasSpace(std::string_view s) {
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) || !std::isprint(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

template <typename E>
bool ParseEnum(std::string_view text, E* out, const char* (*name)(E), int count) {
  for (int i = 0; i < count; ++i) {
    if (text == name(static_cast<E>(i))) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

bool ParseU64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= line.size()) {
    const size_t sp = line.find(' ', start);
    const size_t end = sp == std::string_view::npos ? line.size() : sp;
    out.push_back(line.substr(start, end - start));
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  return out;
}

}  // namespace

const char* KeyLayoutKindName(KeyLayoutKind k) { return k == KeyLayoutKind::kDense ? "dense" : "row_sparse"; }
const char* KeyRoleName(KeyRole r) {
  switch (r) {
    case KeyRole::kParameter: return "parameter";
    case KeyRole::kAggregate: return "aggregate";
    case KeyRole::kDecision: return "decision";
    case KeyRole::kLocal: return "local";
  }
  return "?";
}
const char* KeyInitName(KeyInit i) {
  switch (i) {
    case KeyInit::kFromMaster: return "master";
    case KeyInit::kZeros: return "zeros";
    case KeyInit::kNone: return "none";
  }
  return "?";
}

Status KeySchema::Validate() const {
  std::set<uint64_t> keys;
  std::set<std::string> names;
  for (const KeyDef& k : keys_) {
    const std::string at = "key " + std::to_string(k.key) + " (" + k.name + "): ";
    if (!keys.insert(k.key).second) return Status::InvalidArgument(at + "the key number is used twice");
    if (k.name.empty() || HasSpace(k.name)) return Status::InvalidArgument(at + "names must be non-empty, no spaces");
    if (!names.insert(k.name).second) return Status::InvalidArgument(at + "the name is used twice");
    if (k.key > comm::kMaxKey) return Status::InvalidArgument(at + "key numbers must be < 2^48");
    if (k.elems == 0 || k.elems > kMaxElems) {
      return Status::InvalidArgument(at + "must have 1 to 2^40 elements, has " + std::to_string(k.elems));
    }
    if (k.dtype != DType::kF32) return Status::InvalidArgument(at + "only f32 keys are aggregated");
    if (k.reducer == "gx_sum" || !comm::MakeReducer(k.reducer, comm::ReducerConfig{}).ok()) {
      return Status::InvalidArgument(at + "unknown reducer '" + k.reducer + "'");
    }
    if (k.layout == KeyLayoutKind::kRowSparse &&
        (k.reducer != "row_sparse" || k.row_width == 0 || k.elems % k.row_width != 0)) {
      return Status::InvalidArgument(at + "a row-sparse key needs reducer row_sparse and a row_width dividing its "
                                          "elements");
    }
    if (k.layout == KeyLayoutKind::kRowSparse && k.role != KeyRole::kAggregate) {
      return Status::InvalidArgument(at + "a row-sparse key has role aggregate (the global server's table)");
    }
    if (k.layout == KeyLayoutKind::kDense && k.reducer == "row_sparse") {
      return Status::InvalidArgument(at + "reducer row_sparse needs layout row_sparse");
    }
    if (k.role == KeyRole::kDecision && (k.reducer != "sum" || k.layout != KeyLayoutKind::kDense)) {
      return Status::InvalidArgument(at + "a decision key is a dense f32 value (reducer sum)");
    }
    if (k.role == KeyRole::kLocal && (k.layout != KeyLayoutKind::kDense || k.init != KeyInit::kNone)) {
      return Status::InvalidArgument(at + "a local key is a dense aggregate without an initial value");
    }
    if (k.role == KeyRole::kParameter && (k.layout != KeyLayoutKind::kDense || k.reducer != "sum")) {
      return Status::InvalidArgument(at + "a parameter is a dense f32 sum key");
    }
  }
  return Status::Ok();
}

const KeyDef* KeySchema::Find(uint64_t key) const {
  for (const KeyDef& k : keys_) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

bool KeySchema::Has(KeyRole role) const {
  for (const KeyDef& k : keys_) {
    if (k.role == role) return true;
  }
  return false;
}

std::vector<uint64_t> KeySchema::KeysWith(KeyRole role) const {
  std::vector<uint64_t> out;
  for (const KeyDef& k : keys_) {
    if (k.role == role) out.push_back(k.key);
  }
  return out;
}

KeySchema KeySchema::WithBarrier() const {
  KeySchema s = *this;
  if (s.Find(kBarrierKey) != nullptr) return s;
  KeyDef b;
  b.key = kBarrierKey;
  b.name = "barrier";
  b.elems = 1;
  b.role = KeyRole::kAggregate;
  b.init = KeyInit::kNone;
  s.keys_.push_back(b);
  return s;
}

std::vector<comm::KeySpec> KeySchema::KeySpecs() const {
  std::vector<comm::KeySpec> specs;
  specs.reserve(keys_.size());
  for (const KeyDef& k : keys_) specs.push_back(comm::KeySpec{k.key, k.elems, k.splittable()});
  return specs;
}

Result<comm::KeyLayout> KeySchema::Layout(int num_servers, int64_t split_bytes) const {
  return comm::KeyLayout::Build(KeySpecs(), num_servers, split_bytes);
}

std::string KeySchema::Encode() const {
  std::string out(kHeader);
  out += '\n';
  for (const KeyDef& k : keys_) {
    out += std::to_string(k.key) + ' ' + k.name + ' ' + std::to_string(k.elems) + ' ' +
           std::string(DTypeName(k.dtype)) + ' ' + k.reducer + ' ' + KeyLayoutKindName(k.layout) + ' ' +
           std::to_string(k.row_width) + ' ' + KeyRoleName(k.role) + ' ' + KeyInitName(k.init) + '\n';
  }
  return out;
}

Result<KeySchema> KeySchema::Decode(std::string_view text) {
  const size_t first = text.find('\n');
  if (first == std::string_view::npos || text.substr(0, first) != kHeader) {
    return Status::DataLoss("key schema: not a '" + std::string(kHeader) + "' schema");
  }
  std::vector<KeyDef> keys;
  size_t pos = first + 1;
  int line_no = 1;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return Status::DataLoss("key schema: line " + std::to_string(line_no) + " is cut");
    const std::vector<std::string_view> f = Split(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (keys.size() >= kMaxKeys) return Status::DataLoss("key schema: more than " + std::to_string(kMaxKeys) + " keys");
    KeyDef k;
    const std::string at = "key schema, line " + std::to_string(line_no) + ": ";
    if (f.size() != 9) return Status::DataLoss(at + "expected 9 fields, got " + std::to_string(f.size()));
    k.name = std::string(f[1]);
    k.reducer = std::string(f[4]);
    if (!ParseU64(f[0], &k.key) || !ParseU64(f[2], &k.elems) || !ParseU64(f[6], &k.row_width)) {
      return Status::DataLoss(at + "bad number");
    }
    if (!ParseDType(f[3], &k.dtype) || !ParseEnum(f[5], &k.layout, KeyLayoutKindName, 2) ||
        !ParseEnum(f[7], &k.role, KeyRoleName, 4) || !ParseEnum(f[8], &k.init, KeyInitName, 3)) {
      return Status::DataLoss(at + "bad dtype, layout, role or init");
    }
    keys.push_back(std::move(k));
  }
  KeySchema schema(std::move(keys));
  Status valid = schema.Validate();
  if (!valid.ok()) return Status::DataLoss("key schema: " + valid.message());
  return schema;
}

KeySchema KeySchemaFromModule(nn::Module& model) {
  std::vector<KeyDef> keys;
  uint64_t i = 0;
  for (nn::Parameter* p : model.TrainableParameters()) {
    KeyDef k;
    k.key = i++;
    k.name = p->key();
    k.elems = static_cast<uint64_t>(p->numel());
    keys.push_back(std::move(k));
  }
  return KeySchema(std::move(keys));
}

}  // namespace geomx::ps
