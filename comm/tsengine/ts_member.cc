// TsMember (ts_relay.h).
#include "comm/tsengine/ts_relay.h"

#include <algorithm>
#include <utility>

#include "comm/codec.h"
#include "comm/handlers/request_checks.h"
#include "comm/kv_link.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"
#include "comm/tsengine/ts_messages.h"
#include "engine/base/logging.h"

namespace geomx::comm {

using ts::kOpField;
using ts::kAskPush;
using ts::kPushTo;
using ts::kPartial;
using ts::kModel;
using ts::kModelAck;
using ts::kAskPull;
using ts::kPullTo;
using ts::kAckField;
using ts::Now;
using ts::Op;
using ts::ParseOp;
using ts::NumberOf;
using ts::MakeOp;
using ts::CheckValueFrame;

TsMember::TsMember(KvLink* upper, std::vector<int> members)
    : upper_(upper),
      po_(upper->kv()->postoffice()),
      members_(members.begin(), members.end()),
      initial_(upper),
      pending_("tsengine on tier " + po_->spec().name, po_->spec().options.request_timeout_ms) {
  po_->RegisterCustomer(kTsAppId, [this](Message&& m) { OnMessage(std::move(m)); });
  po_->AttachTracker(&pending_);
}

TsMember::~TsMember() {
  po_->UnregisterCustomer(kTsAppId);
  po_->DetachTracker(&pending_);
  std::lock_guard<std::mutex> lock(mu_);
  rounds_.clear();  // their done callbacks are dropped; pending_ then cancels the (now unknown) rounds' requests
}

uint64_t TsMember::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

int TsMember::ServerOf(uint64_t wire_key) const {
  const KeySlice* s = upper_->layout().FindWireKey(wire_key);
  if (s == nullptr) return -1;
  const std::vector<int> servers = po_->ServerIds();
  return s->server_rank < static_cast<int>(servers.size()) ? servers[s->server_rank] : -1;
}

Status TsMember::SendOp(int to, const Id& id, std::map<std::string, std::string> fields, std::vector<Bytes> data) {
  return po_->Send(to, MakeOp(id.first, id.second, std::move(fields), std::move(data)));
}

void TsMember::Refuse(const Message& msg, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++refused_;
  }
  GEOMX_LOG(kWarning) << "tsengine: " << po_->self().name << " dropped a message from "
                      << po_->Describe(msg.meta.sender) << ": " << why;
}

bool TsMember::FetchInitial(uint64_t wire_key, AggregateDone done) {
  return initial_.FetchInitial(wire_key, std::move(done));
}

void TsMember::OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors, AggregateDone done) {
  const KeySlice* s = upper_->layout().FindWireKey(wire_key);
  const int server = ServerOf(wire_key);
  if (s == nullptr || server < 0 || aggregate.size() != s->length * sizeof(float)) {
    return done(Status::FailedPrecondition("tsengine: " + KeyText(wire_key) + " is not a dense slice of the "
                                           "tier's layout"),
                Bytes());
  }
  const Id id{wire_key, round};
  bool ask = false, forward = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Round& r = rounds_[id];  // may exist: asked early, or partials already in
    if (r.ready) {
      return done(Status::Internal("tsengine: " + KeyText(wire_key) + " round " + std::to_string(round) +
                                   " completed twice"),
                  Bytes());
    }
    const float* mine = aggregate.as<float>();
    if (r.sum.empty()) {
      r.sum.assign(mine, mine + s->length);
    } else {
      for (size_t i = 0; i < r.sum.size(); ++i) r.sum[i] += mine[i];
    }
    r.merged += contributors;
    r.done = std::move(done);
    r.ready = true;
    forward = r.target >= 0;
    ask = !forward && !r.asked;
    r.asked = true;
  }
  // The round's value is owed by the slice's server (through whichever member): it times out like a request to
  // the server, and a failed tier fails it (at once when it failed already: outside mu_).
  const int64_t ts = pending_.NewRequest(
      {{server, "the value of " + KeyText(wire_key) + " round " + std::to_string(round) +
                    " through the tsengine overlay (" + po_->Describe(server) + ")"}},
      "tsengine", [this, id](Status st) {
        if (!st.ok()) Fail(id, st);
      });
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rounds_.find(id);
    failed = it == rounds_.end();  // failed already
    if (!failed) it->second.ts = ts;
  }
  if (failed) {
    pending_.AddResponse(ts, server, Status::Cancelled("the round failed"));
    return;
  }
  if (forward) return Forward(id);
  if (ask) Ask(id);
}

void TsMember::Ask(const Id& id) {
  const int server = ServerOf(id.first);
  Status sent = SendOp(server, id, {{kOpField, kAskPush}});
  if (!sent.ok()) Fail(id, sent.WithContext("asking " + po_->Describe(server)));
}

void TsMember::Fail(const Id& id, const Status& s) {
  AggregateDone done;
  int64_t ts = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rounds_.find(id);
    if (it == rounds_.end()) return;
    done = std::move(it->second.done);
    ts = it->second.ts;
    rounds_.erase(it);
  }
  if (done) done(s.WithContext("tsengine: " + KeyText(id.first) + " round " + std::to_string(id.second)), Bytes());
  if (ts >= 0) pending_.AddResponse(ts, ServerOf(id.first), Status::Cancelled("the round failed"));
}

void TsMember::OnMessage(Message&& msg) {
  Result<Op> op = ParseOp(msg);
  if (!op.ok()) return Refuse(msg, op.status().message());
  const Id id{op->wire_key, op->round};
  const int from = msg.meta.sender;
  const int server = ServerOf(id.first);
  if (server < 0) return Refuse(msg, KeyText(id.first) + " is not in the global tier's layout");
  const bool from_member = members_.count(from) != 0 && from != po_->my_id();
  if (op->op == kPushTo || op->op == kPullTo) {
    if (from != server) return Refuse(msg, op->op + " not from the slice's server");
    Result<int> to = NumberOf<int>(op->fields, "to", -2);
    if (!to.ok() || *to < -1) return Refuse(msg, "malformed " + op->op);
    return op->op == kPushTo ? OnPushTo(id, *to) : OnPullTo(id, *to, op->fields[kAckField] == "1");
  }
  if (op->op == kPartial && from_member) return OnPartial(msg, id, std::move(op->fields));
  if (op->op == kModel && (from_member || from == server)) return OnModel(msg, id, std::move(op->fields));
  if (op->op == kModelAck && from_member) return OnModelAck(msg, id);
  Refuse(msg, "unexpected op '" + op->op + "'");
}

void TsMember::OnPushTo(const Id& id, int to) {
  const int server = ServerOf(id.first);
  if (to != server && (members_.count(to) == 0 || to == po_->my_id())) {
    GEOMX_LOG(kWarning) << "tsengine: push_to " << to << " is neither the server nor another member";
    return;
  }
  bool forward = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rounds_.find(id);
    if (it == rounds_.end() || !it->second.asked || it->second.forwarded || it->second.target >= 0) {
      ++refused_;
      GEOMX_LOG(kWarning) << "tsengine: unexpected push_to for " << KeyText(id.first) << " round " << id.second;
      return;
    }
    it->second.target = to;
    forward = it->second.ready;  // else when the data centre's sum is complete
  }
  if (forward) Forward(id);
}

void TsMember::Forward(const Id& id) {
  Round r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rounds_.find(id);
    if (it == rounds_.end() || it->second.forwarded) return;
    it->second.forwarded = true;
    r.sum = std::move(it->second.sum);
    r.covers = it->second.covers;
    r.merged = it->second.merged;
    r.target = it->second.target;
  }
  if (r.target == ServerOf(id.first)) {
    RawRequest req;
    req.command = Command::kPush;
    req.round = id.second;
    req.num_merged = r.merged;
    req.wire_keys = {id.first};
    req.payloads = {Bytes::CopyVector(r.sum)};
    req.fields[kCoversField] = EncodeNodeIds(r.covers);
    upper_->SendRaw(std::move(req), [this, id](Status s, std::vector<Bytes>) {
      if (!s.ok()) Fail(id, s);
    });
    return;
  }
  std::vector<int> covers = r.covers;
  covers.insert(covers.begin(), po_->my_id());
  Status s = SendOp(r.target, id,
                    {{kOpField, kPartial}, {kCoversField, EncodeNodeIds(covers)},
                     {kNumMergedField, std::to_string(r.merged)}},
                    {Bytes::CopyVector(r.sum)});
  if (!s.ok()) Fail(id, s);
}

void TsMember::OnPartial(const Message& msg, const Id& id, std::map<std::string, std::string> fields) {
  Status frame = CheckValueFrame(msg, upper_->layout(), id.first);
  if (!frame.ok()) return Refuse(msg, frame.message());
  Result<std::vector<int>> covers = ParseNodeIds(fields[kCoversField], kCoversField);
  Result<int> merged = NumberOf<int>(fields, kNumMergedField, 0);
  if (!covers.ok() || !merged.ok() || *merged < 1) return Refuse(msg, "malformed partial");
  if (std::find(covers->begin(), covers->end(), msg.meta.sender) == covers->end()) {
    return Refuse(msg, "a partial that does not cover its sender");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rounds_.find(id);
    std::string why;
    if (it == rounds_.end() || !it->second.asked || it->second.forwarded || it->second.target >= 0) {
      why = "a partial this member was not waiting for";
    }
    for (int c : *covers) {
      if (!why.empty()) break;
      if (members_.count(c) == 0 || c == po_->my_id()) {
        why = "covers node " + std::to_string(c) + ", not another member";
      }
      if (std::find(it->second.covers.begin(), it->second.covers.end(), c) != it->second.covers.end()) {
        why = "covers node " + std::to_string(c) + " twice";
      }
    }
    if (!why.empty()) {
      ++refused_;
      GEOMX_LOG(kWarning) << "tsengine: " << po_->self().name << " dropped a partial: " << why;
      return;
    }
    Round& r = it->second;
    const float* add = msg.data[0].as<float>();
    if (r.sum.empty()) {
      r.sum.assign(add, add + msg.data[0].count<float>());
    } else {
      for (size_t i = 0; i < r.sum.size(); ++i) r.sum[i] += add[i];
    }
    r.covers.insert(r.covers.end(), covers->begin(), covers->end());
    r.merged += *merged;
  }
  Ask(id);  // the coordinator decides again, with this member's sum now holding the partial
}

void TsMember::OnModel(const Message& msg, const Id& id, std::map<std::string, std::string> fields) {
  Status frame = CheckValueFrame(msg, upper_->layout(), id.first);
  if (!frame.ok()) return Refuse(msg, frame.message());
  Result<int> next = NumberOf<int>(fields, "next", -2);
  Result<int> probe = NumberOf<int>(fields, "probe", -1);
  if (!next.ok() || !probe.ok()) return Refuse(msg, "malformed model");
  if (fields[kAckField] == "1") {
    Status acked = SendOp(msg.meta.sender, id, {{kOpField, kModelAck}});
    if (!acked.ok()) GEOMX_LOG(kWarning) << "tsengine: ack: " << acked.ToString();
  }
  // "next" -1: the server served everyone, nobody to ask for; "probe": a member to send it to anyway (timed).
  const bool relay = *next != -1;
  const bool explore = !relay && members_.count(*probe) != 0 && *probe != po_->my_id();
  const bool direct = fields["direct"] == "1" && msg.meta.sender == ServerOf(id.first);
  AggregateDone done;
  int64_t ts = -1;
  const Id next_round{id.first, id.second + 1};
  bool ask_next = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto delivered = delivered_.find(id.first);
    if (delivered != delivered_.end() && id.second <= delivered->second) return;  // a second copy (a probe)
    auto it = rounds_.find(id);
    if (it == rounds_.end() || !it->second.forwarded || !it->second.done) {
      ++refused_;
      GEOMX_LOG(kWarning) << "tsengine: " << po_->self().name << " dropped an unexpected model of "
                          << KeyText(id.first) << " round " << id.second;
      return;
    }
    done = std::move(it->second.done);
    ts = it->second.ts;
    rounds_.erase(it);
    delivered_[id.first] = id.second;
    if (relay || explore) relays_[id] = Relay{msg.data[0], explore ? *probe : -1, Now()};
    // Asks for the next round's push at once, so the coordinator's answer travels while the workers compute.
    Round& n = rounds_[next_round];
    ask_next = !n.asked && !direct;
    n.asked = true;
    if (direct) n.target = ServerOf(id.first);  // the next sum goes straight to the server (no ask)
  }
  done(Status::Ok(), msg.data[0]);
  if (ts >= 0) pending_.AddResponse(ts, ServerOf(id.first), Status::Ok());
  if (relay) AskPull(id, -1, 0, 0);
  if (explore) {
    Status s = SendOp(*probe, id, {{kOpField, kModel}, {kAckField, "1"}}, {msg.data[0]});
    if (!s.ok()) GEOMX_LOG(kWarning) << "tsengine: probe to " << po_->Describe(*probe) << ": " << s.ToString();
  }
  if (ask_next) Ask(next_round);
}

void TsMember::AskPull(const Id& id, int last, double bytes, double seconds) {
  Status s = SendOp(ServerOf(id.first), id,
                    {{kOpField, kAskPull}, {"last", std::to_string(last)}, {"bytes", NumberField(bytes)},
                     {"seconds", NumberField(seconds)}});
  if (!s.ok()) GEOMX_LOG(kWarning) << "tsengine: ask_pull: " << s.ToString();
}

void TsMember::OnPullTo(const Id& id, int to, bool timed) {
  Bytes value;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = relays_.find(id);
    if (it == relays_.end()) {
      ++refused_;
      return;
    }
    if (to < 0 || members_.count(to) == 0 || to == po_->my_id()) {
      relays_.erase(it);
      return;
    }
    it->second.last = to;
    it->second.sent_at = Now();
    value = it->second.value;
  }
  Status s = SendOp(to, id, {{kOpField, kModel}, {kAckField, timed ? "1" : "0"}}, {value});
  if (!s.ok()) GEOMX_LOG(kWarning) << "tsengine: model to " << po_->Describe(to) << ": " << s.ToString();
  if (!timed) AskPull(id, to, 0, 0);  // nothing to time: the next receiver at once
}

void TsMember::OnModelAck(const Message& msg, const Id& id) {
  double bytes = 0, seconds = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = relays_.find(id);
    if (it == relays_.end() || it->second.last != msg.meta.sender) {
      ++refused_;
      return;
    }
    bytes = static_cast<double>(it->second.value.size());
    seconds = Now() - it->second.sent_at;
  }
  AskPull(id, msg.meta.sender, bytes, seconds);
}

}  // namespace geomx::comm
