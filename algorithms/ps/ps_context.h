// PsContext: what algorithm code (a classical estimator's fit loop, a test) sees of the parameter server on one
// worker. It talks to the worker's data centre tier; the local servers aggregate and forward, the global servers
// reduce over all data centres and run the job's rule (global_rule.h). Every call names the key (key_schema.h)
// and the round; rounds of a key increase by one per use, starting at 0.
//
//   Push / Pull / PushPull      dense sum keys: every worker's vector summed over the whole job
//   PushPullPayload             any reducer: concat, topk_merge, weighted_average payloads (comm/handlers/
//                               payloads.h) in, the job-wide result (or the rule's answer) out
//   PushRows / PullRows         row-sparse keys: row deltas in (the table adds them), selected rows out
//   PullDecision                decision keys: what the global server's rule published for the round
//   (keys of role local: the same calls, answered by the local servers over the worker's data centre only)
//   Barrier                     every worker of every data centre has reached the same barrier
//
// Parameter keys go through the tier's link (its compression and send path, comm/kv_link.h); other keys travel
// uncompressed in their reducer's codec (a second, dense link). All calls block until answered; errors are those
// of KvWorker (peer errors name the server, timeouts after topology.timeouts.request) plus kInvalidArgument for a
// key that is not in the schema or has another reducer, role or size than the call needs.
// Not thread-safe: one thread per worker calls it. Borrows the links (must outlive it).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/ps/key_schema.h"
#include "comm/handlers/payloads.h"
#include "comm/kv_link.h"
#include "engine/base/status.h"

namespace geomx::ps {

class PsContext {
 public:
  // `parameters`: the tier link with its codec and send path; `aux`: a dense link over the same KvWorker.
  // `schema` must include kBarrierKey for Barrier() (KeySchema::WithBarrier).
  PsContext(comm::KvLink* parameters, comm::KvLink* aux, KeySchema schema, int worker_index, int num_workers);

  int worker_index() const { return worker_index_; }  // over all data centres
  int num_workers() const { return num_workers_; }
  const KeySchema& schema() const { return schema_; }

  Status Push(uint64_t key, std::span<const float> values, int64_t round);
  Status Pull(uint64_t key, std::span<float> out, int64_t round);
  Status PushPull(uint64_t key, std::span<const float> values, std::span<float> out, int64_t round);

  Result<Bytes> PushPullPayload(uint64_t key, Bytes payload, int64_t round);

  // `values`: rows.size() x row_width deltas. Returns the updated rows (as the table holds them after the round).
  Result<comm::RowSparse> PushRows(uint64_t key, std::span<const uint64_t> rows, std::span<const float> values,
                                   int64_t round);
  // The rows after round `round` was applied (kInitRound: as they are now); `out`: rows.size() x row_width.
  Status PullRows(uint64_t key, std::span<const uint64_t> rows, std::span<float> out, int64_t round);

  Status PullDecision(uint64_t key, int64_t round, std::span<float> out);

  Status Barrier();

 private:
  Result<const KeyDef*> Def(uint64_t key, const char* call) const;
  comm::KvLink* LinkFor(const KeyDef& k) const { return k.role == KeyRole::kParameter ? parameters_ : aux_; }
  Status Dense(comm::Command command, uint64_t key, std::span<const float> values, std::span<float> out,
               int64_t round);

  comm::KvLink* const parameters_;
  comm::KvLink* const aux_;
  const KeySchema schema_;
  const int worker_index_;
  const int num_workers_;
  int64_t barriers_ = 0;
};

}  // namespace geomx::ps
