// TsRoot and the overlay log (ts_relay.h).
#include "comm/tsengine/ts_relay.h"

#include <algorithm>
#include <climits>
#include <cmath>
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
using ts::kModel;
using ts::kModelAck;
using ts::kAskPull;
using ts::kPullTo;
using ts::kAckField;
using ts::kMaxOpenRoundsPerSlice;
using ts::Now;
using ts::Op;
using ts::ParseOp;
using ts::NumberOf;
using ts::MakeOp;

std::string OverlayJson(const RoundOverlay& overlay, const std::string& server,
                        const std::function<std::string(int)>& name_of) {
  auto edges = [&](const std::map<std::pair<int, int>, int>& m) {
    std::string out = "[";
    for (const auto& [edge, n] : m) {
      if (out.size() > 1) out += ",";
      out += "{\"from\":\"" + name_of(edge.first) + "\",\"to\":\"" + name_of(edge.second) +
             "\",\"slices\":" + std::to_string(n) + "}";
    }
    return out + "]";
  };
  return "{\"round\":" + std::to_string(overlay.round) + ",\"server\":\"" + server + "\",\"push\":" +
         edges(overlay.push) + ",\"pull\":" + edges(overlay.pull) + ",\"probe\":" + edges(overlay.probe) + "}";
}

TsRoot::TsRoot(Postoffice* po, KeyLayout layout, std::vector<int> members, int slices, OverlayOptions options,
               std::function<void(const RoundOverlay&)> on_round)
    : po_(po),
      layout_(std::move(layout)),
      members_(members.begin(), members.end()),
      slices_(std::max(1, slices)),
      on_round_(std::move(on_round)),
      planner_(options) {
  // The slice whose transfers measure the links: the largest (the least latency-bound) this server holds.
  uint64_t longest = 0;
  for (uint64_t key : layout_.keys()) {
    for (const KeySlice& s : layout_.slices(key)) {
      if (s.server_rank == po_->my_rank() && s.length > longest) {
        longest = s.length;
        measured_ = s.wire_key;
      }
    }
  }
}

TsRoot::~TsRoot() = default;

bool TsRoot::IsMember(int id) const { return members_.count(id) != 0; }

bool TsRoot::Coordinates(uint64_t wire_key, int64_t round) const {
  const KeySlice* s = layout_.FindWireKey(wire_key);
  if (s == nullptr || s->server_rank != po_->my_rank() || round < 0) return false;
  auto it = broadcast_.find(wire_key);
  return it == broadcast_.end() || round > it->second;
}

uint64_t TsRoot::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

void TsRoot::Send(std::vector<Out> out) {
  for (Out& o : out) {
    Status s = po_->Send(o.to, std::move(o.msg));
    if (!s.ok()) GEOMX_LOG(kWarning) << "tsengine: to " << po_->Describe(o.to) << ": " << s.ToString();
  }
  std::vector<RoundOverlay> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready.swap(ready_);
  }
  if (on_round_) {
    for (const RoundOverlay& r : ready) on_round_(r);
  }
}

std::optional<double> TsRoot::Rate(int a, int b, int64_t round) const {
  std::optional<double> t = planner_.Throughput(a, b, round);
  return t ? t : planner_.Throughput(b, a, round);
}

void TsRoot::Decide(const Id& id, PushState& ps, std::vector<Out>* out) {
  const int server = po_->my_id();
  const int64_t round = id.second;
  auto tell = [&](int from, int to) {
    overlays_[round].round = round;
    overlays_[round].push[{from, to}] += 1;
    out->push_back({from, MakeOp(id.first, round, {{kOpField, kPushTo}, {"to", std::to_string(to)}}, {})});
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto x = ps.waiting.begin(); x != ps.waiting.end(); ++x) {
      const std::optional<double> direct = Rate(*x, server, round);
      // The fastest known link to another waiting member, if it beats the server's.
      auto partner = ps.waiting.end();
      double best = direct.value_or(0);
      for (auto y = ps.waiting.begin(); y != ps.waiting.end(); ++y) {
        const std::optional<double> r = y == x ? std::nullopt : Rate(*x, *y, round);
        if (r && *r > best) {
          best = *r;
          partner = y;
        }
      }
      if (partner != ps.waiting.end()) {
        // The merged sum goes on to the server from the receiver: the one with the faster known link to it (an
        // unknown link counts as the slowest); when neither is known, or both are equal, the faster direction
        // between the two (OverlayPlanner::PairForPush).
        const std::optional<double> px = direct, py = Rate(*partner, server, round);
        auto [from, to] = planner_.PairForPush(*x, *partner, server, round);
        if ((px || py) && px.value_or(0) != py.value_or(0)) {
          const bool x_receives = px.value_or(0) > py.value_or(0);
          from = x_receives ? *partner : *x;
          to = x_receives ? *x : *partner;
        }
        tell(from, to);
        const int a = *x, b = *partner;
        ps.waiting.erase(std::remove_if(ps.waiting.begin(), ps.waiting.end(),
                                        [&](int n) { return n == a || n == b; }),
                         ps.waiting.end());
        changed = true;  // `to` asks again once it added the partial in
        break;
      }
      // Wait for a member still to come whose link beats the server's; otherwise push to the server.
      bool wait = false;
      for (int z : members_) {
        const std::optional<double> r = ps.asked.count(z) != 0 ? std::nullopt : Rate(*x, z, round);
        wait = wait || (r && *r > direct.value_or(0));
      }
      if (wait) continue;
      tell(*x, server);
      ps.waiting.erase(x);
      changed = true;
      break;
    }
  }
}

void TsRoot::OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors, AggregateDone done) {
  inner_sink_->OnComplete(wire_key, round, std::move(aggregate), contributors,
                          [this, wire_key, round, done = std::move(done)](Status s, Bytes value) {
                            if (s.ok()) {
                              std::vector<Out> out;
                              {
                                std::lock_guard<std::mutex> lock(mu_);
                                const Id id{wire_key, round};
                                push_.erase(id);
                                int64_t& latest = broadcast_.try_emplace(wire_key, round).first->second;
                                latest = std::max(latest, round);
                                overlays_[round].round = round;
                                pull_[id] = PullState{value, {}};
                                RootNext(id, &out);
                              }
                              Send(std::move(out));
                            }
                            done(s, std::move(value));
                          });
}

bool TsRoot::FetchInitial(uint64_t wire_key, AggregateDone done) {
  return inner_sink_->FetchInitial(wire_key, std::move(done));
}

void TsRoot::OnLoss(int64_t round, double mean_loss) { inner_sink_->OnLoss(round, mean_loss); }

int TsRoot::NextFor(const Id& id, int from, bool force) {
  auto it = pull_.find(id);
  if (it == pull_.end()) return -1;
  // Who `from` may send to, among the members without the value:
  //   * the server: every member, except one that another member reaches faster than the server does (both
  //     links known) while the server reaches that other member faster: it is left to be relayed;
  //   * a member: every member, except one that another holder (the server, or a member that has the value or is
  //     being sent it) reaches over a known faster link: left to that holder (TSEngine gave the last member to
  //     whoever asked first, over any link).
  // Unknown links stay candidates. `force`: no exclusion (the server serving what every holder left).
  const int server = po_->my_id();
  const int64_t round = id.second;
  std::vector<int> candidates;
  for (int m : members_) {
    if (it->second.served.count(m) != 0) continue;
    const std::optional<double> mine = Rate(from, m, round);
    bool leave = false;
    if (from == server) {
      for (int h : members_) {
        const std::optional<double> hm = h == m ? std::nullopt : Rate(h, m, round), sh = Rate(server, h, round);
        leave = leave || (mine && hm && sh && *hm > *mine && *sh > *mine);
      }
    } else {
      std::set<int> holders = it->second.served;
      holders.insert(server);
      for (int h : holders) {
        const std::optional<double> r = h == from ? std::nullopt : Rate(h, m, round);
        leave = leave || (mine && r && *r > *mine);
      }
    }
    if (force || !leave) candidates.push_back(m);
  }
  if (candidates.empty()) return -1;
  // One overlay per round: the n-th receiver `from` picked for an earlier slice of the round is picked again
  // when it still lacks this slice, so the slices follow one tree instead of each drawing its own (a round lasts
  // as long as its slowest slice).
  const int nth = it->second.asks[from]++;
  int& planned = pull_plan_[{id.second, from, nth}];
  int to = planned;
  if (std::find(candidates.begin(), candidates.end(), to) == candidates.end()) {
    to = planner_.NextReceiver(from, candidates, id.second);
    planned = to;
  }
  it->second.served.insert(to);
  it->second.active += 1;  // `to` will ask whom to send to next
  overlays_[id.second].pull[{from, to}] += 1;
  if (it->second.served.size() == members_.size()) {  // everyone has it or is about to: the slice's pull is over
    pull_.erase(it);
    NoteFinished(id.second);
  }
  return to;
}

int TsRoot::ProbeFor(const Id& id, int from) {
  // Links between members are measured by the transfers they carry; with the value everywhere, `from` explores
  // one of them (at most once a round, on the measured slice) with the planner's exploring probability: the
  // value again to a member that has it, which acks it and drops it.
  auto latest = broadcast_.find(id.first);
  if (id.first != measured_ || latest == broadcast_.end() || latest->second != id.second) return -1;
  if (!probed_.insert({id.second, from}).second) return -1;  // one a round
  std::vector<int> others;
  for (int m : members_) {
    if (m != from) others.push_back(m);
  }
  if (others.empty()) return -1;
  const std::optional<int> to = planner_.Probe(from, others, id.second);
  if (!to) return -1;
  overlays_[id.second].probe[{from, *to}] += 1;
  return *to;
}

void TsRoot::RootNext(const Id& id, std::vector<Out>* out, bool force) {
  auto it = pull_.find(id);
  if (it == pull_.end()) return;
  const Bytes value = it->second.value;  // NextFor forgets the slice's pull once everyone is served
  std::vector<int> targets;
  for (int to = NextFor(id, po_->my_id(), force); to >= 0; to = NextFor(id, po_->my_id(), force)) {
    targets.push_back(to);
  }
  if (members_.empty() && pull_.erase(id) != 0) NoteFinished(id.second);
  // Only the measured slice's transfers are acked (and timed). When the server served everyone, its receivers
  // are told so ("next" -1: nobody to ask for) and may be given a link to explore at once ("probe").
  const bool everyone = pull_.count(id) == 0;
  const int server = po_->my_id();
  const int64_t next_round = id.second + 1;
  for (int to : targets) {
    std::map<std::string, std::string> fields = {{kOpField, kModel}, {kAckField, id.first == measured_ ? "1" : "0"}};
    // A member with no known link to another member faster than its link to the server pushes its next sum
    // straight to the server whoever comes first (Decide would say so), so it is told now and need not ask:
    // no round trip before its push. It counts as having asked, so nobody waits for it.
    bool direct = push_.size() < kMaxOpenRoundsPerSlice * static_cast<size_t>(slices_);
    const double to_server = Rate(to, server, next_round).value_or(0);
    for (int z : members_) {
      const std::optional<double> r = z == to ? std::nullopt : Rate(to, z, next_round);
      direct = direct && !(r && *r > to_server);
    }
    if (direct) {
      PushState& next = push_[{id.first, next_round}];
      next.asked.insert(to);
      next.direct.insert(to);
      overlays_[next_round].round = next_round;
      overlays_[next_round].push[{to, server}] += 1;
      fields["direct"] = "1";
    }
    if (id.first == measured_) root_sends_[{id, to}] = RootSend{Now(), value.size()};
    if (everyone) {
      fields["next"] = "-1";
      const int probe = ProbeFor(id, to);
      if (probe >= 0) fields["probe"] = std::to_string(probe);
    }
    out->push_back({to, MakeOp(id.first, id.second, std::move(fields), {value})});
  }
}

void TsRoot::NoteFinished(int64_t round) {
  if (++finished_[round] < slices_) return;
  finished_.erase(round);
  pull_plan_.erase(pull_plan_.begin(), pull_plan_.lower_bound({round + 1, INT_MIN, INT_MIN}));
  probed_.erase(probed_.begin(), probed_.lower_bound({round - 1, INT_MIN}));  // late asks of the round just before
  // Acks that never came (a member that does not answer) are forgotten after a round.
  for (auto it = root_sends_.begin(); it != root_sends_.end();) {
    it = it->first.first.second < round - 1 ? root_sends_.erase(it) : std::next(it);
  }
  auto it = overlays_.find(round);
  if (it != overlays_.end()) {
    ready_.push_back(std::move(it->second));
    overlays_.erase(it);
  }
}

void TsRoot::OnMessage(Message&& msg) {
  const int from = msg.meta.sender;
  Result<Op> op = ParseOp(msg);
  std::vector<Out> out;
  std::string refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!op.ok()) {
      refused = op.status().message();
    } else if (!IsMember(from)) {
      refused = "not a member";
    } else {
      const Id id{op->wire_key, op->round};
      const KeySlice* s = layout_.FindWireKey(id.first);
      if (s == nullptr || s->server_rank != po_->my_rank()) {
        refused = KeyText(id.first) + " is not this server's";
      } else if (op->op == kAskPush) {
        if (!Coordinates(id.first, id.second)) {
          refused = KeyText(id.first) + " round " + std::to_string(id.second) + " is over";
        } else {
          auto it = push_.find(id);
          if (it == push_.end()) {
            if (push_.size() >= kMaxOpenRoundsPerSlice * static_cast<size_t>(slices_)) {
              refused = "too many open rounds";
            } else {
              it = push_.emplace(id, PushState{}).first;
            }
          }
          if (it != push_.end()) {
            PushState& ps = it->second;
            if (std::find(ps.waiting.begin(), ps.waiting.end(), from) != ps.waiting.end()) {
              refused = "asked twice";
            } else if (ps.direct.count(from) != 0) {
              // Told to push straight to the server with a value it then got from a probe first: say it again.
              out.push_back({from, MakeOp(id.first, id.second,
                                          {{kOpField, kPushTo}, {"to", std::to_string(po_->my_id())}}, {})});
            } else {
              ps.asked.insert(from);
              ps.waiting.push_back(from);
              Decide(id, ps, &out);
            }
          }
        }
      } else if (op->op == kAskPull) {
        Result<int> last = NumberOf<int>(op->fields, "last", -1);
        Result<double> bytes = NumberOf<double>(op->fields, "bytes", 0);
        Result<double> seconds = NumberOf<double>(op->fields, "seconds", 0);
        if (!last.ok() || !bytes.ok() || !seconds.ok()) {
          refused = "malformed ask_pull";
        } else {
          if (IsMember(*last) && std::isfinite(*bytes) && std::isfinite(*seconds)) {
            if (id.first == measured_) planner_.Report(from, *last, *bytes, *seconds, id.second);
          }
          int to = NextFor(id, from);
          auto it = pull_.find(id);
          if (to < 0 && it != pull_.end() && --it->second.active <= 0) {
            RootNext(id, &out, /*force=*/true);  // every holder stopped with members left: the server serves them
          }
          if (to < 0 && pull_.count(id) == 0) to = ProbeFor(id, from);
          out.push_back({from, MakeOp(id.first, id.second,
                                      {{kOpField, kPullTo},
                                       {"to", std::to_string(to)},
                                       {kAckField, id.first == measured_ ? "1" : "0"}},
                                      {})});
        }
      } else if (op->op == kModelAck) {
        auto it = root_sends_.find({id, from});
        if (it == root_sends_.end()) {
          refused = "unexpected model_ack";
        } else {
          if (id.first == measured_) {
            planner_.Report(po_->my_id(), from, static_cast<double>(it->second.bytes), Now() - it->second.sent_at,
                            id.second);
          }
          root_sends_.erase(it);
        }
      } else {
        refused = "unexpected op '" + op->op + "'";
      }
    }
    if (!refused.empty()) ++refused_;
  }
  if (!refused.empty()) {
    GEOMX_LOG(kWarning) << "tsengine: " << po_->self().name << " dropped a message from " << po_->Describe(from)
                        << ": " << refused;
  }
  Send(std::move(out));
}

}  // namespace geomx::comm
