// TSEngine's relays (../shared/reference/accelerators.md §2; docs/accelerators.md "TSEngine"): the senders of one
// tier pass their sums to each other and the new model on to each other, in an overlay the tier's server chooses
// transfer by transfer from measured link throughput (OverlayPlanner), instead of each one talking to the server
// over its own link.
//
// Placement (recipe accelerators.tsengine.tier): between data centres, the members are the local servers and the
// coordinators the global servers (TsMember is a local server's upward sink, TsRoot decorates a global server's
// sink); inside a data centre, the members are its workers and the coordinators its local servers (TsMember is
// the relay of a worker's KvLink, KvLink::SetRelay; TsRoot decorates the local server's upward sink, so both
// tiers compose). The coordinator of a slice is the server that holds it (TSEngine's is the tier's scheduler):
// every transfer of the slice involves it anyway, so its decisions cost no extra hop, and with several servers
// each coordinates its own slices with its own throughput table. Every member sends every slice once per round
// (one local server per data centre on the global tier; every worker of a data centre on its tier).
//
// One slice, one round (members: the local servers, or the workers; S: the slice's server):
//   push    a member asks S where to pass its sum (kAskPush), early: when the previous round's value
//           arrived. S takes the waiting members in arrival order: one pushes straight to S unless a waiting member
//           is known to be reached faster than S (then the two merge: the one with the faster link to S receives
//           the other's partial sum, kPartial, adds it in and asks again) or such a member is still to come (it
//           waits). A member whose best known link is S's is told so with the previous value ("direct") and
//           pushes without asking. The push to S is a plain kPush through the member's KvLink with body field
//           covers = the members whose sums it holds; S's SyncAggregator (relayed_pushes) counts it for each, and
//           the push that completes the round makes the optimizer step as usual.
//   pull    S sends the new value (kModel) side by side to every member that no other member is known to reach
//           faster (its links to the data centres are its own); a member that gets it asks S whom to pass it to
//           (kAskPull) and gets OverlayPlanner::NextReceiver's epsilon-greedy choice (kPullTo; -1: nobody) among
//           the members still without it that no other holder reaches over a known faster link. If every holder
//           stops with members left, S serves them. A member with nobody to serve may probe one link to another
//           member (the value again, acked and dropped), with the planner's exploring probability. A member uses
//           the value as soon as it arrives (a local server answers its workers; a worker writes its weights).
// Throughput: wall-clock bytes per second of the largest slice's transfers, send to ack (kModelAck), fed to one
// planner (moving average, expiry); links are taken as symmetric where one direction is unknown. The choices of a
// round are reused for all its slices (one overlay per round).
//
// Messages: Meta.command kControl, app id kTsAppId, keys {wire key}, round, body fields (comm/codec.h) "op" and
// the op's fields, one f32 frame for kPartial and kModel (docs/wire_format.md "TSEngine"). Everything a peer sends
// is checked: the sender must be a member (or, for what only S sends, S), the slice one the receiver knows, the
// lengths the layout's; anything else is logged, counted (refused()) and dropped. Nothing a message claims sizes
// an allocation beyond the layout's slice length, and each side keeps at most a bounded number of open rounds.
//
// Errors: a member whose round's value does not come (a lost peer) fails that round after the tier's request
// timeout (topology.timeouts.request) naming the slice and its server, or at once when the tier failed, as a
// request to the server would; the job fails naming it.
// Thread-safety: both classes are thread-safe; their handlers run on the tier Postoffice's receive thread and
// never block (sends are queued by the Van). Ownership: borrow the Postoffice, the KvLink and the inner sink, which
// must outlive them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "comm/customer.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/forward_sink.h"
#include "comm/key_layout.h"
#include "comm/kv_server.h"
#include "comm/tsengine/overlay_planner.h"

namespace geomx::comm {

class KvLink;
class Postoffice;

// The Customer app id of TSEngine's messages (on the tier they relay on).
inline constexpr int kTsAppId = 9;

// The overlay one server chose in one round, over all its slices: transfers per directed pair of nodes.
struct RoundOverlay {
  int64_t round = 0;
  std::map<std::pair<int, int>, int> push;  // (from, to) -> slices; to is the server for the final pushes
  std::map<std::pair<int, int>, int> pull;  // (from, to) -> slices
  std::map<std::pair<int, int>, int> probe;  // (from, to) -> exploring transfers of a value the receiver had
};

// One JSON line for overlays.jsonl: {"round":R,"server":"...","push":[{"from":"dc-c/server0","to":
// "dc-b/server0","slices":N},...],"pull":[...]}; `name_of` gives each node id's name.
std::string OverlayJson(const RoundOverlay& overlay, const std::string& server,
                        const std::function<std::string(int)>& name_of);

// The server's side (a global server, or a local server inside its data centre): the coordinator of its slices,
// and an AggregateSink decorator (the round's value, once the inner sink answered it, is what it broadcasts).
class TsRoot : public AggregateSink {
 public:
  // `members`: the node ids of the tier's senders (the local servers, one per data centre, or the workers of a
  // data centre). `slices`: how many slices this server holds
  // (a round's overlay is reported once all of them were broadcast). `on_round` (may be empty) gets each round's
  // overlay, on the thread that finished it.
  // The caller registers the customer kTsAppId on `po` and passes its messages to OnMessage (a global server
  // builds its policies inside a handler, where registering would wait for itself). `po` may be started later;
  // its rank must be its final one.
  TsRoot(Postoffice* po, KeyLayout layout, std::vector<int> members, int slices, OverlayOptions options,
         std::function<void(const RoundOverlay&)> on_round);
  ~TsRoot() override;

  TsRoot(const TsRoot&) = delete;
  TsRoot& operator=(const TsRoot&) = delete;

  // Set once, before anything is served: the policy's sink that this decorates (ServerArgs::overlay).
  void SetSink(AggregateSink* sink) { inner_sink_ = sink; }

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors, AggregateDone done) override;
  bool FetchInitial(uint64_t wire_key, AggregateDone done) override;
  void OnLoss(int64_t round, double mean_loss) override;
  // A kTsAppId message (the Postoffice's receive thread).
  void OnMessage(Message&& msg);

  uint64_t refused() const;

 private:
  using Id = std::pair<uint64_t, int64_t>;  // wire key, round
  struct PushState {
    std::vector<int> waiting;  // members whose sum is ready, in arrival order
    std::set<int> asked;       // members that asked at least once (the others are still to come)
    std::set<int> direct;      // members told with the previous value to push straight to the server
  };
  struct PullState {
    Bytes value;
    std::set<int> served;
    std::map<int, int> asks;  // sender -> receivers it was given so far
    int active = 0;           // members given the value that were not yet told "nobody is left"
  };
  struct RootSend {  // one of the server's own transfers in flight
    double sent_at = 0;
    size_t bytes = 0;
  };
  struct Out {
    int to;
    Message msg;
  };

  // Where each waiting member passes its sum (mu_ held); decisions go to `out`.
  void Decide(const Id& id, PushState& ps, std::vector<Out>* out);
  // The measured bytes/s between two nodes, either direction (the links are taken as symmetric), as of `round`.
  std::optional<double> Rate(int a, int b, int64_t round) const;
  // The server sends the value to every receiver it picks (its links to the data centres are its own, so its
  // transfers run side by side); `force`: to every member still without it (mu_ held).
  void RootNext(const Id& id, std::vector<Out>* out, bool force = false);
  // Picks the next receiver for `from` and records it; -1 when nobody is left for `from` (mu_ held).
  int NextFor(const Id& id, int from, bool force = false);
  // A member that has nobody left to send to may explore a link to another member: its target, or -1 (mu_ held).
  int ProbeFor(const Id& id, int from);
  void NoteFinished(int64_t round);  // mu_ held; may call on_round_ (after unlocking: see Flush)
  void Send(std::vector<Out> out);
  bool IsMember(int id) const;
  // Whether (wire key, round) is a slice this server holds and a round it can still coordinate (mu_ held).
  bool Coordinates(uint64_t wire_key, int64_t round) const;

  Postoffice* const po_;
  const KeyLayout layout_;
  const std::set<int> members_;
  const int slices_;
  const std::function<void(const RoundOverlay&)> on_round_;
  AggregateSink* inner_sink_ = nullptr;

  mutable std::mutex mu_;
  // GUARDED_BY(mu_). Fed by the transfers of one slice, `measured_`, the largest: transfers of one size compare
  // links, not sizes (a small slice's transfer is latency-bound, a large one's bandwidth-bound).
  OverlayPlanner planner_;
  uint64_t measured_ = 0;
  // GUARDED_BY(mu_): (round, sender, n) -> the n-th receiver that sender was given in the round's pull.
  std::map<std::tuple<int64_t, int, int>, int> pull_plan_;
  std::set<std::pair<int64_t, int>> probed_;  // GUARDED_BY(mu_): (round, member) that explored a link
  std::map<Id, PushState> push_;              // GUARDED_BY(mu_)
  std::map<Id, PullState> pull_;              // GUARDED_BY(mu_)
  std::map<std::pair<Id, int>, RootSend> root_sends_;  // GUARDED_BY(mu_): (slice and round, receiver)
  std::map<uint64_t, int64_t> broadcast_;     // GUARDED_BY(mu_): wire key -> latest round broadcast
  std::map<int64_t, RoundOverlay> overlays_;  // GUARDED_BY(mu_): rounds not reported yet
  std::map<int64_t, int> finished_;           // GUARDED_BY(mu_): slices whose pull is over, per round
  std::vector<RoundOverlay> ready_;           // GUARDED_BY(mu_): finished rounds, reported outside the lock
  uint64_t refused_ = 0;                      // GUARDED_BY(mu_)
};

// A member's side: the AggregateSink a local server's aggregator hands each completed sum to (instead of a plain
// ForwardSink), or a worker's KvLink hands each slice of its push-pulls to (KvLink::SetRelay). Initial values are
// pulled straight from the tier (FetchInitial, as ForwardSink).
class TsMember : public AggregateSink {
 public:
  // `upper`: the member's dense link into the tier (its KvWorker's Postoffice is the one the messages travel on).
  // `members`: the node ids of all the tier's members. Construct before the tier's barrier (it registers the
  // customer kTsAppId).
  TsMember(KvLink* upper, std::vector<int> members);
  ~TsMember() override;  // unregisters the app; pending rounds' done callbacks are dropped

  TsMember(const TsMember&) = delete;
  TsMember& operator=(const TsMember&) = delete;

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors, AggregateDone done) override;
  bool FetchInitial(uint64_t wire_key, AggregateDone done) override;

  uint64_t refused() const;

 private:
  using Id = std::pair<uint64_t, int64_t>;
  struct Round {
    std::vector<float> sum;   // the data centre's sum plus the partials added in; empty once passed on
    std::vector<int> covers;  // the other members whose sums `sum` holds
    int merged = 0;
    AggregateDone done;       // null once answered
    bool ready = false;       // the data centre's own sum is in
    bool asked = false;       // the coordinator was asked (early: when the previous round's value arrived)
    int target = -1;          // where to pass the sum (push_to), once told
    bool forwarded = false;
    int64_t ts = -1;          // pending_'s request for the round's value (timeouts, tier failure)
  };
  struct Relay {
    Bytes value;
    int last = -1;
    double sent_at = 0;
  };

  void OnMessage(Message&& msg);
  void Ask(const Id& id);
  // Passes the round's sum to its target (both known).
  void Forward(const Id& id);
  // Answers the round's done with `s` and forgets the round.
  void Fail(const Id& id, const Status& s);
  void OnPushTo(const Id& id, int to);
  // `fields`: the message's control fields (decoded once, by OnMessage).
  void OnPartial(const Message& msg, const Id& id, std::map<std::string, std::string> fields);
  void OnModel(const Message& msg, const Id& id, std::map<std::string, std::string> fields);
  void OnPullTo(const Id& id, int to, bool timed);
  void OnModelAck(const Message& msg, const Id& id);
  void AskPull(const Id& id, int last, double bytes, double seconds);
  Status SendOp(int to, const Id& id, std::map<std::string, std::string> fields, std::vector<Bytes> data = {});
  int ServerOf(uint64_t wire_key) const;
  void Refuse(const Message& msg, const std::string& why);

  KvLink* const upper_;
  Postoffice* const po_;
  const std::set<int> members_;
  ForwardSink initial_;

  mutable std::mutex mu_;
  std::map<Id, Round> rounds_;   // GUARDED_BY(mu_)
  std::map<Id, Relay> relays_;   // GUARDED_BY(mu_)
  std::map<uint64_t, int64_t> delivered_;  // GUARDED_BY(mu_): wire key -> latest round whose value arrived
  uint64_t refused_ = 0;         // GUARDED_BY(mu_)
  // The values owed, one request per round whose sum left (a tracker of po_: request_timeout_ms, tier failure
  // complete them and so Fail the round). Declared last: destroyed first.
  Customer pending_;
};

}  // namespace geomx::comm
