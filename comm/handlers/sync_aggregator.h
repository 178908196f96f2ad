// SyncAggregator: the fully-synchronous (FSA) ServerHandler of one server.
//
// For every wire key it serves and every round r >= 0 it collects exactly one push (kPush or kPushPull) from each
// of `expected_senders` distinct nodes, combines them with its Reducer in sender-rank order, and hands the result
// to the AggregateSink. When the sink calls done(OK, value), the value becomes the key's stored value and every
// push, pushpull and pull waiting on that key and round is answered at once: pushes with an ack, pushpulls and
// pulls with the value (so a worker gets the new value in the answer to its push: one round trip).
//
// Rounds and the store:
//   * a push for a round that already completed, or a second push from the same node for an open round (a new
//     request) is refused with kInvalidArgument naming the key and round; the same request delivered twice
//     (same sender and ts: a transport duplicate) is ignored, the first delivery is answered; at most
//     `max_open_rounds` rounds per key may be open at once (kResourceExhausted beyond);
//   * a pull for round r waits until r completed, then gets the latest stored value;
//   * round kInitRound (-1): a push sets the stored value at once (the master worker initialising global
//     weights; the reducer validates the payload); a pull is answered from the stored value, deferred until one
//     exists; if there is none the sink is asked to FetchInitial (a ForwardSink pulls it from the global tier;
//     concurrent pulls share one fetch).
//   * kControl requests are passed to `on_control` (kUnimplemented when unset) and answered with its status.
// Relayed pushes (options.relayed_pushes): a push covering other senders counts as a push of each of them (each
// must be a worker of the tier, expected in the round, and not have pushed in it, else the push is refused); the
// sum it carries is combined once, with its num_merged.
// Compressed tier (options.tier.compressed, compression/link_plan.h): the tier's payloads are frames; a "sum"
// reducer reads them ("gx_sum": the sink receives the DENSE sum), the sink answers with DENSE f32 values, and
// the aggregator encodes each answer once per key and round with tier.answer (its error-feedback state lives
// here, with the sender of the answers) before storing and sending it; initial values (an init push: kRaw
// frames; FetchInitial: dense, stored as kRaw frames) stay lossless. Sinks never see a frame.
// Every refusal is an error response (Meta.status_code + body): unknown wire key or one served by another
// server, wrong codec, wrong length or malformed payload, bad round. A request refused for one key is refused as
// a whole and changes nothing.
//
// Ownership: borrows the sink (must outlive the aggregator and its pending callbacks). Thread-safe: Handle runs
// on the receive thread, done() may come from any thread; one mutex guards all state, never held while calling
// the sink or sending.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "comm/compression/link_plan.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/pending_request.h"
#include "comm/handlers/reducer.h"
#include "comm/key_layout.h"
#include "comm/kv_server.h"

namespace geomx::comm {

struct SyncAggregatorOptions {
  int expected_senders = 1;          // pushes per (key, round): workers of the tier (or parties, at the top)
  std::string reducer = "sum";       // handlers/reducer.h
  int max_open_rounds = 64;          // per key; more is refused (bounded memory)
  std::function<Status(const KvRequest&)> on_control;  // kControl requests; runs on the receive thread
  TierCodec tier;                    // compression of this tier (compression/link_plan.h); default dense
  // Relayed pushes (TSEngine, comm/tsengine/ts_relay.h): a push whose body names other senders (kCoversField)
  // holds their contributions too and counts as theirs in its round. Off: such a push is refused.
  bool relayed_pushes = false;
};

class SyncAggregator : public ServerHandler {
 public:
  // `layout` is the tier's layout; the server's rank (from the KvServer's Postoffice) selects its wire keys.
  // kInvalidArgument for expected_senders < 1 or max_open_rounds < 1; kNotFound for an unknown reducer.
  static Result<std::unique_ptr<SyncAggregator>> Create(KeyLayout layout, SyncAggregatorOptions options,
                                                        AggregateSink* sink);

  ~SyncAggregator() override;

  void Handle(const KvRequest& req, KvServer& server) override;

  // The stored value of a wire key, if any, as it travels (a frame on a compressed tier; tests).
  std::optional<Bytes> Stored(uint64_t wire_key) const;
  // The stored value as dense floats (decoded on a compressed tier); nullopt when there is none, or it is not
  // a dense value (row_sparse, concat, ... reducers).
  std::optional<std::vector<float>> StoredValues(uint64_t wire_key) const;
  // Resuming from a snapshot: `wire_key` (one of this server's, of `values.size()` elements) has its stored value
  // set to `values` (losslessly, as an initial value) and `round` counts as its latest completed round, so
  // initial pulls get `values` and pushes start at round + 1. Before the aggregator serves anything. kInvalidArgument
  // for an unknown key or a wrong length.
  Status Restore(uint64_t wire_key, std::span<const float> values, int64_t round);
  // Rounds currently open over all keys (tests of bounded memory).
  size_t num_open_rounds() const;

  // The sender `node_id` is gone and the tier goes on without it (topology.failure_policy: continue): from now
  // on a round completes once every *other* expected sender pushed (a push it made before is kept in its round's
  // sum and counted in contributors, so the sink's mean stays the mean of what was summed); open rounds that are
  // now complete are completed at once; its later pushes are refused. Idempotent. Once no sender is left,
  // nothing completes any more (the tier fails instead; Scheduler).
  void RemoveSender(int node_id);

  // A worker that rejoins the running tier (a restarted process, comm/scheduler.h "rejoin"), in two steps because
  // each server of the tier sees its own rounds and the worker must start at one round on all of them:
  //   ProposeJoin: the first round the node can still push in here (one after the latest round that is completed,
  //     completing, or has a push of the node); from then on every round from there waits for the node.
  //   CommitJoin(round): the node pushes from `round` on (the largest proposal of all the tier's servers): the
  //     rounds from the proposal up to `round` no longer wait for it and complete without it.
  // A node that is proposed but lost before it commits is removed again (RemoveSender). Commit errors:
  // kFailedPrecondition without a proposal, kInvalidArgument for a round before it. The worker reaches both
  // through kControl requests {"command": kJoinCommand} (answer: {"round": R}) and {"command": kJoinAtCommand,
  // "round": R}.
  Result<int64_t> ProposeJoin(int node_id);
  Status CommitJoin(int node_id, int64_t round);
  static constexpr const char* kJoinCommand = "join";
  static constexpr const char* kJoinAtCommand = "join-at";
  // The "round" field of a join answer or a join-at body: kInvalidArgument when missing or not a whole number >= 0.
  static Result<int64_t> DecodeJoinRound(const std::string& body);

 private:
  using Pending = PendingRequest;
  using Waiter = KeyWaiter;
  struct RoundState;
  struct KeyState;

  SyncAggregator(KeyLayout layout, SyncAggregatorOptions options, AggregateSink* sink, std::string codec,
                 std::unique_ptr<LinkEncoder> answers);
  // A sink's dense value as the tier carries it (encoded on a compressed tier); `initial`: losslessly.
  Result<Bytes> Outgoing(uint64_t wire_key, Bytes dense, bool initial);
  void HandlePush(const KvRequest& req, KvServer& server);
  void HandlePull(const KvRequest& req, KvServer& server);
  void HandleInitPush(const KvRequest& req, KvServer& server);
  Status CheckKey(const KvRequest& req, size_t i, int my_rank) const;
  // The last push of (wire_key, round) arrived: reduce and hand to the sink (mu_ not held).
  void CompleteRound(uint64_t wire_key, int64_t round);
  void OnRoundDone(uint64_t wire_key, int64_t round, const Status& status, Bytes value);
  void OnFetchDone(uint64_t wire_key, const Status& status, Bytes value);
  // Whether `round` has the push of every sender expected in it (mu_ held).
  bool Ready(const RoundState& rs, int64_t round) const;
  // Whether `sender` is not expected in `round` (removed, or rejoined for a later round), and how many senders
  // are (mu_ held).
  bool Absent(int sender, int64_t round) const;
  // A relayed push's covered senders: allowed (options), other workers of the tier.
  Status CheckCovers(const std::vector<int>& covers, int sender, Postoffice* po) const;
  // The push timestamp recorded for a sender whose contribution came relayed (never a real timestamp).
  static constexpr int64_t kRelayedTs = INT64_MIN;
  int ExpectedIn(int64_t round) const;
  // Marks every open round that is ready now as completing and returns them, for CompleteRound (mu_ held).
  std::vector<std::pair<uint64_t, int64_t>> TakeReadyRounds();
  // kControl join / join-at: answers it and returns true; false for any other request.
  bool HandleJoin(const KvRequest& req, KvServer& server);

  const KeyLayout layout_;
  const SyncAggregatorOptions options_;
  AggregateSink* const sink_;
  const std::string codec_;
  const std::unique_ptr<LinkEncoder> answers_;  // compressed tier only

  mutable std::mutex mu_;
  std::map<uint64_t, KeyState> keys_;  // GUARDED_BY(mu_)
  // GUARDED_BY(mu_): per sender, the rounds [from, to) it is not expected in (RemoveSender: all; a rejoin cuts
  // that at its proposal and adds the rounds before its commit).
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> absent_;
  std::map<int, int64_t> proposed_;    // GUARDED_BY(mu_): ProposeJoin's round, until CommitJoin
  // GUARDED_BY(mu_): the training losses the pushes of each round reported, per sender, until the round's first
  // key completes and their mean goes to the sink (AggregateSink::OnLoss).
  std::map<int64_t, std::map<int, double>> losses_;
  int64_t losses_reported_through_ = -1;  // kInitRound: no round reported yet
};

}  // namespace geomx::comm
