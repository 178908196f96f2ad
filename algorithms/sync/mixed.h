// sync.mode mixed (MixedSync): synchronous inside each data centre (the local servers and workers are fsa's),
// asynchronous between data centres: the global server applies each data centre's update when it arrives
// (comm/handlers/async_aggregator.h), optionally bounded by sync.max_staleness and compensated by DC-ASGD
// (dcasgd.h). docs/synchronization.md has the semantics.
//
// MixedSink is the global server's AsyncSink: mean gradient of the data centre's update (sum / num_merged),
// DC-ASGD correction with that data centre's backup, one step of the job's optimizer on the master copy
// (ServerOptimizer), and the new weights (dense; the aggregator encodes them for a compressed tier) as the
// answer. Exposed for tests. Thread-safety: called under its AsyncAggregator's mutex (ServerOptimizer and DcAsgd
// are thread-safe themselves).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "algorithms/sync/dcasgd.h"
#include "algorithms/sync/server_optimizer.h"
#include "algorithms/sync/sync_mode.h"
#include "comm/handlers/async_aggregator.h"

namespace geomx::sync {

// The mode's own config, from SyncSettings.
struct MixedConfig {
  int max_staleness = 0;         // 0: no bound
  float dcasgd_lambda = 0.0f;    // 0: no DC-ASGD
  bool dcasgd_adaptive = false;
  float dcasgd_decay = 0.95f;
};

class MixedSink final : public comm::AsyncSink {
 public:
  // `dcasgd`: null when sync.dcasgd.lambda is 0.
  MixedSink(ServerOptimizer* optimizer, std::unique_ptr<DcAsgd> dcasgd);

  bool Init(uint64_t wire_key, std::span<const float> weights) override;
  bool HasWeights(uint64_t wire_key) const override;
  Result<Bytes> Apply(uint64_t wire_key, int sender, int64_t round, std::span<const float> sum,
                      int num_merged) override;
  Result<Bytes> Read(uint64_t wire_key, int sender) override;

  DcAsgd* dcasgd() const { return dcasgd_.get(); }

 private:
  ServerOptimizer* const optimizer_;  // borrowed
  const std::unique_ptr<DcAsgd> dcasgd_;
};

// The options of the global server's AsyncAggregator (senders = the data centres in order, the tier's codec,
// max_staleness, last_round = the job's last iteration).
comm::AsyncAggregatorOptions MixedAggregatorOptions(const SyncJob& job, const MixedConfig& config,
                                                    const comm::TierCodec& codec);

}  // namespace geomx::sync
