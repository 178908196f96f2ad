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
// Ownership: borrows the KvWorker (must outlive the sink and every pending callback). Thread-safe; never blocks
// (callbacks run on the global Postoffice's receive thread).
#pragma once

#include <string>

#include "comm/handlers/aggregate_sink.h"

namespace geomx::comm {

class KvWorker;

class ForwardSink : public AggregateSink {
 public:
  // `codec`: Meta.codec of the aggregates forwarded (the local reducer's codec; "" for sums).
  explicit ForwardSink(KvWorker* upper, std::string codec = "") : upper_(upper), codec_(std::move(codec)) {}

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  AggregateDone done) override;
  bool FetchInitial(uint64_t wire_key, AggregateDone done) override;

 private:
  KvWorker* const upper_;
  const std::string codec_;
};

}  // namespace geomx::comm
