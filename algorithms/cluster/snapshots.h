// Server snapshots (recipe `topology.snapshot_every`, docs/fault_tolerance.md): a global server of a mode with
// SyncModeTraits::snapshots writes its policy's state every N rounds, and a job resumed from them
// (`geomx train --resume RUN`) starts at the round after the latest round every such server has.
//
// Layout: DIR/<node>/round-<R>.state, where <node> is the server's name ("central/global-server0") and R the
// completed round; a tensor file of nn/checkpoint.h (docs/checkpoint_format.md) whose meta names
// "server-snapshot", holding the state's entries and the round ("snapshot/round"). Each file is written
// atomically (a crash leaves the previous ones intact); only the newest `keep` of a node stay.
// Thread-safety: free functions; concurrent writers must use different nodes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "algorithms/cluster/cluster_config.h"
#include "algorithms/ps/job.h"
#include "algorithms/ps/server_state.h"
#include "algorithms/sync/sync_mode.h"
#include "comm/key_layout.h"
#include "engine/base/status.h"

namespace geomx::cluster {

inline constexpr int kSnapshotsKept = 2;  // a server can die between two servers' writes of the same round

std::filesystem::path SnapshotPath(const std::filesystem::path& dir, const std::string& node, int64_t round);

// Writes `state` as `node`'s snapshot of `round`, then deletes that node's snapshots older than the newest `keep`.
// Errors name the file (kInternal for a failed write).
Status WriteSnapshot(const std::filesystem::path& dir, const std::string& node, int64_t round,
                     const ps::ServerState& state, int keep = kSnapshotsKept);

// The rounds `node` has snapshots of, ascending (file names that are not round-<digits>.state are ignored).
std::vector<int64_t> SnapshotRounds(const std::filesystem::path& dir, const std::string& node);

// The latest round every one of `nodes` has a snapshot of. kNotFound naming the directory (and the first node
// without any snapshot, or with none in common) otherwise; kInvalidArgument for an empty `nodes`.
Result<int64_t> LatestCommonSnapshot(const std::filesystem::path& dir, const std::vector<std::string>& nodes);

// Loads `node`'s snapshot of `round` and hands it to policy.Restore. kNotFound for a missing file, kDataLoss for
// a damaged one or one of another round; errors name the file.
Status RestoreSnapshot(const std::filesystem::path& dir, const std::string& node, int64_t round,
                       sync::ServerPolicy& policy);

// Whether server `rank` holds a slice of a parameter key of `schema` in `layout` (a server without one never
// completes a round: it writes no snapshots and restores none).
bool HoldsParameterSlices(const ps::KeySchema& schema, const comm::KeyLayout& layout, int rank);

// "central/global-server<rank>": the global server's node name, and its snapshots' folder under the directory.
std::string GlobalServerName(int rank);

// The start round (ps::JobPlan::start_round) of `job` resumed from the snapshots in `dir`: one past the latest
// round every global server holding parameter slices has a snapshot of. kNotFound without such a round (naming
// the folder); kInvalidArgument when that round was the job's last (the run already finished).
Result<int64_t> ResumeRound(const ClusterConfig& config, const ps::JobDescription& job,
                            const std::filesystem::path& dir);

}  // namespace geomx::cluster
