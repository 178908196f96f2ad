// ForwardSink: the upward path of a local server. A completed local aggregate is PushPulled through a KvWorker of
// the *global* tier (the local server's second Postoffice, where it is a worker) and the global tier's answer is
// the value the local workers receive. Initial weights (a round kInitRound pull with no local value yet) are
// pulled from above the same way.
//
// Slices map 1:1: the local and global layouts must be built from the same KeySpecs and split_bytes (slicing does
// not depend on the server count, key_layout.h), so a local wire key is a global wire key; a wire key unknown to
// the global layout, or with another length, is answered with kFailedPrecondition.
// The push carries num_merged = contributors, so the global tier can average over all workers.
//
// Compression (comm/compression/, cli/sync/link_io.h): with an `up` encoder (the global tier carries codec "gx")
// the dense local aggregate is encoded per wire key with it (its residuals live here, with the sender) and the
// global tier's answer, a frame, is decoded; with a `down` encoder (the local tier carries "gx") the value given
// to the local workers is re-encoded with it, else it is dense f32. Both null: the aggregate and the answer pass
// through unchanged in `codec`. Initial weights (FetchInitial) are converted the same way, losslessly (kRaw
// frames). With an encoder the local aggregate must be dense f32 of the slice's length (reducers "sum",
// "gx_sum").
//
// Ownership: borrows the KvWorker (must outlive the sink and every pending callback). Thread-safe; never blocks
// (callbacks run on the global Postoffice's receive thread).
#pragma once

#include <memory>
#include <string>

#include "comm/compression/link_codec.h"
#include "comm/handlers/aggregate_sink.h"

namespace geomx::comm {

class KvWorker;

class ForwardSink : public AggregateSink {
 public:
  // `codec`: Meta.codec of the aggregates forwarded (the local reducer's codec; "" for sums).
  explicit ForwardSink(KvWorker* upper, std::string codec = "") : upper_(upper), codec_(std::move(codec)) {}
  // Compressed links: `up` for local->global (null: the global tier is dense), `down` for local->worker (null:
  // the local tier is dense).
  ForwardSink(KvWorker* upper, std::unique_ptr<LinkEncoder> up, std::unique_ptr<LinkEncoder> down);

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  AggregateDone done) override;
  bool FetchInitial(uint64_t wire_key, AggregateDone done) override;

 private:
  // The global tier's answer for `wire_key` as the local tier's value (decode, re-encode); `initial`: lossless.
  AggregateDone Convert(uint64_t wire_key, uint64_t length, bool initial, AggregateDone done) const;

  KvWorker* const upper_;
  const std::string codec_;
  const std::shared_ptr<LinkEncoder> up_, down_;
};

}  // namespace geomx::comm
