// sync.mode fsa: synchronous on both tiers (docs/synchronization.md). One round per training iteration:
//   worker      PushPull(gradients, r) to its local servers; gets the new weights (or, with optimizer.where:
//               worker, the mean gradient, and steps its own optimizer)
//   local srv   SyncAggregator over its workers -> ForwardSink: the sum goes up with num_merged = its workers
//   global srv  SyncAggregator over the data centres -> OptimizerSink: mean over all workers, then the
//               optimizer step on the master copy (or, with optimizer.where: worker, the mean gradient itself)
// Compression happens in the links (each sender's KvLink, each aggregator's answer encoder); P3 in the workers'
// KvLink send path (ParamExchange writes each layer before its next forward pass).
//
// mixed (mixed.cc) reuses the local server and the worker; exposed here for it.
#pragma once

#include <memory>

#include "algorithms/sync/sync_mode.h"

namespace geomx::sync {

Result<std::unique_ptr<ServerPolicy>> MakeFsaLocalServer(const LocalServerArgs& args);
Result<std::unique_ptr<WorkerSync>> MakeFsaWorker(const WorkerArgs& args);

// The recipe rules fsa and mixed share: a sparse global->local link cannot carry the dense weights that a
// server-side optimizer answers with. `weights_down_why`: the setting that makes the answers weights.
void CheckWeightsDown(const SyncRuleInput& in, const std::string& weights_down_why, const std::string& fix_suffix,
                      std::vector<RuleViolation>* out);

}  // namespace geomx::sync
