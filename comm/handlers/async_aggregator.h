// AsyncAggregator: the asynchronous ServerHandler of a global server (MixedSync, docs/synchronization.md).
//
// Every push of a wire key from one of the `senders` (the data centres' local servers, identified by their
// node's party) is its own update: it is validated and decoded by the options' reducer ("sum" for dense f32,
// "gx_sum" for the compressed tier's frames: one contribution, so the reducer's result is that push, dense),
// handed to the AsyncSink with the sender's index, and answered with the sink's value (the new weights). There is
// no barrier across senders: one data centre's update never waits for another's push, except under the bound.
//
// Staleness (per wire key). The key has a version v = the number of updates applied to it. A sender "reads" the
// key when it receives its weights: the answer to its push, or a pull (round kInitRound: the initial weights).
// read[d] = the version sender d last received (0 before any read: the initial weights everyone starts from).
// The staleness of an update from d applied at version v is v - read[d]: the number of updates of that key by
// other senders applied since d read the weights its gradient was computed at.
//
// Bound (max_staleness S > 0): no applied update has staleness > S. The handler keeps the invariant
//   for the active senders sorted by read, ascending (r_1 <= r_2 <= ...):  v + (i - 1) - r_i <= S  for every i
// ("every sender could still be applied once, most stale first, within the bound") and applies an update from d
// only if the invariant still holds afterwards; otherwise the update waits (the faster data centre waits) and is
// applied, most stale first, as soon as it holds. The update of the least recent reader always passes, so with
// every active sender eventually pushing nothing waits forever: no deadlock. The invariant holds initially only
// if S >= senders - 1 (all read version 0), so Create refuses a smaller S. A sender is *active* until its update
// of `last_round` was applied (it finished training; nobody waits for it afterwards).
//
// Requests:
//   * kPush / kPushPull, round >= 0, from a sender: one update per key (above). Refused (kInvalidArgument, the
//     whole request, nothing changes): unknown key / another server's key, wrong codec, malformed payload, a
//     sender that is not one of `senders`, a round not above the sender's last pushed round for that key, a
//     round beyond `last_round`, a second push while its previous one waits. The same request delivered twice
//     (same sender and timestamp) is ignored.
//   * kPush / kPushPull, round kInitRound (the master worker): the initial weights (sink Init; the first wins).
//   * kPull: answered with the current weights (sink Read) at once; round kInitRound pulls before any initial
//     weights wait for the init push. A pull from a sender counts as its read.
//   * kControl: passed to `on_control` (kUnimplemented when unset).
//
// Ownership: borrows the sink (must outlive the aggregator). Thread-safety: Handle is called on the receive
// thread; one mutex guards all state and is held while the sink runs (so updates of a key are applied in version
// order); the sink must not call back into the aggregator. Responses are sent after the mutex is released.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "comm/compression/link_plan.h"
#include "comm/handlers/pending_request.h"
#include "comm/handlers/reducer.h"
#include "comm/key_layout.h"
#include "comm/kv_server.h"

namespace geomx::comm {

// What an AsyncAggregator does with the values (algorithms/sync/mixed.cc: the server optimizer and DC-ASGD).
// Called with the aggregator's mutex held, on the receive thread. Values in and out are DENSE f32: on a
// compressed tier (AsyncAggregatorOptions::tier) the aggregator decodes the pushes and encodes the answers.
class AsyncSink {
 public:
  virtual ~AsyncSink() = default;
  // The key's initial weights (dense). Returns false when the key already had weights (they are kept).
  virtual bool Init(uint64_t wire_key, std::span<const float> weights) = 0;
  virtual bool HasWeights(uint64_t wire_key) const = 0;
  // One update from sender `sender` (index into AsyncAggregatorOptions::senders): `sum` is its decoded push, the
  // sum of `num_merged` workers' gradients. Returns the answer (the new weights, dense f32).
  virtual Result<Bytes> Apply(uint64_t wire_key, int sender, int64_t round, std::span<const float> sum,
                              int num_merged) = 0;
  // The current weights for a pull (dense f32); `sender` is -1 for a node that is not a sender.
  virtual Result<Bytes> Read(uint64_t wire_key, int sender) = 0;
};

struct AsyncAggregatorOptions {
  std::vector<std::string> senders;  // parties whose pushes are updates (the data centres, in order)
  std::string reducer = "sum";       // validates and decodes one push: "sum" (codec "") or "gx_sum" (codec "gx")
  int max_staleness = 0;             // 0: no bound; else >= senders.size() - 1
  int64_t last_round = -1;           // every sender's last round (its update of it ends its activity); -1: none
  std::function<Status(const KvRequest&)> on_control;  // kControl requests
  TierCodec tier;                    // compression of the tier (compression/link_plan.h): "sum" reads frames
};

// Counters for tests and the end-of-run log line. Staleness as defined above.
struct AsyncAggregatorStats {
  int64_t applied = 0;                  // updates applied (over all keys)
  int64_t waited = 0;                   // updates that had to wait for the bound
  int64_t max_staleness = 0;            // largest staleness of an applied update
  std::vector<int64_t> applied_by_sender;
  std::map<int64_t, int64_t> staleness_histogram;  // staleness -> updates
  // Updates applied while another sender had not yet pushed the same round of that key (asynchrony observed).
  int64_t ahead_of_others = 0;
};

class AsyncAggregator : public ServerHandler {
 public:
  // kInvalidArgument for no senders, a negative max_staleness, or 0 < max_staleness < senders - 1 (naming the
  // smallest bound that can be kept); kNotFound for an unknown reducer; null sink.
  static Result<std::unique_ptr<AsyncAggregator>> Create(KeyLayout layout, AsyncAggregatorOptions options,
                                                         AsyncSink* sink);
  ~AsyncAggregator() override;

  void Handle(const KvRequest& req, KvServer& server) override;

  AsyncAggregatorStats stats() const;
  // Updates currently waiting for the staleness bound.
  size_t num_waiting() const;

 private:
  using Pending = PendingRequest;
  using Waiter = KeyWaiter;
  struct Update;
  struct KeyState;

  AsyncAggregator(KeyLayout layout, AsyncAggregatorOptions options, AsyncSink* sink, std::string codec,
                  std::unique_ptr<LinkEncoder> answers);
  // The sink's dense answer as the tier carries it (encoded with tier.answer on a compressed tier).
  Result<Bytes> Outgoing(uint64_t wire_key, Result<Bytes> dense);
  void HandlePush(const KvRequest& req, KvServer& server);
  void HandlePull(const KvRequest& req, KvServer& server);
  void HandleInitPush(const KvRequest& req, KvServer& server);
  Status CheckKey(const KvRequest& req, size_t i, int my_rank) const;
  Result<std::vector<float>> Decode(uint64_t wire_key, const Bytes& payload) const;
  int SenderIndex(const KvRequest& req, KvServer& server) const;
  KeyState& State(uint64_t wire_key);  // creates the key's state sized for the senders (mu_ held)
  // Whether applying an update from `sender` keeps the invariant (mu_ held).
  bool Admissible(const KeyState& ks, int sender) const;
  // Applies `u` (mu_ held), then every waiting update that became admissible, most stale first.
  void ApplyAndRelease(uint64_t wire_key, KeyState& ks, Update u, ReadyList* ready);
  // Applies waiting updates that became admissible, most stale first (mu_ held).
  void Release(uint64_t wire_key, KeyState& ks, ReadyList* ready);
  void ApplyOne(uint64_t wire_key, KeyState& ks, Update& u, ReadyList* ready);

  const KeyLayout layout_;
  const AsyncAggregatorOptions options_;
  AsyncSink* const sink_;
  const std::string codec_;
  const std::unique_ptr<LinkEncoder> answers_;  // compressed tier only

  mutable std::mutex mu_;
  std::map<uint64_t, KeyState> keys_;  // GUARDED_BY(mu_)
  AsyncAggregatorStats stats_;         // GUARDED_BY(mu_)
};

}  // namespace geomx::comm
