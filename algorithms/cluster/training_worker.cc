#include "algorithms/cluster/training_worker.h"

#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/worker_session.h"
#include "algorithms/train/slowdown_update.h"

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
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<sync::WorkerSync> update, mode->MakeWorker(wargs));
  GEOMX_RETURN_IF_ERROR(update->PullInitial(a.model->Parameters()));
  const float slowdown = c.topology.datacentres[session->dc_index()].slowdown;
  train::SlowdownUpdate slowed(update.get(), slowdown);
  train::ParameterUpdate* applied = slowdown > 1.0f ? static_cast<train::ParameterUpdate*>(&slowed) : update.get();

  data::DataLoader loader(a.train, a.loader);
  train::TrainerOptions to = a.trainer;
  to.iterations_per_epoch = a.job.plan.iterations_per_epoch;
  update->Configure(&to.training);
  train::Trainer trainer(to, a.model, a.optimizer, &loader, a.test, a.listener, a.interrupted, applied);
  train::TrainState state;
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
