// ClusterConfig and RoleEnv: everything the roles of a HiPS topology need (docs/architecture.md), typed. cli/
// builds ClusterConfig once from the recipe (cli/cluster.cc) and hands the same value to every role; RoleEnv says
// where a role gets its transport, so the same role functions run as processes (ZeroMQ over TCP, cli/roles.cc)
// or as threads of one test process (inproc ZeroMQ or loopback vans).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/sync/sync_mode.h"
#include "comm/compression/link_plan.h"
#include "comm/kv_link.h"
#include "comm/tsengine/overlay_planner.h"
#include "comm/topology.h"
#include "comm/van.h"

namespace geomx::cluster {

// Where TSEngine relays, and its planner's settings.
struct TsEngineConfig {
  comm::OverlayOptions overlay;
  bool global_tier = true;       // the local servers relay among themselves; the global servers coordinate
  bool datacentre_tier = false;  // each data centre's workers relay among themselves; its local servers coordinate
};

struct ClusterConfig {
  comm::Topology topology;              // parties, hosts, ports, sizes, timeouts, slowdowns
  sync::SyncSettings sync;              // the sync mode and its knobs
  sync::OptimizerPlacement optimizer_where = sync::OptimizerPlacement::kGlobalServer;
  comm::LinkPlan links;                 // compression of each tier (comm/compression/link_plan.h)
  comm::SendPathOptions worker_send;    // send-path accelerators of the workers' links (P3)
  comm::SendPathOptions global_send;    // of the local servers' links to the global tier (DGT; the global
                                        // servers then put a comm::DgtHandler in front of their policy)
  // TSEngine (comm/tsengine/ts_relay.h; accelerators.tsengine): the senders of a tier relay sums and models in an
  // overlay the tier's servers choose. Needs a mode with SyncModeTraits::overlay and dense tiers where it relays;
  // between data centres, one local server per data centre (the recipe rules check it).
  std::optional<TsEngineConfig> tsengine;
  int64_t split_bytes = 4 << 20;        // slices of every tier's layout (MultiGPS; smaller with P3)
  uint64_t seed = 42;
  // Global servers snapshot their state every this many rounds (snapshots.h); 0 = never. Needs a mode with
  // SyncModeTraits::snapshots and RoleEnv::snapshot_dir.
  int64_t snapshot_every = 0;
};

// Where the roles get their transport, and who watches them. Thread-safe functions (roles of one process call
// them concurrently). Observers are borrowed and may be null.
struct RoleEnv {
  // A new Van for the node named `node` ("dc-a/server0@global": a local server has one Van per tier).
  std::function<std::unique_ptr<comm::Van>(const std::string& node)> make_van;
  // The endpoint a tier's scheduler (or the state server, tier "state-server") binds and every member connects to.
  std::function<std::string(const std::string& tier, const std::string& host, int port)> scheduler_endpoint;
  // The address a node binds its receiving socket to (any free port on `host`, or an inproc name).
  std::function<std::string(const std::string& node, const std::string& host)> node_bind;
  sync::SyncObserver* observer = nullptr;
  // This process's traffic counters (DGT adds its per-channel figures there); may be null.
  comm::TrafficCounters* traffic = nullptr;
  // Called by a server role with its sync policy after the job ended, before the policy is destroyed (tests
  // read the policy's counters; a monitor could save its state). May be empty.
  std::function<void(const std::string& node, sync::ServerPolicy& policy)> on_server_done;
  // Where global servers write their snapshots and, for a resumed job (JobPlan::start_round > 0), read them
  // back (snapshots.h); empty: no snapshots (a resumed job then fails naming it).
  std::string snapshot_dir;
  // TSEngine: each coordinating server's overlay of each round (global servers, and local servers with the tier
  // inside data centres), as one JSON line (comm::OverlayJson); cli/ appends it to <run>/overlays.jsonl. May be
  // empty.
  std::function<void(const std::string& json_line)> on_overlay;
};

}  // namespace geomx::cluster
