// The seam between the roles of a topology run (cli/cluster.cc: processes, tiers, postoffices) and the
// synchronisation algorithm (recipe `sync.mode`, docs/synchronization.md). A mode is a set of three policies,
// never a flag threaded through the roles (docs/design.md):
//
//   global server  a ServerPolicy whose handler serves the global tier (the local servers push to it)
//   local server   a ServerPolicy whose handler serves its data centre's tier and talks upward through `upper`
//   worker         a WorkerSync: the trainer's ParameterUpdate plus the initial pull
//
// Modes live in one file each (cli/sync/fsa.cc, mixed.cc, hfa.cc (hfa and diloco), esync.cc); the factories
// below dispatch on recipe.sync.mode. Compression (recipe `accelerators`, comm/compression/) is applied by the
// policies on the links they send over: ClusterContext::links says which scheme each direction uses, and
// ClusterContext::TierCodec which Meta.codec each tier's requests carry.
//
// Keys: parameter i of the model (Module::Parameters() order) is PS key i; every tier's KeyLayout is built from
// the same KeySpecs and split_bytes, so a local wire key is a global wire key (handlers/forward_sink.h).
//
// Ownership: everything a policy borrows (context, KvWorker, optimizer) outlives it; policies are destroyed
// before their KvServer's Postoffice stops. Thread-safety: handlers run on receive threads (see kv_server.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/cluster.h"
#include "cli/recipe.h"
#include "cli/setup.h"
#include "cli/sync_rules.h"
#include "cli/trainer.h"
#include "comm/key_layout.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "engine/base/status.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {

// What every role of one process knows about the job.
struct ClusterContext {
  const Recipe* recipe = nullptr;
  RunSetup* setup = nullptr;            // this process's model (initial weights from recipe.seed) and data
  int64_t iterations_per_epoch = 1;     // FSA rounds per epoch (the smallest shard's full batches)
  ResolvedLinks links;                  // compression scheme per direction (cli/sync_rules.h)

  // Meta.codec of a tier's requests: "" (dense f32) when neither of its directions is compressed, else
  // comm::kCompressedCodec (every frame self-describing, comm/compression/compressor.h).
  std::string LocalTierCodec() const;
  std::string GlobalTierCodec() const;
};

// A server's algorithm: the handler its KvServer calls, plus whatever state the handler borrows.
class ServerPolicy {
 public:
  virtual ~ServerPolicy() = default;
  virtual comm::ServerHandler* handler() = 0;
};

struct LocalServerArgs {
  int dc_index = 0;                // recipe.topology.datacentres[dc_index]
  int rank = 0;                    // local server rank inside the data centre
  comm::KvWorker* upper = nullptr; // this local server's worker in the global tier
};

// The handler of a global server / a local server for recipe.sync.mode. `layout` is the tier's key layout.
Result<std::unique_ptr<ServerPolicy>> MakeGlobalServerPolicy(const ClusterContext& ctx, const comm::KeyLayout& layout);
Result<std::unique_ptr<ServerPolicy>> MakeLocalServerPolicy(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                            const LocalServerArgs& args);

struct WorkerArgs {
  int dc_index = 0;
  int rank = 0;                      // rank inside the data centre
  int worker_index = 0;              // over all data centres, in order (data shard)
  comm::KvWorker* kv = nullptr;      // this worker's KvWorker in its data centre's tier
  nn::Optimizer* optimizer = nullptr;  // the recipe's optimizer, local to this worker
  const ClusterEnv* env = nullptr;   // ESync reaches its state server through env->make_van / addresses
};

// A worker's side of the mode. Apply() is called after every backward (cli/trainer.h).
class WorkerSync : public ParameterUpdate {
 public:
  // Before the first iteration: the initial weights of the job (the master worker's, from recipe.seed).
  virtual Status PullInitial(const std::vector<nn::Parameter*>& params) = 0;
  // Adjusts the worker's trainer before it starts (ESync: rounds end the run, not epochs). Default: nothing.
  virtual void Configure(TrainerOptions* options) { (void)options; }
};

Result<std::unique_ptr<WorkerSync>> MakeWorkerSync(const ClusterContext& ctx, const WorkerArgs& args);

// The master worker's start-up push: the optimizer settings (kControl) and the initial weights (round
// kInitRound), encoded for the global tier's codec.
Status SendInitialState(const ClusterContext& ctx, comm::KvWorker& kv);

// ---- per-mode factories (one file each; the dispatchers above call them) ----
Result<std::unique_ptr<ServerPolicy>> MakeFsaGlobalServer(const ClusterContext&, const comm::KeyLayout&);
Result<std::unique_ptr<ServerPolicy>> MakeFsaLocalServer(const ClusterContext&, const comm::KeyLayout&,
                                                         const LocalServerArgs&);
Result<std::unique_ptr<WorkerSync>> MakeFsaWorker(const ClusterContext&, const WorkerArgs&);
// fsa with accelerators.p3.enabled (cli/sync/p3.cc): the worker side only; the servers are fsa's.
Result<std::unique_ptr<WorkerSync>> MakeP3Worker(const ClusterContext&, const WorkerArgs&);
// mixed (cli/sync/mixed.cc): local servers and workers as fsa; the global server applies updates on arrival.
Result<std::unique_ptr<ServerPolicy>> MakeMixedGlobalServer(const ClusterContext&, const comm::KeyLayout&);
// hfa and diloco (cli/sync/hfa.cc).
Result<std::unique_ptr<ServerPolicy>> MakeHfaGlobalServer(const ClusterContext&, const comm::KeyLayout&);
Result<std::unique_ptr<ServerPolicy>> MakeHfaLocalServer(const ClusterContext&, const comm::KeyLayout&,
                                                         const LocalServerArgs&);
Result<std::unique_ptr<WorkerSync>> MakeHfaWorker(const ClusterContext&, const WorkerArgs&);
// esync (cli/sync/esync.cc); its state server role is RunStateServer (cli/cluster.h).
Result<std::unique_ptr<ServerPolicy>> MakeEsyncGlobalServer(const ClusterContext&, const comm::KeyLayout&);
Result<std::unique_ptr<ServerPolicy>> MakeEsyncLocalServer(const ClusterContext&, const comm::KeyLayout&,
                                                           const LocalServerArgs&);
Result<std::unique_ptr<WorkerSync>> MakeEsyncWorker(const ClusterContext&, const WorkerArgs&);

}  // namespace geomx::cli
