#include "cli/cluster.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/snapshots.h"
#include "algorithms/cluster/tiers.h"
#include "algorithms/cluster/training_worker.h"
#include "algorithms/ps/key_schema.h"
#include "cli/estimator_run.h"
#include "cli/progress.h"
#include "cli/run_dir.h"
#include "cli/run_report.h"
#include "cli/sync_rules.h"
#include "datasets/loader.h"
#include "engine/base/logging.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {

Result<cluster::ClusterConfig> ClusterConfigOf(const Recipe& r) {
  cluster::ClusterConfig c;
  c.topology = r.topology;
  c.sync = r.sync;
  GEOMX_ASSIGN_OR_RETURN(c.optimizer_where, sync::ParseOptimizerPlacement(r.optimizer_where));
  const AcceleratorsConfig& a = r.accelerators;
  comm::LinkParams link;
  link.size_lower_bound = static_cast<uint64_t>(std::max<int64_t>(0, a.size_lower_bound));
  link.bsc.ratio = a.bsc_ratio;
  link.bsc.momentum = a.bsc_momentum;
  link.bsc.sampled = a.bsc_selection == "sampled";
  link.bsc.sample_fraction = a.bsc_sample_fraction;
  link.bsc.seed = r.seed;
  link.bsc.int8_block = static_cast<uint32_t>(a.int8_block);
  link.bsc.int8_stochastic = a.int8_stochastic;
  link.bsc.powersgd_rank = static_cast<uint32_t>(a.powersgd_rank);
  c.links = comm::MakeLinkPlan(ResolveLinks(a), link);
  // P3: slices of at most accelerators.p3.slice_elements on every tier; enough of them in flight to keep a
  // 50 Mbit/s x 25 ms WAN busy (8 x 160 KB > bandwidth x round trip) while the rest queues in priority order.
  c.split_bytes = r.topology.options.split_bytes;
  if (a.p3) {
    c.split_bytes = std::min(c.split_bytes, a.p3_slice_elements * int64_t{4});
    c.worker_send = {.p3 = true, .max_in_flight_bytes = 8 * sizeof(float) * static_cast<uint64_t>(a.p3_slice_elements)};
  }
  if (a.dgt) {
    comm::DgtLinkOptions dgt;
    dgt.plan.block_elements = static_cast<size_t>(a.dgt_block_bytes / 4);
    dgt.plan.alpha = a.dgt_alpha;
    dgt.plan.k0 = a.dgt_k;
    dgt.plan.k_min = a.dgt_k_min;
    dgt.plan.adaptive_k = a.dgt_adaptive;
    dgt.plan.channels = static_cast<int>(a.dgt_channels);
    dgt.deadline_s = a.dgt_deadline_s;
    GEOMX_ASSIGN_OR_RETURN(dgt.transport, comm::ParseDgtTransport(a.dgt_mode));
    c.global_send.dgt = dgt;
  }
  if (a.tsengine) {
    c.tsengine = cluster::TsEngineConfig{
        .overlay = {.ewma = a.tsengine_ewma, .expiry_rounds = a.tsengine_expiry,
                    .max_greedy = a.tsengine_max_greedy, .seed = r.seed},
        .global_tier = a.tsengine_tier != "datacentre",
        .datacentre_tier = a.tsengine_tier != "global"};
  }
  c.seed = r.seed;
  c.snapshot_every = r.topology.snapshot_every;
  return c;
}

ps::JobDescription JobOf(const Recipe& r, const RunSetup& setup) {
  ps::JobDescription job;
  job.schema = ps::KeySchemaFromModule(*setup.model);
  job.plan.iterations_per_epoch = cluster::FsaIterationsPerEpoch(setup.data.train->size(),
                                                                 r.topology.total_workers(), r.data.batch_size);
  job.plan.epochs = r.training.epochs;
  job.plan.max_iterations = r.training.max_iterations;
  job.optimizer = r.optimizer;
  job.schedule = r.lr_schedule;
  return job;
}

Status CheckTopologyTraining(const Recipe& recipe) {
  if (recipe.training.stop_at_target) {
    return Status::InvalidArgument(
        "training.stop_at_target: not supported with a topology yet (the other workers cannot know when to stop); "
        "the run records time_to_target_seconds without it");
  }
  return Status::Ok();
}

Status RunGlobalScheduler(const Recipe& recipe, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  return cluster::RunGlobalScheduler(c, env);
}

Status RunScheduler(const Recipe& recipe, const std::string& party, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  return cluster::RunScheduler(c, party, env);
}

Status RunGlobalServer(const Recipe& recipe, int rank, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  return cluster::RunGlobalServer(c, rank, env);
}

namespace {

// The initial value of every trainable parameter (key = its index), as the model built from recipe.seed has them.
std::map<uint64_t, std::vector<float>> InitialValues(const RunSetup& setup) {
  std::map<uint64_t, std::vector<float>> initial;
  uint64_t key = 0;
  for (nn::Parameter* p : setup.model->TrainableParameters()) initial[key++] = p->data().ToFloatVector();
  return initial;
}

}  // namespace

Status RunLocalServer(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  // sync.initial_weights: seed: the master worker's initial weights, built here from recipe.seed (the model's
  // shape comes from the data set, so the server opens it; where it cannot, the weights come over the WAN).
  if (recipe.sync.initial_weights == "seed" && !recipe.has_algorithm) {
    Result<RunSetup> setup = PrepareRun(recipe);
    if (setup.ok()) {
      const std::map<uint64_t, std::vector<float>> initial = InitialValues(*setup);
      setup->model.reset();
      setup->data = {};
      return cluster::RunLocalServer(c, party, rank, env, &initial);
    }
    GEOMX_LOG(kWarning) << party << "/server" << rank << ": sync.initial_weights: seed: cannot build the model here ("
                        << setup.status().ToString() << "): fetching the initial weights over the WAN";
  }
  return cluster::RunLocalServer(c, party, rank, env);
}

Status RunStateServer(const Recipe& recipe, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  return cluster::RunStateServer(c, env);
}

Status RunMasterWorker(const Recipe& recipe, const ClusterEnv& env) {
  if (recipe.has_algorithm) return RunAlgorithmMasterWorker(recipe, env);
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));  // initial weights from recipe.seed
  ps::JobDescription job = JobOf(recipe, setup);
  if (env.resume) {
    Result<int64_t> start = cluster::ResumeRound(c, job, env.snapshot_dir);
    if (!start.ok()) return start.status().WithContext("--resume " + env.out_dir);
    job.plan.start_round = *start;
    GEOMX_LOG(kInfo) << "master worker: resuming the job at round " << *start << " from the snapshots in "
                     << env.snapshot_dir;
  }
  return cluster::RunMasterWorker(c, job, InitialValues(setup), env);
}

Status RunWorker(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env,
                 const std::atomic<bool>* interrupted) {
  if (recipe.has_algorithm) return RunAlgorithmWorker(recipe, party, rank, env, interrupted);
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  GEOMX_ASSIGN_OR_RETURN(int dc_index, cluster::FindDataCentre(recipe.topology, party));
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));
  GEOMX_RETURN_IF_ERROR(CheckBatchFitsTrainingSet(recipe, *setup.data.train));
  nn::Module& model = *setup.model;
  auto opt_or = nn::CreateOptimizer(recipe.optimizer);
  if (!opt_or.ok()) return opt_or.status().WithContext("optimizer");
  std::unique_ptr<nn::Optimizer> optimizer = std::move(opt_or).value();

  const int world = recipe.topology.total_workers();
  const int index = cluster::WorkerIndex(recipe.topology, dc_index, rank);
  const bool evaluator = index == 0;
  cluster::TrainingWorkerArgs args;
  args.config = &c;
  args.party = party;
  args.rank = rank;
  args.env = &env;
  args.job = JobOf(recipe, setup);
  args.model = &model;
  args.optimizer = optimizer.get();
  args.train = setup.data.train;
  args.test = setup.data.test.get();
  args.loader = data::TrainLoaderOptions(recipe.data, index, world, recipe.seed);
  args.trainer.training = recipe.training;
  args.trainer.schedule = recipe.lr_schedule;
  args.trainer.base_lr = recipe.optimizer.lr;
  args.trainer.clip_norm = recipe.optimizer.clip_norm;
  args.trainer.device = setup.device;
  args.trainer.evaluate = evaluator;
  args.trainer.scored_classes = train::ScoredClasses(recipe.data);
  args.trainer.make_eval_model = EvalModelFactory(recipe, setup);
  args.interrupted = interrupted;

  std::optional<RunDir> run;
  std::unique_ptr<Progress> progress;
  std::unique_ptr<RunListener> listener;
  // The evaluating worker reports the whole job's traffic: the sum of every process's published counters.
  const TrafficSource traffic = [dir = env.out_dir] {
    return dir.empty() ? comm::TrafficSnapshot{} : ReadTrafficDir(std::filesystem::path(dir) / "traffic");
  };
  if (evaluator && !env.out_dir.empty()) {
    Result<RunDir> opened = env.resume ? RunDir::Open(env.out_dir)  // appends to the run's files
                                       : RunDir::OpenOrCreateForWorker(env.out_dir, RecipeToYaml(recipe));
    GEOMX_RETURN_IF_ERROR(opened.status());
    run.emplace(std::move(opened).value());
    progress = std::make_unique<Progress>(stdout, false, recipe.training.log_every);
    listener = std::make_unique<RunListener>(&*run, progress.get(), &model, optimizer.get(), recipe.model.name,
                                             traffic);
    args.listener = listener.get();
  }
  const std::string name = cluster::WorkerName(party, rank);
  args.on_trained = [&](const Result<train::StopReason>& reason, const train::TrainState& state) {
    if (run) {
      const char* status = !reason.ok()                                ? "failed"
                           : *reason == train::StopReason::kInterrupted ? "interrupted"
                                                                        : "completed";
      Status ws = run->WriteSummary(SummaryJson(status, reason.ok() ? "" : reason.status().ToString(), recipe, setup,
                                                model.NumParameters(), state, *run, traffic()));
      if (!ws.ok()) GEOMX_LOG(kWarning) << "cannot write summary: " << ws.ToString();
    }
    if (env.on_worker_done) env.on_worker_done(name, model);
  };
  return cluster::RunTrainingWorker(args);
}

}  // namespace geomx::cli
