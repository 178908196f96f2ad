#include "algorithms/cluster/roles.h"

#include <algorithm>
#include <utility>

#include "algorithms/cluster/job_gate.h"
#include "algorithms/cluster/snapshots.h"
#include "algorithms/cluster/tiers.h"
#include "algorithms/ps/aux_servers.h"
#include "comm/codec.h"
#include "comm/dgt/dgt_link.h"
#include "comm/handlers/payloads.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"
#include "comm/scheduler.h"
#include "comm/tsengine/ts_relay.h"
#include "engine/base/logging.h"

namespace geomx::cluster {

sync::SyncJob MakeSyncJob(const ClusterConfig& config, const ps::JobDescription& job) {
  sync::SyncJob s;
  s.job = job;
  s.optimizer_where = config.optimizer_where;
  for (const auto& dc : config.topology.datacentres) s.datacentres.push_back(dc.name);
  s.total_workers = config.topology.total_workers();
  s.seed = config.seed;
  return s;
}

namespace {

using comm::KeyLayout;
using comm::NodeInfo;
using comm::NodeRole;
using comm::Postoffice;

// What one server serves for one job: the sync policy (parameter keys), the aux server (other keys) and the
// router between them. Built when the job is known; destroyed after the KvServer that calls it.
struct ServerJob {
  sync::SyncJob sync_job;
  KeyLayout layout;
  std::unique_ptr<sync::ServerPolicy> policy;
  std::unique_ptr<comm::ServerHandler> aux;
  std::unique_ptr<ps::KeyRouter> router;
  // TSEngine (ClusterConfig::tsengine): a global server's coordinator (its sink's decorator) or a local server's
  // relay (its sink). Destroyed before the policy.
  std::unique_ptr<comm::TsRoot> ts_root;
  std::unique_ptr<comm::TsMember> ts_member;
  std::unique_ptr<comm::DgtHandler> dgt;  // global servers with DGT: in front of the rest; destroyed first

  // The handler of the whole job: the policy alone when every key is a parameter (no routing on the hot path).
  comm::ServerHandler* handler() {
    if (!aux) return policy->handler();
    router = std::make_unique<ps::KeyRouter>(&sync_job.job.schema, policy ? policy->handler() : nullptr, aux.get());
    return router.get();
  }
};

// A customer of `po` for the scope's lifetime (TSEngine's messages to its coordinator); none for an empty handler.
class ScopedCustomer {
 public:
  ScopedCustomer(Postoffice& po, int app_id, Postoffice::Handler handler)
      : po_(po), app_id_(app_id), on_(handler != nullptr) {
    if (on_) po_.RegisterCustomer(app_id_, std::move(handler));
  }
  ~ScopedCustomer() {
    if (on_) po_.UnregisterCustomer(app_id_);
  }
  ScopedCustomer(const ScopedCustomer&) = delete;
  ScopedCustomer& operator=(const ScopedCustomer&) = delete;

 private:
  Postoffice& po_;
  const int app_id_;
  const bool on_;
};

// TSEngine: a server's overlay of each round as one line for RoleEnv::on_overlay (empty without one).
std::function<void(const comm::RoundOverlay&)> OverlayLogger(const RoleEnv& env, Postoffice& po,
                                                              const std::string& name) {
  if (!env.on_overlay) return nullptr;
  return [&env, &po, name](const comm::RoundOverlay& overlay) {
    env.on_overlay(comm::OverlayJson(overlay, name, [&po](int id) {
      const NodeInfo* n = po.FindNode(id);
      return n != nullptr ? n->name : "node " + std::to_string(id);
    }));
  };
}

// How many parameter slices the server of `rank` holds.
int ParameterSlicesOf(const ps::KeySchema& schema, const KeyLayout& layout, int rank) {
  int n = 0;
  for (uint64_t key : schema.KeysWith(ps::KeyRole::kParameter)) {
    if (!layout.contains(key)) continue;
    for (const comm::KeySlice& s : layout.slices(key)) n += s.server_rank == rank ? 1 : 0;
  }
  return n;
}

Result<KeyLayout> LayoutOf(const ClusterConfig& c, const ps::JobDescription& job, int servers) {
  GEOMX_RETURN_IF_ERROR(job.schema.Validate().WithContext("job"));
  return job.schema.Layout(servers, c.split_bytes);
}

Result<ps::JobDescription> FetchJob(Postoffice& global_po) {
  comm::KvWorker probe(&global_po, kAppId, KeyLayout());
  GEOMX_ASSIGN_OR_RETURN(std::string body,
                         probe.QueryControl(0, comm::EncodeFields({{"command", ps::kGetJobCommand}})));
  Result<ps::JobDescription> job = ps::DecodeJob(body);
  if (!job.ok()) return job.status().WithContext("the job from global server 0");
  return job;
}

// The master's initial values of the keys whose init is the master's, in one request per link.
// A resumed job (plan.start_round > 0): the global servers restored the parameters from their snapshots.
Status PushInitialValues(const ClusterConfig& c, const ps::JobDescription& job,
                         const std::map<uint64_t, std::vector<float>>& initial, comm::KvWorker& kv) {
  std::vector<uint64_t> dense_keys, aux_dense_keys;
  std::vector<const float*> dense_values, aux_dense_values;
  comm::RawRequest rows;
  rows.command = comm::Command::kPush;
  rows.codec = "row_sparse";
  rows.round = comm::kInitRound;
  for (const ps::KeyDef& k : job.schema.keys()) {
    if (k.init != ps::KeyInit::kFromMaster) continue;
    if (job.plan.start_round > 0 && k.role == ps::KeyRole::kParameter) continue;
    auto it = initial.find(k.key);
    if (it == initial.end() || it->second.size() != k.elems) {
      return Status::InvalidArgument("master worker: no initial value of " + std::to_string(k.elems) +
                                     " floats for key " + std::to_string(k.key) + " (" + k.name + ")");
    }
    if (k.layout == ps::KeyLayoutKind::kRowSparse) {
      std::vector<uint64_t> all(k.rows());
      for (uint64_t r = 0; r < all.size(); ++r) all[r] = r;
      rows.wire_keys.push_back(comm::WireKey(k.key, 0));
      rows.payloads.push_back(comm::EncodeRowSparse(k.row_width, all, it->second));
    } else if (k.role == ps::KeyRole::kParameter) {
      dense_keys.push_back(k.key);
      dense_values.push_back(it->second.data());
    } else {
      aux_dense_keys.push_back(k.key);
      aux_dense_values.push_back(it->second.data());
    }
  }
  // Parameters through the tier's codec, losslessly (kRaw frames on a compressed tier); others dense.
  GEOMX_ASSIGN_OR_RETURN(auto link, comm::KvLink::Create(&kv, comm::LosslessSender(c.links.global)));
  if (!dense_keys.empty()) GEOMX_RETURN_IF_ERROR(link->Push(dense_keys, dense_values, comm::kInitRound));
  if (!aux_dense_keys.empty()) GEOMX_RETURN_IF_ERROR(kv.Wait(kv.Push(aux_dense_keys, aux_dense_values, comm::kInitRound)));
  if (!rows.wire_keys.empty()) GEOMX_RETURN_IF_ERROR(kv.RequestRaw(std::move(rows)).status());
  return Status::Ok();
}

// The seed-built initial values a local server may use for `job`: `seed_initial` when it matches the master's
// digest on a job that starts at round 0, else null (logged when the values were offered but do not match).
const std::map<uint64_t, std::vector<float>>* UsableSeedInitial(
    const std::string& name, const ps::JobDescription& job, const std::map<uint64_t, std::vector<float>>* seed_initial) {
  if (seed_initial == nullptr || job.plan.start_round > 0) return nullptr;
  const std::string own = ps::InitialValuesDigest(*seed_initial);
  if (own == job.init_digest) {
    GEOMX_LOG(kInfo) << name << ": initial weights built from the seed (digest " << own
                     << ", as the master worker's): none fetched over the WAN";
    return seed_initial;
  }
  GEOMX_LOG(kWarning) << name << ": initial weights built from the seed have digest " << own
                      << ", the master worker's " << (job.init_digest.empty() ? "none" : job.init_digest)
                      << " (a different recipe, seed or build?): fetching them over the WAN instead";
  return nullptr;
}

// The local server's work once it joined the global tier: fetch the job, join its data centre's tier as the server,
// serve until the end. Both tiers' failures are bridged.
Status ServeDataCentre(const ClusterConfig& c, int dc_index, int rank, sync::SyncMode& mode,
                       Postoffice& global_po, const RoleEnv& env,
                       const std::map<uint64_t, std::vector<float>>* seed_initial) {
  const comm::DataCentre& dc = c.topology.datacentres[dc_index];
  const std::string& party = dc.name;
  const std::string name = ServerName(party, rank);
  GEOMX_RETURN_IF_ERROR(global_po.Barrier("all"));
  GEOMX_ASSIGN_OR_RETURN(ps::JobDescription job, FetchJob(global_po));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout global_layout, LayoutOf(c, job, c.topology.global_servers));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout local_layout, LayoutOf(c, job, dc.servers));
  auto upper = std::make_unique<comm::KvWorker>(&global_po, kAppId, global_layout);
  comm::SendPathOptions upward = c.global_send;
  upward.counters = env.traffic;
  GEOMX_ASSIGN_OR_RETURN(auto upper_link,
                         comm::KvLink::Create(upper.get(), mode.UpperCodec(c.links.global), upward));
  GEOMX_ASSIGN_OR_RETURN(auto upper_aux, comm::KvLink::Create(upper.get(), comm::TierCodec{}));

  // Downward: the server of its data centre's tier (its Postoffice starts once the policy can serve).
  auto local_van = env.make_van(name);
  Postoffice local_po(DataCentreTier(c.topology, dc, env), NodeInfo{-1, NodeRole::kServer, rank, name, party, ""},
                      local_van.get());
  const sync::SyncJob sync_job = MakeSyncJob(c, job);
  ServerJob served;
  served.sync_job = sync_job;
  if (job.schema.Has(ps::KeyRole::kParameter)) {
    sync::LocalServerArgs args;
    args.job = &served.sync_job;
    args.layout = local_layout;
    args.codec = c.links.local;
    args.observer = env.observer;
    args.rank = rank;
    args.dc_index = dc_index;
    args.workers = dc.workers;
    args.upper = upper_link.get();
    args.initial = UsableSeedInitial(name, job, seed_initial);
    if (c.tsengine && c.tsengine->global_tier) {
      served.ts_member = std::make_unique<comm::TsMember>(upper_link.get(), LocalServerIds(c.topology));
      args.upward = served.ts_member.get();
    }
    if (c.tsengine && c.tsengine->datacentre_tier) {  // the coordinator of its data centre's workers
      served.ts_root = std::make_unique<comm::TsRoot>(&local_po, local_layout, WorkerIdsOf(dc),
                                                      ParameterSlicesOf(job.schema, local_layout, rank),
                                                      c.tsengine->overlay, OverlayLogger(env, local_po, name));
      args.overlay = served.ts_root.get();
    }
    GEOMX_ASSIGN_OR_RETURN(served.policy, mode.MakeLocalServer(args));
  }
  if (job.schema.Has(ps::KeyRole::kAggregate) || job.schema.Has(ps::KeyRole::kDecision) ||
      job.schema.Has(ps::KeyRole::kLocal)) {
    GEOMX_ASSIGN_OR_RETURN(served.aux, ps::AuxLocalServer::Create(job.schema, local_layout, dc.workers,
                                                                  upper_aux.get()));
  }
  if (!served.policy && !served.aux) return Status::InvalidArgument("the job has no keys");
  // TSEngine's messages from the workers go to the coordinator (registered before the tier's barrier).
  ScopedCustomer ts_messages(local_po, comm::kTsAppId,
                             served.ts_root == nullptr ? Postoffice::Handler()
                                                       : [root = served.ts_root.get()](comm::Message&& m) {
                                                           root->OnMessage(std::move(m));
                                                         });
  GEOMX_RETURN_IF_ERROR(local_po.Start(env.node_bind(name, dc.host)));
  TierBridge bridge(&global_po, &local_po);
  // topology.failure_policy: continue: a lost worker's pushes are no longer waited for.
  local_po.SetNodeLeftCallback([&served, &name](int node_id, const std::string& why) {
    if (!served.policy) return;
    Status s = served.policy->RemoveSender(node_id);
    if (!s.ok()) GEOMX_LOG(kError) << name << ": " << s.ToString() << " (" << why << ")";
  });
  // The data centre's workers may ask their local server for the job (a resumed job's start round).
  comm::ServerHandler* const handler = served.handler();
  JobGate gate([handler](const ps::JobDescription&) -> Result<comm::ServerHandler*> { return handler; });
  GEOMX_RETURN_IF_ERROR(gate.Set(ps::EncodeJob(job)));
  comm::KvServer server(&local_po, kAppId, &gate);
  // Teardown, also on early returns: upward requests still pending are cancelled first, while the handlers, the
  // server and both postoffices that their callbacks reach are alive.
  struct CancelUpward {
    std::unique_ptr<comm::KvWorker>& kv;
    ~CancelUpward() { kv.reset(); }
  } cancel_upward{upper};
  Status done = local_po.Barrier("all");
  if (done.ok()) done = FinalizeWhenDone(local_po);
  GEOMX_RETURN_IF_ERROR(LeaveOnError(local_po, done));
  if (env.on_server_done && served.policy) env.on_server_done(name, *served.policy);
  return FinalizeWhenDone(global_po);
}

}  // namespace

std::string StateServerEndpoint(const ClusterConfig& c, const RoleEnv& env) {
  return env.scheduler_endpoint("state-server", c.topology.central_host, c.topology.state_server_port);
}

int StateServerTimeoutMs(const ClusterConfig& c) {
  const comm::CommOptions& o = c.topology.options;
  return static_cast<int>(std::min<int64_t>(INT32_MAX, static_cast<int64_t>(o.rendezvous_timeout_ms) +
                                                           o.request_timeout_ms));
}

Status RunGlobalScheduler(const ClusterConfig& c, const RoleEnv& env) {
  const comm::TierSpec tier = GlobalTier(c.topology, env);
  auto van = env.make_van("central/global-scheduler");
  comm::Scheduler scheduler(tier, van.get());
  return scheduler.Run(tier.scheduler_endpoint);
}

Status RunScheduler(const ClusterConfig& c, const std::string& party, const RoleEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(int dc, FindDataCentre(c.topology, party));
  const comm::TierSpec tier = DataCentreTier(c.topology, c.topology.datacentres[dc], env);
  auto van = env.make_van(party + "/scheduler");
  comm::Scheduler scheduler(tier, van.get());
  return scheduler.Run(tier.scheduler_endpoint);
}

Status RunGlobalServer(const ClusterConfig& c, int rank, const RoleEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<sync::SyncMode> mode, sync::CreateSyncMode(c.sync));
  const std::string name = GlobalServerName(rank);
  auto van = env.make_van(name);
  Postoffice po(GlobalTier(c.topology, env), NodeInfo{-1, NodeRole::kServer, rank, name, kCentral, ""}, van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, c.topology.central_host)));
  ServerJob served;
  JobGate gate([&](const ps::JobDescription& job) -> Result<comm::ServerHandler*> {
    served.sync_job = MakeSyncJob(c, job);
    GEOMX_ASSIGN_OR_RETURN(served.layout, LayoutOf(c, job, c.topology.global_servers));
    const bool snapshots =
        c.snapshot_every > 0 && sync::TraitsOf(c.sync.mode).snapshots && !env.snapshot_dir.empty();
    if (job.schema.Has(ps::KeyRole::kParameter)) {
      sync::ServerArgs args{&served.sync_job, served.layout, c.links.global, env.observer};
      args.rank = rank;
      if (snapshots) {
        args.round_done = [&served, &env, &c, name](int64_t round) {
          if ((round + 1) % c.snapshot_every != 0 || served.policy->state() == nullptr) return;
          Status s = WriteSnapshot(env.snapshot_dir, name, round, *served.policy->state());
          if (!s.ok()) GEOMX_LOG(kError) << name << ": snapshot of round " << round << ": " << s.ToString();
        };
      }
      if (c.tsengine && c.tsengine->global_tier) {
        served.ts_root = std::make_unique<comm::TsRoot>(&po, served.layout, LocalServerIds(c.topology),
                                                        ParameterSlicesOf(job.schema, served.layout, rank),
                                                        c.tsengine->overlay, OverlayLogger(env, po, name));
        args.overlay = served.ts_root.get();
      }
      GEOMX_ASSIGN_OR_RETURN(served.policy, mode->MakeGlobalServer(args));
      if (job.plan.start_round > 0 && HoldsParameterSlices(job.schema, served.layout, rank)) {
        if (env.snapshot_dir.empty()) {
          return Status::FailedPrecondition("resuming at round " + std::to_string(job.plan.start_round) +
                                            ": this server has no run folder to read its snapshot from");
        }
        GEOMX_RETURN_IF_ERROR(
            RestoreSnapshot(env.snapshot_dir, name, job.plan.start_round - 1, *served.policy));
        GEOMX_LOG(kInfo) << name << ": restored round " << job.plan.start_round - 1 << " from its snapshot";
      }
    }
    if (job.schema.Has(ps::KeyRole::kAggregate) || job.schema.Has(ps::KeyRole::kDecision) ||
        job.schema.Has(ps::KeyRole::kLocal)) {
      GEOMX_ASSIGN_OR_RETURN(served.aux, ps::AuxGlobalServer::Create(
                                             job, served.layout, static_cast<int>(c.topology.datacentres.size())));
    }
    if (!served.policy && !served.aux) return Status::InvalidArgument("the job has no keys");
    GEOMX_LOG(kInfo) << name << ": job of " << job.schema.keys().size() << " keys, sync.mode " << c.sync.mode;
    if (!c.global_send.dgt) return served.handler();
    served.dgt = std::make_unique<comm::DgtHandler>(served.handler(), served.layout, *c.global_send.dgt);
    return served.dgt.get();
  });
  // topology.failure_policy: continue: a lost data centre's pushes are no longer waited for. Cleared before
  // `served` goes (the Postoffice outlives it).
  po.SetNodeLeftCallback([&served, &name](int node_id, const std::string& why) {
    if (!served.policy) return;
    Status s = served.policy->RemoveSender(node_id);
    if (!s.ok()) GEOMX_LOG(kError) << name << ": " << s.ToString() << " (" << why << ")";
  });
  struct ClearNodeLeft {
    Postoffice& po;
    ~ClearNodeLeft() { po.SetNodeLeftCallback(nullptr); }
  } clear_node_left{po};
  // TSEngine's messages go to the coordinator the job's gate builds (both on the receive thread).
  ScopedCustomer ts_messages(po, comm::kTsAppId,
                             !(c.tsengine && c.tsengine->global_tier) ? Postoffice::Handler()
                                                                       : [&served](comm::Message&& m) {
                                                                           if (served.ts_root) {
                                                                             served.ts_root->OnMessage(std::move(m));
                                                                           }
                                                                         });
  comm::KvServer server(&po, kAppId, &gate);
  struct StopDgt {  // before `server` goes: DGT's deadline thread answers through it
    ServerJob& served;
    ~StopDgt() {
      if (served.dgt) served.dgt->Stop();
    }
  } stop_dgt{served};
  Status done = po.Barrier("all");
  if (done.ok()) done = FinalizeWhenDone(po);
  if (done.ok() && env.on_server_done && served.policy) env.on_server_done(name, *served.policy);
  return LeaveOnError(po, done);
}

Status RunLocalServer(const ClusterConfig& c, const std::string& party, int rank, const RoleEnv& env,
                      const std::map<uint64_t, std::vector<float>>* seed_initial) {
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<sync::SyncMode> mode, sync::CreateSyncMode(c.sync));
  GEOMX_ASSIGN_OR_RETURN(int dc_index, FindDataCentre(c.topology, party));
  const comm::DataCentre& dc = c.topology.datacentres[dc_index];
  const std::string name = ServerName(party, rank);

  // Upward: a worker of the global tier; the job comes from global server 0.
  auto global_van = env.make_van(name + "@global");
  Postoffice global_po(GlobalTier(c.topology, env),
                       NodeInfo{-1, NodeRole::kWorker, GlobalRankOfLocalServer(c.topology, dc_index, rank), name,
                                party, ""},
                       global_van.get());
  GEOMX_RETURN_IF_ERROR(global_po.Start(env.node_bind(name + "@global", dc.host)));
  return LeaveOnError(global_po, ServeDataCentre(c, dc_index, rank, *mode, global_po, env, seed_initial));
}

Status RunMasterWorker(const ClusterConfig& c, const ps::JobDescription& job_in,
                       const std::map<uint64_t, std::vector<float>>& initial, const RoleEnv& env) {
  ps::JobDescription job = job_in;
  if (!initial.empty()) job.init_digest = ps::InitialValuesDigest(initial);
  const std::string name = std::string(kCentral) + "/master-worker";
  GEOMX_ASSIGN_OR_RETURN(KeyLayout layout, LayoutOf(c, job, c.topology.global_servers));
  auto van = env.make_van(name);
  Postoffice po(GlobalTier(c.topology, env),
                NodeInfo{-1, NodeRole::kWorker, MasterWorkerRank(c.topology), name, kCentral, ""}, van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, c.topology.central_host)));
  comm::KvWorker kv(&po, kAppId, layout);
  auto serve = [&]() -> Status {
    GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
    GEOMX_RETURN_IF_ERROR(kv.SendControl(ps::EncodeJob(job)));
    GEOMX_RETURN_IF_ERROR(PushInitialValues(c, job, initial, kv));
    GEOMX_LOG(kInfo) << "master worker: the job (" << job.schema.keys().size() << " keys, optimizer "
                     << job.optimizer.name << ") and its initial values sent to the global servers";
    return FinalizeWhenDone(po);
  };
  return LeaveOnError(po, serve());
}

Status RunStateServer(const ClusterConfig& c, const RoleEnv& env) {
  if (!sync::TraitsOf(c.sync.mode).state_server) {
    return Status::InvalidArgument("sync.mode: '" + c.sync.mode + "' has no state server");
  }
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<sync::SyncMode> mode, sync::CreateSyncMode(c.sync));
  sync::StateServerArgs args;
  args.make_van = [&env] { return env.make_van("central/state-server"); };
  args.endpoint = StateServerEndpoint(c, env);
  args.workers = c.topology.total_workers();
  args.timeout_ms = StateServerTimeoutMs(c);
  args.observer = env.observer;
  for (const comm::DataCentre& dc : c.topology.datacentres) {  // in worker-index order (WorkerIndex)
    for (int r = 0; r < dc.workers; ++r) args.worker_names.push_back(WorkerName(dc.name, r));
  }
  return mode->RunStateServer(args);
}

}  // namespace geomx::cluster
