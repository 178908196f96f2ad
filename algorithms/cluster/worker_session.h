// WorkerSession: one worker's membership of its data centre's tier: its Postoffice, its KvWorker over the job's
// key layout, and the links algorithm code sends through (the tier's codec and the workers' send path for
// parameter keys, relayed through TSEngine's overlay when it runs inside the data centre; a dense link for every
// other key). Join() blocks until the tier's barrier; Finish() says
// goodbye. The NN trainer (training_worker.h) and classical estimators (through ps::PsContext) both start here.
// Not thread-safe (the worker's thread); the links themselves are.
#pragma once

#include <memory>
#include <string>

#include "algorithms/cluster/cluster_config.h"
#include "algorithms/ps/job.h"
#include "algorithms/ps/key_schema.h"
#include "algorithms/ps/ps_context.h"
#include "comm/kv_link.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"
#include "comm/tsengine/ts_relay.h"

namespace geomx::cluster {

class WorkerSession {
 public:
  // Joins data centre `party`'s tier as worker `rank` with the layout of `schema` and waits for its barrier.
  // Errors: an unknown party or rank, a bad schema, the tier's rendezvous errors.
  static Result<std::unique_ptr<WorkerSession>> Join(const ClusterConfig& config, const std::string& party, int rank,
                                                      const ps::KeySchema& schema, const RoleEnv& env);
  ~WorkerSession();

  comm::KvLink* link() const { return link_.get(); }
  comm::KvLink* aux_link() const { return aux_link_.get(); }
  // The context for algorithm code (ps_context.h) over this session's links.
  std::unique_ptr<ps::PsContext> MakeContext() const;
  // How this worker reaches the state server of its sync mode (esync).
  sync::StateServerAccess StateServer() const;

  int dc_index() const { return dc_index_; }
  int rank() const { return rank_; }
  int worker_index() const { return worker_index_; }
  const std::string& name() const { return name_; }
  const ps::KeySchema& schema() const { return schema_; }

  // The job as the data centre's local server 0 has it (kControl "get-job"): the master worker's description,
  // e.g. the start round of a resumed job. Errors: the server's, or kDataLoss for a malformed answer.
  Result<ps::JobDescription> FetchJob();
  // Whether this worker process rejoined a running tier (a restart; comm::Postoffice::rejoined).
  bool rejoined() const { return po_->rejoined(); }
  // For a rejoined worker: agrees with every server of the tier on the round it pushes first (each proposes one,
  // the largest is committed everywhere: comm::SyncAggregator::ProposeJoin/CommitJoin) and returns it. Errors:
  // the servers' (kUnimplemented-like refusals of a sync mode that cannot take a worker back), kDataLoss for a
  // malformed answer.
  Result<int64_t> JoinRunningTier();
  // Tells the tier this worker is done and waits for the others (comm::Postoffice::Finalize).
  Status Finish();
  // Leaves the tier early because of `why` (comm::Postoffice::Leave): the tier's other nodes hear it at once.
  void Leave(const Status& why);

 private:
  WorkerSession(const ClusterConfig& config, const RoleEnv& env) : config_(config), env_(env) {}

  const ClusterConfig config_;
  const RoleEnv env_;
  ps::KeySchema schema_;
  std::string name_;
  std::string host_;
  int dc_index_ = 0, rank_ = 0, worker_index_ = 0;
  std::unique_ptr<comm::Van> van_;
  std::unique_ptr<comm::Postoffice> po_;
  std::unique_ptr<comm::KvWorker> kv_;
  std::unique_ptr<comm::KvLink> link_, aux_link_;
  // TSEngine inside the data centre (ClusterConfig::tsengine): link_'s relay. Destroyed before the links.
  std::unique_ptr<comm::TsMember> ts_member_;
};

}  // namespace geomx::cluster
