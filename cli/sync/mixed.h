// sync.mode mixed (MixedSync): synchronous inside each data centre (the local servers and workers are fsa's),
// asynchronous between data centres: the global server applies each data centre's update when it arrives
// (comm/handlers/async_aggregator.h), optionally bounded by sync.max_staleness and compensated by DC-ASGD
// (cli/sync/dcasgd.h). docs/synchronization.md has the semantics.
//
// MixedSink is the global server's AsyncSink: mean gradient of the data centre's update (sum / num_merged),
// DC-ASGD correction with that data centre's backup, one step of the recipe's optimizer on the master copy
// (ServerOptimizer), and the new weights as the answer (a frame when the global tier is compressed).
// Exposed for tests. Thread-safety: called under its AsyncAggregator's mutex (ServerOptimizer and DcAsgd are
// thread-safe themselves).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "cli/sync/dcasgd.h"
#include "cli/sync/server_optimizer.h"
#include "cli/sync/sync_mode.h"
#include "comm/compression/link_codec.h"
#include "comm/handlers/async_aggregator.h"

namespace geomx::cli {

class MixedSink final : public comm::AsyncSink {
 public:
  // `dcasgd`: null when sync.dcasgd.lambda is 0. `down`: the global->local encoder (null: dense tier).
  MixedSink(ServerOptimizer* optimizer, std::unique_ptr<DcAsgd> dcasgd, std::unique_ptr<comm::LinkEncoder> down);

  bool Init(uint64_t wire_key, std::span<const float> weights) override;
  bool HasWeights(uint64_t wire_key) const override;
  Result<Bytes> Apply(uint64_t wire_key, int sender, int64_t round, std::span<const float> sum,
                      int num_merged) override;
  Result<Bytes> Read(uint64_t wire_key, int sender) override;

  DcAsgd* dcasgd() const { return dcasgd_.get(); }

 private:
  Result<Bytes> Answer(uint64_t wire_key, std::span<const float> weights);

  ServerOptimizer* const optimizer_;  // borrowed
  const std::unique_ptr<DcAsgd> dcasgd_;
  const std::unique_ptr<comm::LinkEncoder> down_;
};

// The options of the global server's AsyncAggregator from the recipe (senders = the data centres in order,
// reducer from the global tier's codec, max_staleness, last_round = the job's last iteration).
comm::AsyncAggregatorOptions MixedAggregatorOptions(const ClusterContext& ctx);

}  // namespace geomx::cli
