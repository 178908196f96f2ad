// The seam of the synchronisation algorithms (recipe `sync.mode`, docs/synchronization.md, docs/adding_a_sync_mode.md).
//
// A mode is a set of three policies, never a flag threaded through the roles (docs/design.md):
//   global server  a ServerPolicy whose handler serves the global tier (the local servers push to it)
//   local server   a ServerPolicy whose handler serves its data centre's tier and talks upward through `upper`
//   worker         a WorkerSync: the trainer's ParameterUpdate plus the initial pull
// A mode is one file (fsa.cc, mixed.cc, hfa.cc (hfa, diloco), esync.cc) with its typed config, its policies, its
// recipe rules and one GEOMX_REGISTER_SYNC_MODE line. Nothing outside that file compares mode names; other code
// asks the registry for a mode's traits.
//
// Policies see dense f32 values only: compression is applied by the links (comm/kv_link.h on the sending side,
// the aggregators' TierCodec on the answering side), so a policy passes the tier codec it is given to the
// aggregator it creates and never encodes. Send-path accelerators (P3) live in the KvLink too and compose with
// every mode.
//
// Keys: the policies serve the job's parameter keys (ps::KeyRole::kParameter); each tier's KeyLayout is built
// from the same KeySpecs and split_bytes, so a local wire key is a global wire key (handlers/forward_sink.h).
// Ownership: everything a policy borrows outlives it; policies are destroyed before their KvServer's Postoffice
// stops. Thread-safety: handlers run on receive threads (comm/kv_server.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/ps/job.h"
#include "algorithms/ps/server_state.h"
#include "algorithms/sync/sync_observer.h"
#include "algorithms/sync/sync_settings.h"
#include "algorithms/train/parameter_update.h"
#include "algorithms/train/training_config.h"
#include "comm/compression/link_plan.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/key_layout.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "comm/tsengine/ts_relay.h"
#include "comm/van.h"
#include "engine/base/status.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace geomx::sync {

// What every policy of one job knows. The job description (keys, plan, optimizer, schedule) comes from the
// master worker; the rest from the typed configs cli/ built.
struct SyncJob {
  ps::JobDescription job;
  OptimizerPlacement optimizer_where = OptimizerPlacement::kGlobalServer;
  std::vector<std::string> datacentres;  // names, in topology order (the global tier's senders)
  int total_workers = 1;
  uint64_t seed = 42;
};

// A server's algorithm: the handler its KvServer calls, plus whatever state the handler borrows.
class ServerPolicy {
 public:
  virtual ~ServerPolicy() = default;
  virtual comm::ServerHandler* handler() = 0;
  // The state to checkpoint (ps/server_state.h); null when the policy keeps none beyond the round in flight.
  virtual ps::ServerState* state() { return nullptr; }
  // Resuming a job (SyncModeTraits::snapshots): replaces the policy's state with `saved` (what state() saved
  // when `round` completed) and serves as if `round` had just completed: initial pulls get the restored values
  // and pushes start at round + 1. Called before the policy serves anything. kDataLoss naming what is missing.
  virtual Status Restore(const ps::StateTensors& saved, int64_t round) {
    (void)saved;
    return Status::Unimplemented("this sync mode cannot restore round " + std::to_string(round) +
                                 " from a snapshot");
  }
  // A worker of the tier is gone and the tier goes on without it (topology.failure_policy: continue): stop
  // waiting for its pushes. kUnimplemented for modes that cannot (SyncModeTraits::survives_lost_workers).
  virtual Status RemoveSender(int node_id) {
    return Status::Unimplemented("this sync mode cannot go on without node " + std::to_string(node_id));
  }
};

struct ServerArgs {
  const SyncJob* job = nullptr;            // borrowed
  comm::KeyLayout layout;                  // the tier's layout of the parameter keys
  comm::TierCodec codec;                   // this tier's codec: pass it to the aggregator's options
  SyncObserver* observer = nullptr;        // may be null
  int rank = 0;                            // this server's rank in its tier (which slices of `layout` it holds)
  // Global servers of the modes with SyncModeTraits::snapshots: called once per round, when every key this server
  // holds completed `round` and before any answer of that round's last key is sent, so the policy's state() is
  // the job's state after exactly `round` (server snapshots, algorithms/cluster/snapshots.h). Runs on the thread
  // that completed the round; may be empty.
  std::function<void(int64_t round)> round_done;
  // TSEngine (accelerators.tsengine; modes with SyncModeTraits::overlay): the server aggregates relayed pushes
  // (SyncAggregatorOptions::relayed_pushes) and hands its sink to the overlay (TsRoot::SetSink), whose decorator
  // broadcasts each round's value through the tier's senders (a global server: the local servers; a local
  // server: its workers). Null: off.
  comm::TsRoot* overlay = nullptr;
};

struct LocalServerArgs : ServerArgs {
  int dc_index = 0;                        // its data centre, in topology order
  int workers = 1;                         // that data centre's workers (pushes per round)
  comm::KvLink* upper = nullptr;           // this local server's link into the global tier
  // TSEngine (modes with SyncModeTraits::overlay): the sums go to this sink (a comm::TsMember, which relays them)
  // instead of a ForwardSink on `upper`. Null: off.
  comm::AggregateSink* upward = nullptr;
  // sync.initial_weights: seed: the job's initial parameter values by key, built from the recipe's seed in this
  // process and equal to the master worker's (JobDescription::init_digest checked); a policy may answer its
  // workers' initial pulls from them instead of fetching them from the global tier. Null: fetch. Borrowed.
  const std::map<uint64_t, std::vector<float>>* initial = nullptr;
};

// The options of a local server's SyncAggregator: one push per worker of its data centre, the tier's codec, and
// relayed pushes with TSEngine inside the data centre (args.overlay).
comm::SyncAggregatorOptions LocalAggregatorOptions(const LocalServerArgs& args);

// How an ESync worker reaches the state server (esync.h). Filled by the worker role.
struct StateServerAccess {
  std::function<std::unique_ptr<comm::Van>()> make_van;  // the worker's own Van for it
  std::string endpoint;                    // where the state server listens
  std::string bind;                        // where the worker's Van binds
  int timeout_ms = 60000;
};

struct WorkerArgs {
  const SyncJob* job = nullptr;
  int dc_index = 0;
  int rank = 0;                            // rank inside the data centre
  int worker_index = 0;                    // over all data centres, in order (data shard)
  comm::KvLink* link = nullptr;            // into its data centre's tier (codec and send path applied)
  nn::Optimizer* optimizer = nullptr;      // the recipe's optimizer, local to this worker
  nn::Module* model = nullptr;             // the model (P3's layer-by-layer writes use its forward hooks)
  StateServerAccess state_server;          // esync
  SyncObserver* observer = nullptr;
  // Send each step's training loss with the push (ParameterUpdate::SetLoss): the local servers' DGT adapts its k
  // to it (accelerators.dgt.adaptive). Off otherwise, so pushes carry nothing extra.
  bool send_loss = false;
};

struct StateServerArgs {
  std::function<std::unique_ptr<comm::Van>()> make_van;
  std::string endpoint;                    // where it binds
  int workers = 1;                         // over all data centres
  int timeout_ms = 60000;                  // silence after which it gives up
  SyncObserver* observer = nullptr;
  // The workers' member names by worker index ("dc-a/worker0", ...). With an authenticating van (security on) a
  // request for rank r is served only when it came with worker_names[r]'s key; others are dropped and logged.
  std::vector<std::string> worker_names;
};

// A worker's side of the mode. Apply() is called after every backward (algorithms/train/trainer.h).
class WorkerSync : public train::ParameterUpdate {
 public:
  // Before the first iteration: the initial weights of the job (the master worker's, from the seed).
  virtual Status PullInitial(const std::vector<nn::Parameter*>& params) = 0;
  // A worker process that rejoined the running tier (a restart) and pushes first in `round`: the weights after
  // `round - 1` (the first round's initial weights for 0). kUnimplemented for modes that cannot take a worker back.
  virtual Status PullRejoin(const std::vector<nn::Parameter*>& params, int64_t round) {
    (void)params;
    return Status::Unimplemented("this sync mode cannot take a restarted worker back (at round " +
                                 std::to_string(round) + ")");
  }
  // Adjusts the worker's training before it starts (ESync: rounds end the run, not epochs). Default: nothing.
  virtual void Configure(train::TrainingConfig* training) { (void)training; }
};

class SyncMode {
 public:
  virtual ~SyncMode() = default;
  virtual Result<std::unique_ptr<ServerPolicy>> MakeGlobalServer(const ServerArgs& args) const = 0;
  virtual Result<std::unique_ptr<ServerPolicy>> MakeLocalServer(const LocalServerArgs& args) const = 0;
  virtual Result<std::unique_ptr<WorkerSync>> MakeWorker(const WorkerArgs& args) const = 0;
  // The central state-server process of the modes whose traits say so (esync); runs until every worker finished.
  virtual Status RunStateServer(const StateServerArgs& args) const;
  // The global tier's codec the local servers push with (LocalServerArgs::upper): `planned` (the job's LinkPlan)
  // unless the mode keeps its own state in that encoder (diloco with a sparsifying push: the error feedback
  // decays by sync.outer.momentum, SparseLoCo, hfa.cc). Default: `planned`.
  virtual comm::TierCodec UpperCodec(const comm::TierCodec& planned) const { return planned; }
};

// What other code may ask about a mode instead of comparing names.
struct SyncModeTraits {
  bool needs_topology = true;       // false: also meaningful in one process (fsa is plain training there)
  bool averages_models = false;     // workers push whole models (hfa, diloco, esync): the LAN stays dense
  bool steps_on_gradients = true;   // an optimizer steps on the mean gradient every round (fsa, mixed)
  bool update_per_datacentre = false;  // one optimizer step per data centre per round (mixed)
  bool state_server = false;        // a central state-server process (esync)
  // The global server steps an optimizer with momentum on the mean delta (diloco): the local -> global link sends
  // the deltas exactly (none, fp16), or sparsifies them with the momentum moved into its decaying error feedback
  // (bsc, mpq: SparseLoCo, averaging.h); quantisers with plain error feedback (sign, int8, powersgd) are refused
  // there, since a residual held back before the momentum comes back amplified.
  bool outer_momentum = false;
  // A data centre's local server can go on without a lost worker, and a global server without a lost data centre
  // (ServerPolicy::RemoveSender): the round's mean is over the workers that pushed (fsa).
  bool survives_lost_workers = false;
  // The global servers' state after a round is the whole job's state (the weights and the optimizer's, with
  // optimizer.where: global-server): servers can snapshot it (ServerArgs::round_done, ServerPolicy::Restore)
  // and a job can resume from the snapshots (fsa).
  bool snapshots = false;
  // The local servers forward each round's gradient sum upward slice by slice (comm::ForwardSink, KvLink::
  // PushPullSlice): DGT can carry it (fsa, mixed).
  bool forwards_sums = false;
  // The global server's rounds take one sum per data centre and answer every data centre the same value, so the
  // local servers can relay the sums and the value among themselves (TSEngine, comm/tsengine/ts_relay.h;
  // ServerArgs::overlay, LocalServerArgs::upward) (fsa).
  bool overlay = false;
  // The local servers can let a WAN synchronisation overlap the next local averages (sync.overlap; averaging.h)
  // (hfa, diloco).
  bool overlaps_wan_sync = false;
};

// What a mode's recipe rules see (cli/ fills it from the recipe, sync_rules.cc).
struct SyncRuleInput {
  const SyncSettings* sync = nullptr;
  bool has_topology = false;
  int num_datacentres = 0;
  OptimizerPlacement optimizer_where = OptimizerPlacement::kGlobalServer;
  comm::LinkSchemes links;          // after resolving the accelerators.compression preset
  std::string optimizer_name;
  float optimizer_momentum = 0;
  float bsc_momentum = 0;
  bool p3 = false;
};

// One broken rule: `at` are the recipe keys it involves (the error is reported at the first that is present in
// the YAML), `path` the key it is reported under, `message` what is wrong and what to do.
struct RuleViolation {
  std::vector<std::string> at;
  std::string path;
  std::string message;
};

struct SyncModeDef {
  std::string name;
  std::string help;                 // one line for `geomx algos` / docs
  SyncModeTraits traits;
  // Builds the mode from the settings (its own typed config; kInvalidArgument naming the key).
  std::function<Result<std::unique_ptr<SyncMode>>(const SyncSettings&)> create;
  // The mode's recipe rules. Called for EVERY recipe, whatever input.sync->mode is, so a mode can refuse its own
  // keys being set under another mode; rules that apply only to this mode check the mode first.
  std::function<void(const SyncRuleInput&, std::vector<RuleViolation>*)> rules;
  // Defaults of the mode's keys that depend on other keys (diloco: SparseLoCo's outer lr and momentum when the
  // WAN push sparsifies). Called once per recipe with a topology whose sync.mode is this mode, before the rules;
  // `given(path)` is true for the keys the recipe file or a --set flag set, which it must leave alone. May be
  // empty.
  std::function<void(const SyncRuleInput&, const std::function<bool(const std::string&)>& given, SyncSettings*)>
      defaults;
};

// The modes of this binary, by name. Registration happens during static initialisation only.
class SyncModeRegistry {
 public:
  static bool Add(SyncModeDef def);
  static const SyncModeDef* Find(std::string_view name);
  static std::vector<std::string> Names();  // sorted
  static std::vector<const SyncModeDef*> All();
};

#define GEOMX_SYNC_CONCAT_INNER_(a, b) a##b
#define GEOMX_SYNC_CONCAT_(a, b) GEOMX_SYNC_CONCAT_INNER_(a, b)
// Registers a mode (a SyncModeDef expression) during static initialisation; algorithms/ is linked whole-archive.
#define GEOMX_REGISTER_SYNC_MODE(def)                                                              \
  static const bool GEOMX_SYNC_CONCAT_(geomx_sync_mode_, __LINE__) [[maybe_unused]] = \
      ::geomx::sync::SyncModeRegistry::Add(def)

// The mode `settings.mode` built from the settings: kInvalidArgument "sync.mode: 'x' is not built into this
// binary" for an unknown name, or the mode's own config error.
Result<std::unique_ptr<SyncMode>> CreateSyncMode(const SyncSettings& settings);
// The traits of a registered mode; default traits for an unknown name.
SyncModeTraits TraitsOf(std::string_view mode);

}  // namespace geomx::sync
