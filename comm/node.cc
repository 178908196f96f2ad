#include "comm/node.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace geomx::comm {
namespace {

// Control bodies are tiny and exchanged a handful of times per run, so a plain length-prefixed binary format
// (with a format byte to refuse anything else) is enough; it needs no third-party library.
constexpr uint8_t kRegisterFormat = 0xA1;
constexpr uint8_t kTableFormat = 0xA2;
constexpr uint32_t kMaxNodes = 1 << 16;
constexpr uint32_t kMaxString = 1 << 12;

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void I32(int32_t v) { Raw(&v, sizeof(v)); }
  void U32(uint32_t v) { Raw(&v, sizeof(v)); }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string Take() { return std::move(out_); }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U8(uint8_t* v) { return Raw(v, 1); }
  bool I32(int32_t* v) { return Raw(v, sizeof(*v)); }
  bool U32(uint32_t* v) { return Raw(v, sizeof(*v)); }
  bool Str(std::string* s) {
    uint32_t n = 0;
    if (!U32(&n) || n > kMaxString || n > in_.size() - pos_) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  bool Raw(void* p, size_t n) {
    if (n > in_.size() - pos_) return false;
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

void WriteNode(Writer& w, const NodeInfo& n) {
  w.I32(n.id);
  w.U8(static_cast<uint8_t>(n.role));
  w.I32(n.rank);
  w.Str(n.name);
  w.Str(n.party);
  w.Str(n.endpoint);
}

bool ReadNode(Reader& r, NodeInfo* n) {
  uint8_t role = 0;
  if (!r.I32(&n->id) || !r.U8(&role) || !r.I32(&n->rank) || !r.Str(&n->name) || !r.Str(&n->party) ||
      !r.Str(&n->endpoint)) {
    return false;
  }
  if (role > static_cast<uint8_t>(NodeRole::kWorker)) return false;
  n->role = static_cast<NodeRole>(role);
  return true;
}

}  // namespace

const char* NodeRoleName(NodeRole role) {
  switch (role) {
    case NodeRole::kScheduler: return "scheduler";
    case NodeRole::kServer: return "server";
    case NodeRole::kWorker: return "worker";
  }
  return "unknown";
}

std::string EncodeRegisterRequest(const RegisterRequest& r) {
  Writer w;
  w.U8(kRegisterFormat);
  WriteNode(w, r.node);
  w.Str(r.tier);
  w.I32(r.num_servers);
  w.I32(r.num_workers);
  return w.Take();
}

Result<RegisterRequest> DecodeRegisterRequest(std::string_view body) {
  Reader r(body);
  RegisterRequest out;
  uint8_t format = 0;
  if (!r.U8(&format) || format != kRegisterFormat) return Status::DataLoss("register: not a registration body");
  if (!ReadNode(r, &out.node) || !r.Str(&out.tier) || !r.I32(&out.num_servers) || !r.I32(&out.num_workers) ||
      !r.done()) {
    return Status::DataLoss("register: truncated or malformed body (" + std::to_string(body.size()) + " bytes)");
  }
  return out;
}

std::string EncodeNodeTable(const std::vector<NodeInfo>& nodes) {
  Writer w;
  w.U8(kTableFormat);
  w.U32(static_cast<uint32_t>(nodes.size()));
  for (const auto& n : nodes) WriteNode(w, n);
  return w.Take();
}

Result<std::vector<NodeInfo>> DecodeNodeTable(std::string_view body) {
  Reader r(body);
  uint8_t format = 0;
  uint32_t count = 0;
  if (!r.U8(&format) || format != kTableFormat) return Status::DataLoss("node table: not a node table body");
  if (!r.U32(&count) || count > kMaxNodes) return Status::DataLoss("node table: bad node count");
  std::vector<NodeInfo> nodes(count);
  for (auto& n : nodes) {
    if (!ReadNode(r, &n)) return Status::DataLoss("node table: truncated or malformed entry");
  }
  if (!r.done()) return Status::DataLoss("node table: trailing bytes");
  return nodes;
}

}  // namespace geomx::comm
