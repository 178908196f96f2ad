// The roles of a HiPS topology (comm/topology.h), each a function that runs until the job ends. cli/ composes them
// into processes (cli/roles.cc: ZeroMQ over TCP, shaped by the recipe's links); tests run them as threads of one
// process (inproc ZeroMQ or loopback vans), because every Van and address comes from the RoleEnv.
//
// Start of a job:
//   1. every node joins its tier(s): Postoffice::Start, then Barrier("all")
//   2. the master worker sends the job description (ps/job.h: key schema, plan, optimizer, rule) to every
//      global server (kControl "set-job"), which then builds its policies; then it pushes the initial values of
//      the keys whose init is the master's (round kInitRound, losslessly)
//   3. each local server fetches the job from global server 0 (kControl "get-job", answered once it is set),
//      builds its key layouts and policies, then joins its data centre's tier
//   4. workers build the schema themselves (they know what they train) and pull round kInitRound
// No server builds a model or opens a data set. Servers serve the parameter keys with the sync mode's policy
// (algorithms/sync/sync_mode.h) and every other key with the aux servers (ps/aux_servers.h), behind a KeyRouter.
// End: every node finalizes its tiers; schedulers return when their tier is done.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/cluster/cluster_config.h"
#include "algorithms/ps/job.h"
#include "engine/base/status.h"

namespace geomx::cluster {

Status RunGlobalScheduler(const ClusterConfig& config, const RoleEnv& env);
Status RunScheduler(const ClusterConfig& config, const std::string& party, const RoleEnv& env);
Status RunGlobalServer(const ClusterConfig& config, int rank, const RoleEnv& env);
// `seed_initial` (sync.initial_weights: seed; may be null): the initial parameter values this process built from
// the recipe's seed, as the master worker's `initial`. Used (LocalServerArgs::initial) when their digest equals
// the job's (JobDescription::init_digest) on a job that starts at round 0; otherwise the server logs why and its
// policy fetches the initial weights from the global tier as without them.
Status RunLocalServer(const ClusterConfig& config, const std::string& party, int rank, const RoleEnv& env,
                      const std::map<uint64_t, std::vector<float>>* seed_initial = nullptr);
// `initial`: the first value of every key of the schema whose init is KeyInit::kFromMaster (dense keys: the key's
// elements; row-sparse keys: the whole table, rows x row_width). kInvalidArgument naming a key that is missing
// or has the wrong size, before anything is sent. The job sent carries their digest (JobDescription::init_digest).
Status RunMasterWorker(const ClusterConfig& config, const ps::JobDescription& job,
                       const std::map<uint64_t, std::vector<float>>& initial, const RoleEnv& env);
// The state server of the sync modes that have one (esync); kInvalidArgument "sync.mode: ..." for the others.
Status RunStateServer(const ClusterConfig& config, const RoleEnv& env);

// What every sync policy of the job knows (sync::SyncJob) from the config and the job description.
sync::SyncJob MakeSyncJob(const ClusterConfig& config, const ps::JobDescription& job);

// The state server's endpoint (tier "state-server" of the RoleEnv) and timeout, as the workers reach it.
std::string StateServerEndpoint(const ClusterConfig& config, const RoleEnv& env);
int StateServerTimeoutMs(const ClusterConfig& config);

}  // namespace geomx::cluster
