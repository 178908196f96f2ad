// The roles of a HiPS topology (comm/topology.h). Each role is a function that runs until the job ends; the
// same functions run as processes (cli/roles.cc: ZeroMQ over TCP, shaped by the recipe's links) or as threads of
// one process (tests: inproc ZeroMQ or loopback vans), because every Van and address comes from a ClusterEnv.
//
// Keys: parameter i of the model (Module::Parameters() order) is PS key i with numel(i) f32 elements; every tier
// builds its KeyLayout from the same KeySpecs and topology.split_bytes (MultiGPS: balanced by bytes, large
// tensors split into ranges).
//
// FSA, one iteration (round r):
//   worker      PushPull(gradients, r) to its data centre's local servers; receives the new weights (or, with
//               optimizer.where: worker, the mean gradient, and steps its own optimizer)
//   local srv   SyncAggregator: sum of its workers' pushes -> ForwardSink: PushPull the sum (num_merged = its
//               workers) to the global servers -> answers its workers with the value from above
//   global srv  SyncAggregator over all local servers -> OptimizerSink: mean = sum / total workers, optimizer step
//               on its master copy -> answers with the new weights
// Start: the master worker sends the optimizer settings (typed fields) and pushes the initial weights (round -1,
// from recipe.seed: the same weights a single-process run starts from); workers pull round -1 through their
// local server. End: every node finalizes its tiers; schedulers return when their tier is done.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "cli/recipe.h"
#include "comm/van.h"
#include "engine/base/status.h"
#include "nn/module.h"

namespace geomx::cli {

// Where the roles get their transport. Thread-safe functions (roles of one process call them concurrently).
struct ClusterEnv {
  // A new Van for the node named `node` ("dc-a/server0@global": a local server has one Van per tier).
  std::function<std::unique_ptr<comm::Van>(const std::string& node)> make_van;
  // The endpoint a tier's scheduler binds and every member connects to.
  std::function<std::string(const std::string& tier, const std::string& host, int port)> scheduler_endpoint;
  // The address a node binds its receiving socket to (any free port on `host`, or an inproc name).
  std::function<std::string(const std::string& node, const std::string& host)> node_bind;
  // Called by every worker when training ended, with its model (tests compare weights). May be empty.
  std::function<void(const std::string& worker, nn::Module& model)> on_worker_done;
  // Run folder of the evaluating worker (metrics, checkpoints, summary.json); empty: no files.
  std::string out_dir;
};

// What a topology run cannot do yet (kInvalidArgument naming the key), checked before anything starts:
// training.stop_at_target (only the evaluating worker knows the accuracy; FSA needs every worker in every round).
Status CheckTopologyTraining(const Recipe& recipe);

Status RunGlobalScheduler(const Recipe& recipe, const ClusterEnv& env);
Status RunScheduler(const Recipe& recipe, const std::string& party, const ClusterEnv& env);
Status RunGlobalServer(const Recipe& recipe, int rank, const ClusterEnv& env);
Status RunLocalServer(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env);
Status RunMasterWorker(const Recipe& recipe, const ClusterEnv& env);
// sync.mode esync: the state server that decides each worker's local steps per round (cli/sync/esync.h).
Status RunStateServer(const Recipe& recipe, const ClusterEnv& env);
// Trains. Worker 0 of the first data centre evaluates and writes the run folder's files.
Status RunWorker(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env,
                 const std::atomic<bool>* interrupted);

}  // namespace geomx::cli
