#include "algorithms/cluster/worker_session.h"

#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/tiers.h"
#include <algorithm>

#include "comm/codec.h"
#include "comm/handlers/sync_aggregator.h"

namespace geomx::cluster {

Result<std::unique_ptr<WorkerSession>> WorkerSession::Join(const ClusterConfig& c, const std::string& party, int rank,
                                                            const ps::KeySchema& schema, const RoleEnv& env) {
  GEOMX_RETURN_IF_ERROR(schema.Validate());
  GEOMX_ASSIGN_OR_RETURN(int dc_index, FindDataCentre(c.topology, party));
  const comm::DataCentre& dc = c.topology.datacentres[dc_index];
  if (rank < 0 || rank >= dc.workers) {
    return Status::InvalidArgument("--rank " + std::to_string(rank) + ": " + party + " has " +
                                   std::to_string(dc.workers) + " workers");
  }
  auto s = std::unique_ptr<WorkerSession>(new WorkerSession(c, env));
  s->schema_ = schema;
  s->dc_index_ = dc_index;
  s->rank_ = rank;
  s->worker_index_ = WorkerIndex(c.topology, dc_index, rank);
  s->name_ = WorkerName(party, rank);
  s->host_ = dc.host;
  s->van_ = env.make_van(s->name_);
  s->po_ = std::make_unique<comm::Postoffice>(
      DataCentreTier(c.topology, dc, env), comm::NodeInfo{-1, comm::NodeRole::kWorker, rank, s->name_, party, ""},
      s->van_.get());
  GEOMX_RETURN_IF_ERROR(s->po_->Start(env.node_bind(s->name_, dc.host)));
  GEOMX_ASSIGN_OR_RETURN(comm::KeyLayout layout, schema.Layout(dc.servers, c.split_bytes));
  s->kv_ = std::make_unique<comm::KvWorker>(s->po_.get(), kAppId, layout);
  GEOMX_ASSIGN_OR_RETURN(s->link_, comm::KvLink::Create(s->kv_.get(), c.links.local, c.worker_send));
  GEOMX_ASSIGN_OR_RETURN(s->aux_link_, comm::KvLink::Create(s->kv_.get(), comm::TierCodec{}));
  if (c.tsengine && c.tsengine->datacentre_tier) {  // before the barrier: peers may talk to it right after
    s->ts_member_ = std::make_unique<comm::TsMember>(s->link_.get(), WorkerIdsOf(dc));
    GEOMX_RETURN_IF_ERROR(s->link_->SetRelay(s->ts_member_.get()).WithContext("accelerators.tsengine.tier"));
  }
  GEOMX_RETURN_IF_ERROR(s->po_->Barrier("all"));
  return s;
}

WorkerSession::~WorkerSession() {
  // Nothing new leaves once the KvWorker is gone: stop P3's queue, cancel what is in flight (the KvWorker answers
  // its pending requests with kCancelled), then the links have nothing left to wait for.
  if (link_) link_->Stop();
  ts_member_.reset();  // its rounds still owed are dropped; it sends through link_ and kv_
  kv_.reset();
  link_.reset();
  aux_link_.reset();
  po_.reset();
}

std::unique_ptr<ps::PsContext> WorkerSession::MakeContext() const {
  return std::make_unique<ps::PsContext>(link_.get(), aux_link_.get(), schema_, worker_index_,
                                         config_.topology.total_workers());
}

sync::StateServerAccess WorkerSession::StateServer() const {
  sync::StateServerAccess a;
  const std::string node = name_ + "@state-server";
  a.make_van = [env = env_, node] { return env.make_van(node); };
  a.endpoint = StateServerEndpoint(config_, env_);
  a.bind = env_.node_bind(node, host_);
  a.timeout_ms = StateServerTimeoutMs(config_);
  return a;
}

Result<ps::JobDescription> WorkerSession::FetchJob() {
  GEOMX_ASSIGN_OR_RETURN(std::string body,
                         kv_->QueryControl(0, comm::EncodeFields({{"command", ps::kGetJobCommand}})));
  Result<ps::JobDescription> job = ps::DecodeJob(body);
  if (!job.ok()) return job.status().WithContext(ServerName(config_.topology.datacentres[dc_index_].name, 0));
  return job;
}

Result<int64_t> WorkerSession::JoinRunningTier() {
  const int servers = static_cast<int>(po_->ServerIds().size());
  int64_t round = 0;
  for (int r = 0; r < servers; ++r) {
    const std::string server = ServerName(config_.topology.datacentres[dc_index_].name, r);
    Result<std::string> answer =
        kv_->QueryControl(r, comm::EncodeFields({{"command", comm::SyncAggregator::kJoinCommand}}));
    if (!answer.ok()) return answer.status().WithContext(name_ + ": rejoining through " + server);
    Result<int64_t> proposed = comm::SyncAggregator::DecodeJoinRound(*answer);
    if (!proposed.ok()) {
      return Status::DataLoss(name_ + ": " + server + " answered the join with no round: " +
                              proposed.status().message());
    }
    round = std::max(round, *proposed);
  }
  const std::string at = comm::EncodeFields(
      {{"command", comm::SyncAggregator::kJoinAtCommand}, {"round", std::to_string(round)}});
  for (int r = 0; r < servers; ++r) {
    Result<std::string> answer = kv_->QueryControl(r, at);
    if (!answer.ok()) {
      return answer.status().WithContext(name_ + ": rejoining at round " + std::to_string(round) + " through " +
                                         ServerName(config_.topology.datacentres[dc_index_].name, r));
    }
  }
  return round;
}

Status WorkerSession::Finish() { return po_->Finalize(); }

void WorkerSession::Leave(const Status& why) { po_->Leave(why); }

}  // namespace geomx::cluster
