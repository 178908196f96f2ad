#include "comm/kv_worker.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <set>
#include <utility>

#include "comm/codec.h"
#include "comm/postoffice.h"
#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

std::string RequestName(Command c) {
  switch (c) {
    case Command::kPush: return "push";
    case Command::kPull: return "pull";
    case Command::kPushPull: return "pushpull";
    case Command::kControl: return "control";
    default: return CommandName(c);
  }
}

// "key 7" / "keys 7, 9, 12" (distinct user keys, at most 8 listed).
std::string KeysText(const std::vector<uint64_t>& wire_keys) {
  std::vector<uint64_t> keys;
  for (uint64_t w : wire_keys) {
    if (std::find(keys.begin(), keys.end(), KeyOfWireKey(w)) == keys.end()) keys.push_back(KeyOfWireKey(w));
  }
  std::string s = keys.size() == 1 ? "key " : "keys ";
  for (size_t i = 0; i < keys.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(keys[i]);
  if (keys.size() > 8) s += " and " + std::to_string(keys.size() - 8) + " more";
  return s;
}

}  // namespace

// Where the answers of one request go: per server id, the wire keys it owes (in message order) and, for each,
// the output location (dense: floats at an offset of the caller's buffer; raw: an index into `values`).
struct KvWorker::Call : public RequestContext {
  struct Target {
    uint64_t wire_key = 0;
    uint64_t length = 0;   // floats (dense)
    float* out = nullptr;  // dense destination, or null
    size_t index = 0;      // raw: position in values
  };
  Command command = Command::kPush;
  std::string codec;
  bool raw = false;
  std::map<int, std::vector<Target>> targets;
  std::vector<Bytes> values;  // raw answers
  std::string control_answer;  // QueryControl: the server's answer body
  std::shared_ptr<std::string> reply_body;  // raw calls that asked for the answer's body
  std::map<std::string, std::string> fields;  // raw calls: extra Meta.body fields (RawRequest::fields)
};

KvWorker::KvWorker(Postoffice* po, int app_id, KeyLayout layout)
    : po_(po),
      app_id_(app_id),
      layout_(std::move(layout)),
      customer_("tier " + po->spec().name, po->spec().options.request_timeout_ms) {
  po_->RegisterCustomer(app_id_, [this](Message&& msg) { OnMessage(std::move(msg)); });
  po_->AttachTracker(&customer_);
}

KvWorker::~KvWorker() {
  po_->UnregisterCustomer(app_id_);
  po_->DetachTracker(&customer_);
}

int64_t KvWorker::Fail(Status status, const std::function<void(Status)>& done) {
  return customer_.NewFailedRequest(std::move(status), done);
}

int64_t KvWorker::Push(std::span<const uint64_t> keys, std::span<const float* const> values, int64_t round) {
  if (values.size() != keys.size()) return Fail(Status::InvalidArgument("push: keys and values differ in count"), {});
  std::vector<Bytes> copies;
  copies.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) copies.push_back(Bytes::Copy(values[i], layout_.length(keys[i]) * 4));
  return StartDense(Command::kPush, keys, copies, {}, round, nullptr);
}

int64_t KvWorker::Pull(std::span<const uint64_t> keys, std::span<float* const> outs, int64_t round) {
  return StartDense(Command::kPull, keys, {}, outs, round, nullptr);
}

int64_t KvWorker::PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                           std::span<float* const> outs, int64_t round) {
  if (values.size() != keys.size()) {
    return Fail(Status::InvalidArgument("pushpull: keys and values differ in count"), {});
  }
  std::vector<Bytes> copies;
  copies.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) copies.push_back(Bytes::Copy(values[i], layout_.length(keys[i]) * 4));
  return StartDense(Command::kPushPull, keys, copies, outs, round, nullptr);
}

int64_t KvWorker::PushPull(std::span<const uint64_t> keys, std::span<const Bytes> values,
                           std::span<float* const> outs, int64_t round) {
  return StartDense(Command::kPushPull, keys, values, outs, round, nullptr);
}

void KvWorker::PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                        std::span<float* const> outs, int64_t round, std::function<void(Status)> done) {
  if (values.size() != keys.size()) {
    Fail(Status::InvalidArgument("pushpull: keys and values differ in count"), done);
    return;
  }
  std::vector<Bytes> copies;
  copies.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) copies.push_back(Bytes::Copy(values[i], layout_.length(keys[i]) * 4));
  StartDense(Command::kPushPull, keys, copies, outs, round, std::move(done));
}

Status KvWorker::Wait(int64_t ts) { return customer_.Wait(ts); }

int64_t KvWorker::StartDense(Command command, std::span<const uint64_t> keys, std::span<const Bytes> values,
                             std::span<float* const> outs, int64_t round, std::function<void(Status)> done) {
  const std::string what = RequestName(command);
  const bool pushes = command != Command::kPull;
  const bool pulls = command != Command::kPush;
  if (pushes && values.size() != keys.size()) {
    return Fail(Status::InvalidArgument(what + ": keys and values differ in count"), done);
  }
  if (pulls && outs.size() != keys.size()) {
    return Fail(Status::InvalidArgument(what + ": keys and outputs differ in count"), done);
  }
  std::vector<int> servers = po_->ServerIds();
  if (static_cast<int>(servers.size()) != layout_.num_servers()) {
    return Fail(Status::FailedPrecondition(what + ": the layout has " + std::to_string(layout_.num_servers()) +
                                           " servers, tier " + po_->spec().name + " has " +
                                           std::to_string(servers.size())),
                done);
  }
  auto call = std::make_shared<Call>();
  call->command = command;
  std::map<int, Message> messages;
  std::set<uint64_t> seen;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t key = keys[i];
    if (!layout_.contains(key)) return Fail(Status::InvalidArgument(what + ": unknown key " + std::to_string(key)), done);
    if (!seen.insert(key).second) {
      return Fail(Status::InvalidArgument(what + ": key " + std::to_string(key) + " given twice"), done);
    }
    const uint64_t length = layout_.length(key);
    if (pushes && values[i].size() != length * sizeof(float)) {
      return Fail(Status::InvalidArgument(what + ": key " + std::to_string(key) + " has " +
                                          std::to_string(length) + " floats, got " +
                                          std::to_string(values[i].size()) + " bytes"),
                  done);
    }
    if (pulls && outs[i] == nullptr && length > 0) {
      return Fail(Status::InvalidArgument(what + ": no output buffer for key " + std::to_string(key)), done);
    }
    for (const KeySlice& s : layout_.slices(key)) {
      const int server = servers[s.server_rank];
      Message& m = messages[server];
      m.meta.keys.push_back(s.wire_key);
      m.meta.lens.push_back(static_cast<uint32_t>(s.length));
      if (pushes) m.data.push_back(values[i].Slice(s.offset * sizeof(float), s.length * sizeof(float)));
      call->targets[server].push_back({s.wire_key, s.length, pulls ? outs[i] + s.offset : nullptr, 0});
    }
  }
  return StartCall(std::move(call), std::move(messages), what, round, 1, std::move(done));
}

int64_t KvWorker::StartCall(std::shared_ptr<Call> call, std::map<int, Message> messages, const std::string& what,
                            int64_t round, int num_merged, std::function<void(Status)> done) {
  std::vector<Customer::Expected> expected;
  for (const auto& [server, m] : messages) {
    expected.push_back({server, po_->Describe(server) + " for " + KeysText(m.meta.keys)});
  }
  const int64_t ts = customer_.NewRequest(std::move(expected), what + " round " + std::to_string(round),
                                          std::move(done), call);
  std::map<std::string, std::string> fields = call->fields;
  if (num_merged != 1) fields[kNumMergedField] = std::to_string(num_merged);
  const double loss = loss_.load();
  if (call->command != Command::kPull && std::isfinite(loss)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.9g", loss);
    fields[kLossField] = text;
  }
  const std::string body = fields.empty() ? "" : EncodeFields(fields);
  for (auto& [server, m] : messages) {
    m.meta.command = call->command;
    m.meta.app_id = app_id_;
    m.meta.timestamp = ts;
    m.meta.request = true;
    m.meta.round = round;
    m.meta.codec = call->codec;
    m.meta.body = body;
    Status s = po_->Send(server, std::move(m));
    if (!s.ok()) customer_.AddResponse(ts, server, s.WithContext("sending to " + po_->Describe(server)));
  }
  return ts;
}

void KvWorker::OnMessage(Message&& msg) {
  const Meta& meta = msg.meta;
  if (meta.request) {
    GEOMX_LOG(kWarning) << "kv worker (app " << app_id_ << "): dropped a " << CommandName(meta.command)
                        << " request from " << po_->Describe(meta.sender);
    return;
  }
  const std::string server = po_->Describe(meta.sender);
  Status status;
  if (meta.status_code != 0) {
    status = Status(static_cast<StatusCode>(meta.status_code), server + ": " + meta.body);
  }
  auto apply = [&](RequestContext* context) -> Status {
    auto* call = static_cast<Call*>(context);
    if (call != nullptr && meta.command == Command::kControl) call->control_answer = meta.body;
    if (call == nullptr || call->command == Command::kPush || meta.command == Command::kControl) return Status::Ok();
    auto it = call->targets.find(meta.sender);
    if (it == call->targets.end()) return Status::Internal("no targets for " + server);
    const auto& targets = it->second;
    if (meta.keys.size() != targets.size() || msg.data.size() != targets.size()) {
      return Status::DataLoss(server + " answered " + std::to_string(msg.data.size()) + " values for " +
                              std::to_string(targets.size()) + " keys (ts=" + std::to_string(meta.timestamp) + ")");
    }
    for (size_t i = 0; i < targets.size(); ++i) {
      const auto& t = targets[i];
      if (meta.keys[i] != t.wire_key) {
        return Status::DataLoss(server + " answered wire key " + std::to_string(meta.keys[i]) + " instead of " +
                                std::to_string(t.wire_key));
      }
      if (call->codec.empty() && msg.data[i].size() != t.length * sizeof(float)) {
        return Status::DataLoss(server + " answered " + std::to_string(msg.data[i].size()) + " bytes for key " +
                                std::to_string(KeyOfWireKey(t.wire_key)) + " slice " +
                                std::to_string(SliceOfWireKey(t.wire_key)) + ", expected " +
                                std::to_string(t.length) + " floats");
      }
    }
    if (call->reply_body) *call->reply_body = meta.body;
    for (size_t i = 0; i < targets.size(); ++i) {
      const auto& t = targets[i];
      if (call->raw) {
        call->values[t.index] = msg.data[i];
      } else if (t.length > 0) {
        std::memcpy(t.out, msg.data[i].data(), t.length * sizeof(float));
      }
    }
    return Status::Ok();
  };
  if (!customer_.AddResponse(meta.timestamp, meta.sender, status, apply)) {
    GEOMX_LOG(kDebug) << "kv worker (app " << app_id_ << "): dropped a late or duplicate answer from " << server
                      << " (ts=" << meta.timestamp << ")";
  }
}

void KvWorker::SendRaw(RawRequest request, RawDone done) {
  const std::string what = RequestName(request.command);
  auto fail = [&](Status s) {
    Fail(std::move(s), [done](Status st) { done(std::move(st), {}); });
  };
  if (request.command != Command::kPush && request.command != Command::kPull &&
      request.command != Command::kPushPull) {
    return fail(Status::InvalidArgument("raw request: command must be push, pull or pushpull"));
  }
  const bool pushes = request.command != Command::kPull;
  // A pull of a non-dense codec may carry one selection frame per wire key (kv_server.h).
  const bool selects = !pushes && !request.payloads.empty();
  if (selects && (request.codec.empty() || request.payloads.size() != request.wire_keys.size())) {
    return fail(Status::InvalidArgument(what + ": a pull's selection frames need a non-dense codec and one frame "
                                        "per wire key"));
  }
  if (pushes && request.payloads.size() != request.wire_keys.size()) {
    return fail(Status::InvalidArgument(what + ": " + std::to_string(request.wire_keys.size()) + " wire keys but " +
                                        std::to_string(request.payloads.size()) + " payloads"));
  }
  if (request.num_merged < 1) return fail(Status::InvalidArgument(what + ": num_merged must be >= 1"));
  std::vector<int> servers = po_->ServerIds();
  if (static_cast<int>(servers.size()) != layout_.num_servers()) {
    return fail(Status::FailedPrecondition(what + ": the layout has " + std::to_string(layout_.num_servers()) +
                                           " servers, tier " + po_->spec().name + " has " +
                                           std::to_string(servers.size())));
  }
  auto call = std::make_shared<Call>();
  call->command = request.command;
  call->codec = request.codec;
  call->raw = true;
  call->reply_body = request.reply_body;
  call->fields = std::move(request.fields);
  call->values.resize(request.wire_keys.size());
  std::map<int, Message> messages;
  std::set<uint64_t> seen;
  for (size_t i = 0; i < request.wire_keys.size(); ++i) {
    const uint64_t wk = request.wire_keys[i];
    const KeySlice* s = layout_.FindWireKey(wk);
    if (s == nullptr) {
      return fail(Status::InvalidArgument(what + ": wire key " + std::to_string(wk) + " (key " +
                                          std::to_string(KeyOfWireKey(wk)) + " slice " +
                                          std::to_string(SliceOfWireKey(wk)) + ") is not in the layout"));
    }
    if (!seen.insert(wk).second) {
      return fail(Status::InvalidArgument(what + ": wire key " + std::to_string(wk) + " given twice"));
    }
    if (pushes && request.codec.empty() && request.payloads[i].size() != s->length * sizeof(float)) {
      return fail(Status::InvalidArgument(what + ": key " + std::to_string(s->key) + " slice " +
                                          std::to_string(s->slice) + " has " + std::to_string(s->length) +
                                          " floats, got " + std::to_string(request.payloads[i].size()) + " bytes"));
    }
    const int server = servers[s->server_rank];
    Message& m = messages[server];
    m.meta.keys.push_back(wk);
    if (pushes) {
      const uint64_t n = request.codec.empty() ? s->length : request.payloads[i].size();
      m.meta.lens.push_back(static_cast<uint32_t>(n));
      m.data.push_back(request.payloads[i]);
    } else {
      m.meta.lens.push_back(static_cast<uint32_t>(s->length));
      if (selects) m.data.push_back(request.payloads[i]);
    }
    call->targets[server].push_back({wk, s->length, nullptr, i});
  }
  auto finish = [call, done = std::move(done)](Status s) {
    done(s, s.ok() ? std::move(call->values) : std::vector<Bytes>());
  };
  StartCall(call, std::move(messages), what, request.round, request.num_merged, std::move(finish));
}

Result<std::vector<Bytes>> KvWorker::RequestRaw(RawRequest request) {
  std::promise<std::pair<Status, std::vector<Bytes>>> promise;
  auto future = promise.get_future();
  SendRaw(std::move(request), [&promise](Status s, std::vector<Bytes> v) {
    promise.set_value({std::move(s), std::move(v)});
  });
  auto [status, values] = future.get();
  if (!status.ok()) return status;
  return values;
}

Result<std::string> KvWorker::QueryControl(int server_rank, const std::string& body) {
  const std::vector<int> servers = po_->ServerIds();
  if (server_rank < 0 || server_rank >= static_cast<int>(servers.size())) {
    return Status::InvalidArgument("control query: no server of rank " + std::to_string(server_rank) + " in tier " +
                                   po_->spec().name);
  }
  const int server = servers[server_rank];
  auto call = std::make_shared<Call>();
  call->command = Command::kControl;
  Message m;
  m.meta.command = Command::kControl;
  m.meta.app_id = app_id_;
  m.meta.request = true;
  m.meta.body = body;
  const int64_t ts = customer_.NewRequest({{server, po_->Describe(server) + " for control"}}, "control query",
                                          nullptr, call);
  m.meta.timestamp = ts;
  Status s = po_->Send(server, std::move(m));
  if (!s.ok()) customer_.AddResponse(ts, server, s.WithContext("sending to " + po_->Describe(server)));
  GEOMX_RETURN_IF_ERROR(customer_.Wait(ts));
  return call->control_answer;
}

Status KvWorker::SendControl(const std::string& body) {
  auto call = std::make_shared<Call>();
  call->command = Command::kControl;
  std::map<int, Message> messages;
  for (int server : po_->ServerIds()) messages[server].meta.body = body;
  std::vector<Customer::Expected> expected;
  for (const auto& [server, m] : messages) expected.push_back({server, po_->Describe(server) + " for control"});
  const int64_t ts = customer_.NewRequest(std::move(expected), "control", nullptr, call);
  for (auto& [server, m] : messages) {
    m.meta.command = Command::kControl;
    m.meta.app_id = app_id_;
    m.meta.timestamp = ts;
    m.meta.request = true;
    Status s = po_->Send(server, std::move(m));
    if (!s.ok()) customer_.AddResponse(ts, server, s.WithContext("sending to " + po_->Describe(server)));
  }
  return customer_.Wait(ts);
}

}  // namespace geomx::comm
