// KvWorker: the worker side of the key-value protocol for one app id of one tier. Non-blocking calls return a
// timestamp; Wait(ts) blocks until every server involved answered (or the request failed).
//
//   KvWorker kv(&po, /*app_id=*/0, layout);
//   int64_t ts = kv.PushPull({7, 9}, {grad7, grad9}, {w7, w9}, round);   // grads out, averaged weights back
//   GEOMX_RETURN_IF_ERROR(kv.Wait(ts));
//
// Keys are split by the KeyLayout: every server receives ONE message holding all its slices (one data frame per
// slice, Meta.keys = wire keys), and the responses are written into `outs` at the slices' offsets. PushPull gets
// the updated values in the push's response: one round trip, not push-then-pull.
//
// Rounds: every call names its round (training iteration). kInitRound (-1): a Push sets the server's stored value
// (initial weights) and a Pull waits until such a value exists. Servers refuse duplicate and old-round pushes.
//
// Memory: the float-pointer calls copy `values` into one buffer per destination server when called (so the caller
// may reuse them at once); the Bytes overload is zero-copy (slices of the caller's buffers). `outs` must stay
// valid until Wait(ts) returns or `done` is called; after a failure or timeout a late response never writes them.
//
// Errors (from Wait or `done`): argument errors (unknown key, size mismatch) fail the request at once, before
// anything is sent; a server's error response is returned as is, prefixed with the server's name; a missing
// answer is kDeadlineExceeded after request_timeout_ms naming the server(s), key(s) and ts; a failed tier returns
// the Postoffice's health().
//
// Threads: all calls are thread-safe. Callbacks (`done`) run on the Postoffice's receive thread (or the ticker on
// timeout, or the caller for immediate argument errors) and must not block on the network.
// Ownership: borrows the Postoffice (must outlive the KvWorker); must be destroyed outside the Postoffice's
// receive thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/customer.h"
#include "comm/key_layout.h"
#include "comm/message.h"
#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::comm {

class Postoffice;

inline constexpr int64_t kInitRound = -1;

// Body field of a push request: how many original contributions the payload already combines (a local server
// forwarding the sum of 3 workers' gradients sends 3), so that averaging at the top divides by the number of
// workers, not of data centres. Carried in Meta.body as EncodeFields({{kNumMergedField, "3"}}); absent = 1.
inline constexpr const char* kNumMergedField = "num_merged";
// Body field of a push: the sender's latest training loss ("%.9g"), when it told its KvWorker (SetLoss). The
// local servers' aggregators average it per round for DGT's adaptive k (handlers/aggregate_sink.h OnLoss).
inline constexpr const char* kLossField = "loss";
// Body field of a relayed push (TSEngine, comm/tsengine/ts_relay.h): the node ids ("4,6") of the tier's other
// senders whose contributions the pushed sum already holds. Taken only by aggregators that accept relayed pushes
// (SyncAggregatorOptions::relayed_pushes).
inline constexpr const char* kCoversField = "covers";

// A request at the wire level: explicit wire keys (KeyLayout::WireKey), one payload per wire key in `codec`
// (row-sparse, concat, ... see handlers/reducer.h; "" = dense f32 with exactly the slice's length). A kPull of a
// non-dense codec may carry one selection payload per wire key (row_sparse: the u64 row ids it wants).
struct RawRequest {
  Command command = Command::kPushPull;  // kPush, kPull or kPushPull
  std::string codec;
  int64_t round = 0;
  int num_merged = 1;                    // see kNumMergedField
  std::vector<uint64_t> wire_keys;       // each must be in the layout
  std::vector<Bytes> payloads;           // one per wire key for kPush/kPushPull; kPull: empty, or selections
  // When set: receives Meta.body of the (last) successful answer (KvRequest::reply_body), before `done`.
  std::shared_ptr<std::string> reply_body;
  // Extra Meta.body fields of the request (TSEngine's relayed push: kCoversField). Must not name the fields the
  // worker sets itself (num_merged, loss): those win.
  std::map<std::string, std::string> fields;
};
// Receives the request's status and, for kPull/kPushPull, one value per wire key (in wire_keys order).
using RawDone = std::function<void(Status, std::vector<Bytes> values)>;

class KvWorker {
 public:
  // Registers as customer `app_id` of `po` and as one of its trackers (timeouts, tier failure).
  KvWorker(Postoffice* po, int app_id, KeyLayout layout);
  ~KvWorker();  // unregisters; requests still pending complete with kCancelled

  KvWorker(const KvWorker&) = delete;
  KvWorker& operator=(const KvWorker&) = delete;

  // Dense f32 calls. keys[i] has layout().length(keys[i]) floats at values[i] / outs[i].
  int64_t Push(std::span<const uint64_t> keys, std::span<const float* const> values, int64_t round);
  int64_t Pull(std::span<const uint64_t> keys, std::span<float* const> outs, int64_t round);
  int64_t PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                   std::span<float* const> outs, int64_t round);
  // Zero-copy variant: values[i] holds keys[i]'s floats (shared, immutable once passed).
  int64_t PushPull(std::span<const uint64_t> keys, std::span<const Bytes> values, std::span<float* const> outs,
                   int64_t round);
  // Callback variant (no Wait): `done` is called exactly once.
  void PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                std::span<float* const> outs, int64_t round, std::function<void(Status)> done);

  // Blocks until `ts` completed; see the class comment for errors. Once per ts.
  Status Wait(int64_t ts);

  // Wire-level request for non-f32 payloads and for forwarding slices between tiers. `done` is called exactly
  // once. All wire keys of one server travel in one message.
  void SendRaw(RawRequest request, RawDone done);
  // Blocking convenience over SendRaw.
  Result<std::vector<Bytes>> RequestRaw(RawRequest request);

  // Sends `body` (a typed payload, e.g. EncodeFields(optimizer settings)) as kControl to every server of the tier
  // and waits for all acknowledgements; returns the first refusal.
  Status SendControl(const std::string& body);
  // Sends `body` as kControl to the server of rank `server_rank` and returns the body of its answer
  // (KvServer::RespondControl); the server may defer the answer. Errors as Wait.
  Result<std::string> QueryControl(int server_rank, const std::string& body);

  // Every push sent from now on carries `loss` (kLossField); a non-finite value stops that. Thread-safe.
  void SetLoss(double loss) { loss_.store(loss); }

  const KeyLayout& layout() const { return layout_; }
  Postoffice* postoffice() const { return po_; }
  int app_id() const { return app_id_; }
  // Live requests (for tests of bounded memory).
  size_t num_pending() const { return customer_.num_pending(); }

 private:
  struct Call;
  int64_t StartDense(Command command, std::span<const uint64_t> keys, std::span<const Bytes> values,
                     std::span<float* const> outs, int64_t round, std::function<void(Status)> done);
  int64_t StartCall(std::shared_ptr<Call> call, std::map<int, Message> messages, const std::string& what,
                    int64_t round, int num_merged, std::function<void(Status)> done);
  int64_t Fail(Status status, const std::function<void(Status)>& done);
  void OnMessage(Message&& msg);

  Postoffice* const po_;
  const int app_id_;
  const KeyLayout layout_;
  Customer customer_;
  std::atomic<double> loss_{std::numeric_limits<double>::quiet_NaN()};  // each request's Call (where its responses go) is its RequestContext
};

}  // namespace geomx::comm
