#include "algorithms/cluster/training_worker.h"

#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/worker_session.h"
#include "algorithms/train/slowdown_update.h"
#include "engine/base/logging.h"

namespace geomx::cluster {

Status RunTrainingWorker(const TrainingWorkerArgs& a) {
  const ClusterConfig& c = *a.config;
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<sync::SyncMode> mode, sync::CreateSyncMode(c.sync));
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<WorkerSession> session,
                         WorkerSession::Join(c, a.party, a.rank, a.job.schema, *a.env));
  const sync::SyncJob sync_job = MakeSyncJob(c, a.job);
  sync::WorkerArgs wargs;
  wargs.job = &sync_job;
  wargs.dc_index = session->dc_index();
  wargs.rank = a.rank;
  wargs.worker_index = session->worker_index();
  wargs.link = session->link();
  wargs.optimizer = a.optimizer;
  wargs.model = a.model;
  wargs.state_server = session->StateServer();
  wargs.observer = a.env->observer;
  wargs.send_loss = c.global_send.dgt.has_value() && c.global_send.dgt->plan.adaptive_k;
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<sync::WorkerSync> update, mode->MakeWorker(wargs));
  // A resumed job starts at the master's start round, a restarted worker at the round its servers agreed on:
  // the data position and the schedule continue from there.
  int64_t start = 0;
  if (session->rejoined()) {
    GEOMX_ASSIGN_OR_RETURN(start, session->JoinRunningTier());
    GEOMX_RETURN_IF_ERROR(update->PullRejoin(a.model->TrainableParameters(), start).WithContext(session->name()));
    GEOMX_LOG(kWarning) << session->name() << ": rejoined the running job at round " << start;
  } else {
    GEOMX_RETURN_IF_ERROR(update->PullInitial(a.model->TrainableParameters()));
  }
  GEOMX_ASSIGN_OR_RETURN(const ps::JobDescription served_job, session->FetchJob());
  if (!session->rejoined()) start = served_job.plan.start_round;
  const int64_t per_epoch = a.job.plan.iterations_per_epoch;
  if (served_job.plan.iterations_per_epoch != per_epoch ||
      served_job.schema.keys().size() != a.job.schema.keys().size()) {
    return Status::InvalidArgument(session->name() + ": the job of the master worker (" +
                                   std::to_string(served_job.schema.keys().size()) + " keys, " +
                                   std::to_string(served_job.plan.iterations_per_epoch) +
                                   " rounds per epoch) is not this worker's: do both use the same recipe?");
  }
  const float slowdown = c.topology.datacentres[session->dc_index()].slowdown;
  train::SlowdownUpdate slowed(update.get(), slowdown);
  train::ParameterUpdate* applied = slowdown > 1.0f ? static_cast<train::ParameterUpdate*>(&slowed) : update.get();

  data::DataLoader loader(a.train, a.loader);
  train::TrainerOptions to = a.trainer;
  to.iterations_per_epoch = a.job.plan.iterations_per_epoch;
  update->Configure(&to.training);
  train::Trainer trainer(to, a.model, a.optimizer, &loader, a.test, a.listener, a.interrupted, applied);
  train::TrainState state;
  state.iteration = start;
  state.epoch = static_cast<int>(start / per_epoch);
  state.epoch_iteration = start % per_epoch;
  if (start > 0 && !session->rejoined()) GEOMX_LOG(kInfo) << session->name() << ": resuming at round " << start;
  Result<train::StopReason> reason = trainer.Run(&state);
  if (a.on_trained) a.on_trained(reason, state);
  if (!reason.ok()) {
    const Status failed = reason.status().WithContext(session->name());
    session->Leave(failed);
    return failed;
  }
  update.reset();  // its links' requests are done before the tier says goodbye
  return session->Finish();
}

}  // namespace geomx::cluster
