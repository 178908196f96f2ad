#include "comm/handlers/request_checks.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "comm/codec.h"
#include "comm/kv_worker.h"

namespace geomx::comm {

std::string KeyText(uint64_t wire_key) {
  return "key " + std::to_string(KeyOfWireKey(wire_key)) + " slice " + std::to_string(SliceOfWireKey(wire_key));
}

namespace {

// The text of body field `name`: nullopt when the body is empty or has no such field; kDataLoss for a body that is
// not control fields.
Result<std::optional<std::string>> BodyField(const std::string& body, const char* name) {
  if (body.empty()) return std::optional<std::string>();
  std::map<std::string, std::string> fields;
  GEOMX_RETURN_IF_ERROR(DecodeFields(body, &fields));
  auto it = fields.find(name);
  if (it == fields.end()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(it->second));
}

}  // namespace

Result<int> ParseNumMerged(const std::string& body) {
  GEOMX_ASSIGN_OR_RETURN(std::optional<std::string> text, BodyField(body, kNumMergedField));
  if (!text) return 1;
  int n = 0;
  const char* end = text->data() + text->size();
  auto [p, ec] = std::from_chars(text->data(), end, n);
  if (ec != std::errc() || p != end || n < 1) {
    return Status::InvalidArgument("num_merged '" + *text + "' is not a positive integer");
  }
  return n;
}

std::string EncodeNodeIds(const std::vector<int>& ids) {
  std::string text;
  for (int id : ids) {
    if (!text.empty()) text.push_back(',');
    text.append(std::to_string(id));
  }
  return text;
}

Result<std::vector<int>> ParseNodeIds(std::string_view text, const std::string& what) {
  constexpr size_t kMaxIds = 4096;
  std::vector<int> ids;
  std::set<int> seen;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    int id = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (ec != std::errc() || p != item.data() + item.size() || id < 1) {
      return Status::InvalidArgument(what + ": '" + std::string(item) + "' is not a node id");
    }
    if (!seen.insert(id).second) return Status::InvalidArgument(what + ": node " + std::to_string(id) + " twice");
    if (ids.size() == kMaxIds) return Status::InvalidArgument(what + ": more than 4096 node ids");
    ids.push_back(id);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return Status::InvalidArgument(what + ": ends with ','");
  }
  return ids;
}

Result<std::vector<int>> ParseCovers(const std::string& body) {
  GEOMX_ASSIGN_OR_RETURN(std::optional<std::string> text, BodyField(body, kCoversField));
  if (!text) return std::vector<int>();
  return ParseNodeIds(*text, kCoversField);
}

Result<std::optional<double>> ParseLoss(const std::string& body) {
  GEOMX_ASSIGN_OR_RETURN(std::optional<std::string> text, BodyField(body, kLossField));
  if (!text) return std::optional<double>();
  double loss = 0;
  const char* end = text->data() + text->size();
  auto [p, ec] = std::from_chars(text->data(), end, loss);
  if (ec != std::errc() || p != end || !std::isfinite(loss)) {
    return Status::InvalidArgument("loss '" + *text + "' is not a finite number");
  }
  return std::optional<double>(loss);
}

bool AnswerUndispatchable(const KvRequest& req, KvServer& server,
                          const std::function<Status(const KvRequest&)>& on_control, const std::string& codec,
                          const std::string& reducer) {
  const Meta& meta = req.meta;
  if (meta.command == Command::kControl) {
    server.Respond(req, {}, on_control ? on_control(req) : Status::Unimplemented("this server takes no control commands"));
    return true;
  }
  if (meta.codec != codec) {
    server.Respond(req, {}, Status::InvalidArgument("codec '" + meta.codec + "', this server reduces with '" + reducer +
                                                    "' (codec '" + codec + "')"));
    return true;
  }
  if (meta.round < kInitRound) {
    server.Respond(req, {}, Status::InvalidArgument("round " + std::to_string(meta.round) + " is invalid"));
    return true;
  }
  return false;
}

Status CheckRequestKey(const KeyLayout& layout, const KvRequest& req, size_t i, int my_rank, const std::string& codec) {
  const uint64_t wk = req.meta.keys[i];
  const KeySlice* s = layout.FindWireKey(wk);
  if (s == nullptr) return Status::InvalidArgument("unknown " + KeyText(wk) + " (wire key " + std::to_string(wk) + ")");
  if (s->server_rank != my_rank) {
    return Status::InvalidArgument(KeyText(wk) + " is served by server rank " + std::to_string(s->server_rank) +
                                   ", not " + std::to_string(my_rank));
  }
  if (codec.empty() && req.meta.lens[i] != s->length) {
    return Status::InvalidArgument(KeyText(wk) + " has " + std::to_string(s->length) + " floats, the request says " +
                                   std::to_string(req.meta.lens[i]));
  }
  return Status::Ok();
}

}  // namespace geomx::comm
