#include "algorithms/cluster/snapshots.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "engine/base/logging.h"
#include "nn/checkpoint.h"

namespace geomx::cluster {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMetaName = "server-snapshot";
constexpr const char* kRoundEntry = "snapshot/round";
constexpr const char* kPrefix = "round-";
constexpr const char* kSuffix = ".state";

// The round of a file named round-<digits>.state; -1 otherwise.
int64_t RoundOfFile(const std::string& file) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  const std::string digits = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); })) {
    return -1;
  }
  return std::stoll(digits);
}

}  // namespace

fs::path SnapshotPath(const fs::path& dir, const std::string& node, int64_t round) {
  std::string file = std::to_string(round);
  file.insert(0, 12 - std::min<size_t>(12, file.size()), '0');  // sorted by name = sorted by round
  return dir / node / (kPrefix + file + kSuffix);
}

Status WriteSnapshot(const fs::path& dir, const std::string& node, int64_t round, const ps::ServerState& state,
                     int keep) {
  const fs::path path = SnapshotPath(dir, node, round);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Status::Internal("snapshot: cannot create " + path.parent_path().string() + ": " + ec.message());
  ps::StateTensors tensors;
  GEOMX_RETURN_IF_ERROR(state.SaveState("", &tensors));
  tensors[kRoundEntry] = ps::StateScalar(round);
  nn::CheckpointMeta meta;
  meta.model_name = kMetaName;
  GEOMX_RETURN_IF_ERROR(nn::WriteTensorFile(path, tensors, meta));
  const std::vector<int64_t> rounds = SnapshotRounds(dir, node);
  for (size_t i = 0; i + static_cast<size_t>(std::max(1, keep)) < rounds.size(); ++i) {
    fs::remove(SnapshotPath(dir, node, rounds[i]), ec);
  }
  return Status::Ok();
}

std::vector<int64_t> SnapshotRounds(const fs::path& dir, const std::string& node) {
  std::vector<int64_t> rounds;
  std::error_code ec;
  for (fs::directory_iterator it(dir / node, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t r = RoundOfFile(it->path().filename().string());
    if (r >= 0 && it->is_regular_file(ec)) rounds.push_back(r);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds;
}

Result<int64_t> LatestCommonSnapshot(const fs::path& dir, const std::vector<std::string>& nodes) {
  if (nodes.empty()) return Status::InvalidArgument("snapshots: no server holds any key");
  std::vector<int64_t> common;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::vector<int64_t> rounds = SnapshotRounds(dir, nodes[i]);
    if (rounds.empty()) {
      return Status::NotFound("no snapshot of " + nodes[i] + " in " + (dir / nodes[i]).string() +
                              " (the run was trained with topology.snapshot_every: 0, or stopped before its first "
                              "snapshot)");
    }
    if (i == 0) {
      common = rounds;
    } else {
      std::vector<int64_t> both;
      std::set_intersection(common.begin(), common.end(), rounds.begin(), rounds.end(), std::back_inserter(both));
      common.swap(both);
    }
    if (common.empty()) {
      return Status::NotFound("snapshots in " + dir.string() + ": " + nodes[i] +
                              " has no round in common with the servers before it");
    }
  }
  return common.back();
}

Status RestoreSnapshot(const fs::path& dir, const std::string& node, int64_t round, sync::ServerPolicy& policy) {
  const fs::path path = SnapshotPath(dir, node, round);
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound("snapshot " + path.string() + " does not exist");
  ps::StateTensors tensors;
  nn::CheckpointMeta meta;
  GEOMX_RETURN_IF_ERROR(nn::ReadTensorFile(path, &tensors, &meta));
  if (meta.model_name != kMetaName) {
    return Status::DataLoss(path.string() + ": not a server snapshot (it holds '" + meta.model_name + "')");
  }
  Result<int64_t> saved_round = ps::StateScalarOf(tensors, kRoundEntry);
  if (!saved_round.ok() || *saved_round != round) {
    return Status::DataLoss(path.string() + ": not the snapshot of round " + std::to_string(round));
  }
  tensors.erase(kRoundEntry);
  return policy.Restore(tensors, round).WithContext(path.string());
}

bool HoldsParameterSlices(const ps::KeySchema& schema, const comm::KeyLayout& layout, int rank) {
  for (uint64_t key : schema.KeysWith(ps::KeyRole::kParameter)) {
    if (!layout.contains(key)) continue;
    for (const comm::KeySlice& s : layout.slices(key)) {
      if (s.server_rank == rank) return true;
    }
  }
  return false;
}

std::string GlobalServerName(int rank) { return "central/global-server" + std::to_string(rank); }

Result<int64_t> ResumeRound(const ClusterConfig& c, const ps::JobDescription& job, const fs::path& dir) {
  GEOMX_ASSIGN_OR_RETURN(comm::KeyLayout layout, job.schema.Layout(c.topology.global_servers, c.split_bytes));
  std::vector<std::string> nodes;
  for (int r = 0; r < c.topology.global_servers; ++r) {
    if (HoldsParameterSlices(job.schema, layout, r)) nodes.push_back(GlobalServerName(r));
  }
  GEOMX_ASSIGN_OR_RETURN(int64_t round, LatestCommonSnapshot(dir, nodes));
  const int64_t total = job.plan.total_rounds();
  if (round + 1 >= total) {
    return Status::InvalidArgument("the snapshots in " + dir.string() + " are of round " + std::to_string(round) +
                                   ", the job's last (" + std::to_string(total) +
                                   " rounds): the run already finished (raise training.max_iterations or "
                                   "training.epochs with --set to train further)");
  }
  return round + 1;
}

}  // namespace geomx::cluster
