// Topology: the whole HiPS hierarchy as data (replaces every DMLC_* variable of GeoMX). Built from the recipe's
// `topology` section in cli/ and passed to every role.
//
//   central party: global scheduler, N global servers, (master worker)
//   data centre p: scheduler, S_p local servers, W_p workers
//
// Two kinds of tier: each data centre's tier (its scheduler; servers = its local servers; workers = its workers)
// and the global tier (the global scheduler; servers = the global servers; workers = every local server of every
// data centre, plus the master worker).
#pragma once

#include <string>
#include <vector>

#include "comm/comm_options.h"
#include "comm/network_shape.h"
#include "engine/base/status.h"

namespace geomx::comm {

struct DataCentre {
  std::string name;     // unique, [a-z0-9-]+
  std::string host = "127.0.0.1";
  int workers = 1;      // >= 1
  int servers = 1;      // local servers, >= 1
  int scheduler_port = 0;  // 0: picked by the launcher (single host) / must be set for multi-host runs
  // Heterogeneity emulation: every worker of this data centre takes this many times as long per training step
  // (it sleeps (slowdown - 1) x its measured step time). 1 = as fast as the machine allows.
  float slowdown = 1.0f;
  // The data centre's own link to the central party (uneven WANs); a field equal to kInheritLink (the default)
  // takes the value of the job's WAN link (CommOptions::wan).
  static constexpr double kInheritLink = -1;
  LinkOptions uplink{.bandwidth_bps = kInheritLink, .latency_s = kInheritLink, .loss = kInheritLink};
};

// A direct link between two data centres (both directions), instead of the path through the central party.
struct DirectLink {
  std::string from;  // a data centre
  std::string to;    // another data centre
  LinkOptions link;
};

struct Topology {
  std::string central_host = "127.0.0.1";
  int global_servers = 1;       // >= 1
  int global_scheduler_port = 0;
  int state_server_port = 0;    // ESync's state server (sync.mode esync), on central_host; 0 = picked at start
  std::vector<DataCentre> datacentres;  // >= 1
  std::vector<DirectLink> direct_links;  // at most one per pair of data centres
  CommOptions options;
  // What a data centre does when one of its workers dies or fails: "stop" the whole job, "continue" without it
  // (CommOptions::continue_without_lost_workers of the data centres' tiers; sync modes that can: fsa), or "wait"
  // for it to rejoin (CommOptions::wait_for_lost_workers). With continue or wait a worker started again rejoins.
  std::string failure_policy = "stop";
  // `geomx train` on one host: a worker that dies is started again (it rejoins) up to this many times in all
  // (failure_policy continue or wait).
  int worker_restarts = 0;
  // Global servers snapshot their state every this many rounds into the run folder, so `geomx train --resume`
  // can continue the job (algorithms/cluster/snapshots.h); 0 = never.
  int64_t snapshot_every = 0;
  // `geomx train` on one host: after a process fails, restart the whole job from the snapshots up to this many
  // times (needs snapshot_every > 0).
  int max_restarts = 0;

  int total_workers() const {
    int n = 0;
    for (const auto& d : datacentres) n += d.workers;
    return n;
  }
  // The emulated network (comm/network_shape.h): options.lan, options.wan, each data centre's uplink with its
  // inherited fields filled in from options.wan, and the direct links.
  NetworkShape Network() const;
  // kInvalidArgument naming the field for: no data centre, zero workers/servers, duplicate names, bad names,
  // port clashes on one host.
  Status Validate() const;
};

}  // namespace geomx::comm
