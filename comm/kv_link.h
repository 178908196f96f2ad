// KvLink: a KvWorker seen through its link: the one place where what a sender sends is compressed and what it
// is answered is decompressed (compression/link_plan.h), and where send-path accelerators act (P3 today: tensor
// slicing and a priority send queue, docs/accelerators.md). Callers (sync modes, the local servers' forwarding,
// algorithm code through ps::PsContext) pass and receive dense f32 values only.
//
//   KvLink link(&kv, plan.local, {.p3 = true, .max_in_flight_bytes = 8 * 160000});
//   GEOMX_RETURN_IF_ERROR(link.PushPull(keys, grads, weights, round));          // blocking, whole keys
//   link.PushPullAsync(keys, grads, weights, round, [](size_t i, Status s) {});  // per-key completion
//
// Encoding: on a compressed tier every slice is encoded with this link's own LinkEncoder (codec.push; its
// error-feedback residuals live here, with the sender: one KvLink per sending node and tier, never re-created
// between rounds) and sent with Meta.codec kCompressedCodec; answers (frames) are decoded. On a dense tier
// values travel as f32, exactly as KvWorker sends them.
//
// Send path: without P3 a call is one request per server (KvWorker groups the slices). With P3 every slice is
// its own request, queued in a PrioritySender with priority -(key): lower keys (the first layers of a model)
// go first, and a later-queued low key overtakes queued higher ones; at most max_in_flight_bytes are on the
// network at once. With DGT, a forwarded slice's unimportant blocks go as datagrams that a lossy link may drop
// (dgt/dgt_link.h). With a relay (SetRelay: TSEngine inside a data centre, tsengine/ts_relay.h) a worker's push-pulls
// of rounds >= 0 go slice by slice to the relay, which passes them through the overlay and answers each with the
// round's value; pulls, initial values and raw calls still go to the tier.
//
// Memory: values are copied (or encoded) before a call returns; `outs` must stay valid until the call's
// completion (blocking calls: their return; PushPullAsync: every on_key call). Errors: those of KvWorker, plus
// kDataLoss for a malformed answer (the output is then untouched for that slice).
// Threads: thread-safe. Callbacks run on the Postoffice's receive thread (or the caller's, for argument errors)
// and must not block on the network. Ownership: borrows the KvWorker (must outlive the link); the destructor
// drops queued P3 slices and waits until every request it started has completed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/compression/link_plan.h"
#include "comm/dgt/dgt_link.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/kv_worker.h"
#include "engine/base/status.h"

namespace geomx::comm {

class PrioritySender;

// Send-path accelerators of one link.
struct SendPathOptions {
  bool p3 = false;                   // one request per slice, in priority order (lower key first)
  uint64_t max_in_flight_bytes = 0;  // P3: the window (0: unbounded)
  // DGT (comm/dgt/dgt_link.h) for the slices forwarded with PushPullSlice, on a dense tier only.
  std::optional<DgtLinkOptions> dgt;
  TrafficCounters* counters = nullptr;  // DGT's per-channel counters also go here (borrowed; may be null)
};

class KvLink {
 public:
  // `codec`: the tier's codec (compressed or not; codec.push is this sender's scheme).
  static Result<std::unique_ptr<KvLink>> Create(KvWorker* kv, TierCodec codec, SendPathOptions send = {});
  ~KvLink();

  KvLink(const KvLink&) = delete;
  KvLink& operator=(const KvLink&) = delete;

  // Whole keys, blocking. values[i] / outs[i] hold layout().length(keys[i]) floats. `num_merged`: the pushes
  // combine that many workers' contributions (kv_worker.h kNumMergedField).
  Status Push(std::span<const uint64_t> keys, std::span<const float* const> values, int64_t round,
              int num_merged = 1);
  Status Pull(std::span<const uint64_t> keys, std::span<float* const> outs, int64_t round);
  Status PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                  std::span<float* const> outs, int64_t round, int num_merged = 1);
  // The same with each value a shared buffer of f32 (a host tensor's storage, say). On a dense tier without P3
  // the buffers go onto the network without a copy (KvWorker's Bytes call), so they must not change until the
  // call returns; otherwise as the call above. kInvalidArgument when a buffer's size is not its key's length.
  Status PushPull(std::span<const uint64_t> keys, std::span<const Bytes> values, std::span<float* const> outs,
                  int64_t round, int num_merged = 1);

  // Whole keys, asynchronous: `on_key(i, status)` is called exactly once per key index i once all of keys[i]'s
  // slices were answered (and written to outs[i]) or one of them failed. With P3 keys complete in priority
  // order; without it, all at once.
  using KeyDone = std::function<void(size_t key_index, Status)>;
  void PushPullAsync(std::span<const uint64_t> keys, std::span<const float* const> values,
                     std::span<float* const> outs, int64_t round, KeyDone on_key);

  // One slice (forwarding between tiers): dense in, dense out. `done(status, values)` exactly once. With DGT its
  // blocks travel as DgtSender sends them (its error feedback lives here, like the compressors').
  using SliceDone = std::function<void(Status, std::vector<float>)>;
  void PushPullSlice(uint64_t wire_key, std::span<const float> values, int64_t round, int num_merged,
                     SliceDone done);
  void PullSlice(uint64_t wire_key, int64_t round, SliceDone done);

  // Payloads of non-dense codecs (row_sparse, concat, topk_merge, weighted_average) pass through unchanged.
  void SendRaw(RawRequest request, RawDone done);
  Result<std::vector<Bytes>> RequestRaw(RawRequest request);

  // Drops the P3 slices still queued (their keys never complete) and stops the send queue; requests already
  // sent stay in flight. Call before destroying the KvWorker under a link that may still have queued slices.
  void Stop();

  KvWorker* kv() const { return kv_; }
  const KeyLayout& layout() const { return kv_->layout(); }
  const TierCodec& codec() const { return codec_; }
  const SendPathOptions& send_path() const { return send_; }
  // DGT's sender (null without DGT): its channel counters and adaptive k.
  DgtSender* dgt() const { return dgt_.get(); }

  // TSEngine inside a data centre: from now on every push-pull of a round >= 0 hands each slice to `relay`
  // (OnComplete(wire_key, round, dense slice, num_merged, done)) instead of sending it, and writes the value
  // `relay` answers (dense f32 of the slice's length; anything else fails the slice with kDataLoss). Call once,
  // before any push-pull, on a dense link without P3 or DGT (kFailedPrecondition otherwise). Borrowed: the relay
  // must outlive every call it was handed, and it may send through this link's SendRaw itself.
  Status SetRelay(AggregateSink* relay);

 private:
  struct Call;
  KvLink(KvWorker* kv, TierCodec codec, SendPathOptions send);

  // Starts every slice of `keys`; `on_key` per key index. Argument errors complete every key with the error.
  void Start(Command command, std::span<const uint64_t> keys, std::span<const float* const> values,
             std::span<float* const> outs, int64_t round, int num_merged, KeyDone on_key);
  Status Blocking(Command command, std::span<const uint64_t> keys, std::span<const float* const> values,
                  std::span<float* const> outs, int64_t round, int num_merged);
  Result<Bytes> EncodeSlice(uint64_t wire_key, std::span<const float> values);
  Status DecodeInto(const Bytes& value, std::span<float> out) const;
  void Send(RawRequest request, RawDone done);  // counts the request in flight
  void Finished();

  KvWorker* const kv_;
  const TierCodec codec_;
  const SendPathOptions send_;
  std::unique_ptr<LinkEncoder> encoder_;  // null on a dense tier
  std::unique_ptr<DgtSender> dgt_;        // null without DGT
  AggregateSink* relay_ = nullptr;        // TSEngine's worker side (SetRelay); set before use

  std::mutex mu_;
  std::condition_variable idle_;
  int64_t in_flight_ = 0;  // GUARDED_BY(mu_)
  std::unique_ptr<PrioritySender> sender_;  // P3; destroyed first
};

}  // namespace geomx::comm
