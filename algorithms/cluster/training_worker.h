// RunTrainingWorker: one worker of a distributed neural-network job: joins its data centre's tier
// (worker_session.h), builds its side of the sync mode (the trainer's ParameterUpdate), pulls the initial weights
// and trains with the Trainer (algorithms/train/trainer.h) on its data shard. cli/ builds the model, the data,
// the optimizer and (on the evaluating worker) the listener that writes the run folder, and passes them in.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "algorithms/cluster/cluster_config.h"
#include "algorithms/ps/job.h"
#include "algorithms/train/trainer.h"
#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace geomx::cluster {

struct TrainingWorkerArgs {
  const ClusterConfig* config = nullptr;
  std::string party;
  int rank = 0;
  const RoleEnv* env = nullptr;
  ps::JobDescription job;                    // the job the master worker sent (schema from the same model)
  nn::Module* model = nullptr;               // borrowed; initialised from the seed, on the trainer's device
  nn::Optimizer* optimizer = nullptr;        // the job's optimizer, local to this worker
  std::shared_ptr<const data::Dataset> train;
  const data::Dataset* test = nullptr;
  data::LoaderOptions loader;                // this worker's shard (rank, world, seed)
  train::TrainerOptions trainer;             // iterations_per_epoch is set from the job's plan here
  train::TrainerListener* listener = nullptr;  // may be null
  const std::atomic<bool>* interrupted = nullptr;
  // Called when training ended, before the worker leaves its tier (summary files, tests' weight snapshots).
  std::function<void(const Result<train::StopReason>& reason, const train::TrainState& state)> on_trained;
};

// Trains until the job ends. Errors name this worker ("dc-a/worker1: ...").
Status RunTrainingWorker(const TrainingWorkerArgs& args);

}  // namespace geomx::cluster
