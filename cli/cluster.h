// The roles of a recipe's topology, composed: each function turns the Recipe into the libraries' typed configs
// (ClusterConfigOf, JobOf) and runs the role of algorithms/cluster/roles.h. Servers and schedulers never build a
// model or open a data set (the master worker sends them the job); the master worker and the workers build the
// model from the seed and the data from the recipe here.
//
// The same functions run as processes (cli/roles.cc: ZeroMQ over TCP, shaped by the recipe's links) or as
// threads of one process (tests: inproc ZeroMQ or loopback vans), because every Van and address comes from the
// ClusterEnv.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "algorithms/cluster/cluster_config.h"
#include "algorithms/ps/job.h"
#include "cli/recipe.h"
#include "cli/setup.h"
#include "engine/base/status.h"
#include "nn/module.h"

namespace geomx::cli {

// Where the roles get their transport (cluster::RoleEnv), plus what the CLI's workers need.
struct ClusterEnv : cluster::RoleEnv {
  // Called by every worker when training ended, with its model (tests compare weights). May be empty.
  std::function<void(const std::string& worker, nn::Module& model)> on_worker_done;
  // Run folder of the evaluating worker (metrics, checkpoints, summary.json); empty: no files.
  std::string out_dir;
  // The job resumes the run in out_dir (RoleSpec::resume): the master worker starts it at the round after the
  // global servers' latest common snapshot; the evaluating worker appends to the run's files.
  bool resume = false;
};

// The typed configuration every role of `recipe` shares (the recipe has a topology): topology, sync settings,
// optimizer placement, the compression plan of the links, the workers' send path (P3) and the key slicing.
// kInvalidArgument naming the key for values the schema cannot rule out.
Result<cluster::ClusterConfig> ClusterConfigOf(const Recipe& recipe);

// The job the master worker sends and every worker trains: the model's keys, the FSA plan (rounds per epoch from
// the smallest shard), the optimizer and its schedule.
ps::JobDescription JobOf(const Recipe& recipe, const RunSetup& setup);

// What a topology run cannot do yet (kInvalidArgument naming the key), checked before anything starts:
// training.stop_at_target (only the evaluating worker knows the accuracy; FSA needs every worker in every round).
Status CheckTopologyTraining(const Recipe& recipe);

Status RunGlobalScheduler(const Recipe& recipe, const ClusterEnv& env);
Status RunScheduler(const Recipe& recipe, const std::string& party, const ClusterEnv& env);
Status RunGlobalServer(const Recipe& recipe, int rank, const ClusterEnv& env);
Status RunLocalServer(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env);
Status RunMasterWorker(const Recipe& recipe, const ClusterEnv& env);
// The state server of the sync modes that have one (esync).
Status RunStateServer(const Recipe& recipe, const ClusterEnv& env);
// Trains. Worker 0 of the first data centre evaluates and writes the run folder's files.
Status RunWorker(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env,
                 const std::atomic<bool>* interrupted);

}  // namespace geomx::cli
