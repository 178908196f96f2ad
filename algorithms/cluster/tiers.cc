#include "algorithms/cluster/tiers.h"

#include <algorithm>

namespace geomx::cluster {

Result<int> FindDataCentre(const comm::Topology& t, const std::string& party) {
  for (size_t i = 0; i < t.datacentres.size(); ++i) {
    if (t.datacentres[i].name == party) return static_cast<int>(i);
  }
  return Status::InvalidArgument("--party " + party + ": no such data centre in topology.datacentres");
}

comm::TierSpec GlobalTier(const comm::Topology& t, const RoleEnv& env) {
  comm::TierSpec s;
  s.name = "global";
  s.scheduler_endpoint = env.scheduler_endpoint("global", t.central_host, t.global_scheduler_port);
  s.num_servers = t.global_servers;
  s.num_workers = 1;  // the master worker
  for (const auto& dc : t.datacentres) s.num_workers += dc.servers;
  s.options = t.options;
  // topology.failure_policy: continue: the global tier goes on without a lost data centre (its local servers, the
  // tier's workers besides the master worker), as long as one data centre's local server is left.
  s.options.continue_without_lost_workers = t.failure_policy == "continue";
  s.min_workers_left = 2;
  s.scheduler_party = kCentral;
  s.scheduler_name = std::string(kCentral) + "/global-scheduler";
  return s;
}

comm::TierSpec DataCentreTier(const comm::Topology& t, const comm::DataCentre& dc, const RoleEnv& env) {
  comm::TierSpec s;
  s.name = dc.name;
  s.scheduler_endpoint = env.scheduler_endpoint(dc.name, dc.host, dc.scheduler_port);
  s.num_servers = dc.servers;
  s.num_workers = dc.workers;
  s.options = t.options;
  // topology.failure_policy: continue drops a lost worker, wait pauses the data centre until it rejoins; with
  // either a worker process started again rejoins the running tier (comm/scheduler.h "rejoin").
  s.options.continue_without_lost_workers = t.failure_policy == "continue";
  s.options.wait_for_lost_workers = t.failure_policy == "wait";
  s.options.admit_rejoins = t.failure_policy == "continue" || t.failure_policy == "wait";
  s.scheduler_party = dc.name;
  s.scheduler_name = dc.name + "/scheduler";
  return s;
}

int GlobalRankOfLocalServer(const comm::Topology& t, int dc_index, int rank) {
  int offset = 0;
  for (int i = 0; i < dc_index; ++i) offset += t.datacentres[i].servers;
  return offset + rank;
}

std::vector<int> LocalServerIds(const comm::Topology& t) {
  std::vector<int> ids;
  for (size_t d = 0; d < t.datacentres.size(); ++d) {
    for (int r = 0; r < t.datacentres[d].servers; ++r) {
      ids.push_back(comm::TierNodeId(comm::NodeRole::kWorker, GlobalRankOfLocalServer(t, static_cast<int>(d), r),
                                     t.global_servers));
    }
  }
  return ids;
}

std::vector<int> WorkerIdsOf(const comm::DataCentre& dc) {
  std::vector<int> ids;
  for (int r = 0; r < dc.workers; ++r) ids.push_back(comm::TierNodeId(comm::NodeRole::kWorker, r, dc.servers));
  return ids;
}

int MasterWorkerRank(const comm::Topology& t) {
  return GlobalRankOfLocalServer(t, static_cast<int>(t.datacentres.size()), 0);
}

int WorkerIndex(const comm::Topology& t, int dc_index, int rank) {
  int offset = 0;
  for (int i = 0; i < dc_index; ++i) offset += t.datacentres[i].workers;
  return offset + rank;
}

int64_t FsaIterationsPerEpoch(int64_t train_size, int world, int batch) {
  const int64_t smallest_shard = train_size / std::max(1, world);
  return std::max<int64_t>(1, smallest_shard / std::max(1, batch));
}

Status FinalizeWhenDone(comm::Postoffice& po) {
  for (;;) {
    Status s = po.Finalize();
    if (s.ok() || s.code() != StatusCode::kDeadlineExceeded || !po.health().ok()) return s;
  }
}

Status LeaveOnError(comm::Postoffice& po, Status s) {
  if (!s.ok()) po.Leave(s);
  return s;
}

TierBridge::TierBridge(comm::Postoffice* a, comm::Postoffice* b) : a_(a), b_(b) {
  a_->SetFailureCallback([b](const Status& why) { b->Leave(why); });
  b_->SetFailureCallback([a](const Status& why) { a->Leave(why); });
}

TierBridge::~TierBridge() {
  a_->SetFailureCallback(nullptr);
  b_->SetFailureCallback(nullptr);
}

std::string ServerName(const std::string& party, int rank) { return party + "/server" + std::to_string(rank); }
std::string WorkerName(const std::string& party, int rank) { return party + "/worker" + std::to_string(rank); }

}  // namespace geomx::cluster
