// ForwardSink: the upward path of a local server. A completed local aggregate is PushPulled through the local
// server's KvLink into the *global* tier (its second Postoffice, where it is a worker) and the global tier's
// answer is the value the local workers receive. Initial values (a round kInitRound pull with no local value yet)
// are pulled from above the same way.
//
// Slices map 1:1: the local and global layouts must be built from the same KeySpecs and split_bytes (slicing does
// not depend on the server count, key_layout.h), so a local wire key is a global wire key; a wire key unknown to
// the global layout, or with another length, is answered with kFailedPrecondition.
// The push carries num_merged = contributors, so the global tier can average over all workers.
//
// Values: for a dense reducer ("sum"; "gx_sum" on a compressed local tier: the aggregate is the dense sum) the
// aggregate goes up as dense floats through the KvLink, which encodes it for the global tier (local_to_global)
// and decodes the answer; the dense answer goes back to the local aggregator, which encodes it for its own tier
// (local_to_worker). Other codecs (row_sparse, concat, topk_merge, weighted_average) are forwarded unchanged.
//
// Ownership: borrows the KvLink (must outlive the sink and every pending callback). Thread-safe; never blocks
// (callbacks run on the global Postoffice's receive thread).
#pragma once

#include <string>

#include "comm/handlers/aggregate_sink.h"

namespace geomx::comm {

class KvLink;

class ForwardSink : public AggregateSink {
 public:
  // `codec`: Meta.codec of the aggregates forwarded; "" (dense sums, also for "gx_sum") goes through the link's
  // codec, any other codec passes through unchanged.
  explicit ForwardSink(KvLink* upper, std::string codec = "") : upper_(upper), codec_(std::move(codec)) {}

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  AggregateDone done) override;
  bool FetchInitial(uint64_t wire_key, AggregateDone done) override;
  // The round's mean training loss goes to the upward link's DGT sender (its adaptive k), if it has one.
  void OnLoss(int64_t round, double mean_loss) override;

 private:
  KvLink* const upper_;
  const std::string codec_;
};

}  // namespace geomx::comm
