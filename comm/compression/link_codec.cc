#include "comm/compression/link_codec.h"

#include <utility>

#include "comm/compression/codecs.h"

namespace geomx::comm {
namespace {

struct SchemeTable {
  std::mutex mu;
  std::map<std::string, LinkSchemeDef, std::less<>> by_name;  // GUARDED_BY(mu); filled during static init
};
SchemeTable& Schemes() {
  static SchemeTable t;
  return t;
}

const char* NoneCompressor(bool, bool, bool) { return "raw"; }
const char* Fp16Compressor(bool, bool, bool) { return "fp16"; }
const char* BscCompressor(bool push, bool, bool small) { return small ? "raw" : (push ? "bsc" : "sparse"); }
const char* MpqCompressor(bool push, bool wan, bool small) {
  if (small) return "fp16";
  return wan ? (push ? "bsc" : "sparse") : "raw";
}

}  // namespace

// GeoMX's schemes; sign and int8 register from their own files (sign.cc, int8.cc).
GEOMX_REGISTER_LINK_SCHEME((LinkSchemeDef{.id = LinkScheme::kNone, .name = "none", .compressor = NoneCompressor}));
GEOMX_REGISTER_LINK_SCHEME((LinkSchemeDef{
    .id = LinkScheme::kFp16, .name = "fp16", .preset_lan = true, .preset_wan = true, .compressor = Fp16Compressor}));
GEOMX_REGISTER_LINK_SCHEME(
    (LinkSchemeDef{.id = LinkScheme::kBsc, .name = "bsc", .preset_wan = true, .compressor = BscCompressor}));
GEOMX_REGISTER_LINK_SCHEME((LinkSchemeDef{
    .id = LinkScheme::kMpq, .name = "mpq", .preset_lan = true, .preset_wan = true, .compressor = MpqCompressor}));

bool RegisterLinkScheme(const LinkSchemeDef& def) {
  SchemeTable& t = Schemes();
  std::lock_guard<std::mutex> lock(t.mu);
  for (const auto& [name, d] : t.by_name) {
    if (d.id == def.id) return false;
  }
  return t.by_name.emplace(def.name, def).second;
}

const LinkSchemeDef* FindLinkScheme(std::string_view name) {
  LinkCompressionCodecs();
  SchemeTable& t = Schemes();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.by_name.find(name);
  return it == t.by_name.end() ? nullptr : &it->second;
}

const LinkSchemeDef* LinkSchemeOf(LinkScheme id) {
  LinkCompressionCodecs();
  SchemeTable& t = Schemes();
  std::lock_guard<std::mutex> lock(t.mu);
  for (const auto& [name, d] : t.by_name) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

std::vector<std::string> LinkSchemeNames() {
  LinkCompressionCodecs();
  SchemeTable& t = Schemes();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<std::string> out;
  for (const auto& [name, d] : t.by_name) out.push_back(name);
  return out;
}

Result<LinkScheme> ParseLinkScheme(std::string_view name) {
  if (const LinkSchemeDef* d = FindLinkScheme(name)) return d->id;
  std::string known;
  for (const std::string& n : LinkSchemeNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::InvalidArgument("link scheme '" + std::string(name) + "' (expected one of " + known + ")");
}

struct LinkEncoder::KeyState {
  std::mutex mu;
  CompressorState state;  // GUARDED_BY(mu)
};

LinkEncoder::LinkEncoder(LinkCodecConfig config) : config_(std::move(config)) {}
LinkEncoder::~LinkEncoder() = default;

Result<std::unique_ptr<LinkEncoder>> LinkEncoder::Create(const LinkCodecConfig& config) {
  const LinkSchemeDef* def = LinkSchemeOf(config.scheme);
  if (def == nullptr) {
    return Status::InvalidArgument("link scheme " + std::to_string(static_cast<int>(config.scheme)) +
                                   " is not registered");
  }
  auto e = std::unique_ptr<LinkEncoder>(new LinkEncoder(config));
  GEOMX_ASSIGN_OR_RETURN(e->small_, MakeCompressor(def->compressor(config.push, config.wan, true), config.bsc));
  GEOMX_ASSIGN_OR_RETURN(e->large_, MakeCompressor(def->compressor(config.push, config.wan, false), config.bsc));
  return e;
}

const Compressor& LinkEncoder::For(uint64_t length) const {
  return length < config_.size_lower_bound ? *small_ : *large_;
}

Result<Bytes> LinkEncoder::Encode(uint64_t wire_key, std::span<const float> values) {
  std::shared_ptr<KeyState> ks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<KeyState>& slot = keys_[wire_key];
    if (!slot) {
      slot = std::make_shared<KeyState>();
      slot->state.stream = MixBits(MixBits(config_.sender) ^ (wire_key + 0x632be59bd9b4e019ull) ^
                                   (config_.push ? 0x1ull : 0x2ull) ^ (config_.wan ? 0x10ull : 0x20ull));
    }
    ks = slot;
  }
  std::lock_guard<std::mutex> lock(ks->mu);
  Result<Bytes> frame = For(values.size()).Encode(values, ks->state);
  if (!frame.ok()) return frame.status().WithContext("wire key " + std::to_string(wire_key));
  return frame;
}

}  // namespace geomx::comm
