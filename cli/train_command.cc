#include "cli/train_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "algorithms/cluster/snapshots.h"
#include "cli/cluster.h"
#include "cli/estimator_run.h"
#include "cli/json_writer.h"
#include "cli/local_topology.h"
#include "cli/progress.h"
#include "cli/recipe.h"
#include "cli/run_dir.h"
#include "cli/run_report.h"
#include "cli/setup.h"
#include "algorithms/train/trainer.h"
#include "comm/traffic.h"
#include "datasets/loader.h"
#include "engine/base/logging.h"
#include "nn/checkpoint.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {
namespace fs = std::filesystem;

namespace {

// The job's processes on this machine, restarted from the servers' snapshots after a failure (not a user error,
// not Ctrl-C) up to topology.max_restarts times. `job`: the neural job (null for algorithm recipes, which have no
// snapshots).
Status RunWithRestarts(const TrainFlags& flags, const Recipe& recipe, const ps::JobDescription* job,
                       const fs::path& run_dir, const std::atomic<bool>* interrupted) {
  Status status = RunLocalTopology(flags, recipe, interrupted);
  for (int restart = 1; restart <= recipe.topology.max_restarts && status.code() == StatusCode::kUnavailable &&
                        job != nullptr && !(interrupted != nullptr && *interrupted);
       ++restart) {
    GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig config, ClusterConfigOf(recipe));
    Result<int64_t> start = cluster::ResumeRound(config, *job, run_dir / "snapshots");
    if (!start.ok()) {
      std::printf("geomx: cannot restart the job: %s\n", start.status().message().c_str());
      break;
    }
    std::printf("geomx: %s\ngeomx: restarting the job from round %lld (restart %d of %d, topology.max_restarts)\n",
                status.message().c_str(), static_cast<long long>(*start), restart, recipe.topology.max_restarts);
    std::fflush(stdout);
    TrainFlags again = flags;
    again.out.clear();
    again.resume = run_dir.string();
    status = RunLocalTopology(again, recipe, interrupted);
  }
  return status;
}

// `geomx train RECIPE` for a recipe with a topology: every role as its own process on this machine
// (cli/local_topology.h). The evaluating worker writes metrics and summary.json into the run folder; every
// process publishes its traffic there, and the whole job's traffic goes into the summary at the end.
Status RunTopologyTraining(const TrainFlags& flags, const Recipe& recipe, const ps::JobDescription* job,
                           const std::atomic<bool>* interrupted) {
  GEOMX_RETURN_IF_ERROR(CheckTopologyTraining(recipe));
  TrainFlags f = flags;
  if (f.out.empty()) f.out = RunDir::DefaultPath("runs", recipe.name).string();
  Result<RunDir> opened =
      flags.resume.empty() ? RunDir::Create(f.out, RecipeToYaml(recipe)) : RunDir::Open(flags.resume);
  GEOMX_RETURN_IF_ERROR(opened.status());
  RunDir run = std::move(opened).value();
  if (!flags.resume.empty()) {  // keeps the new overrides (the processes read the run's recipe.yaml)
    GEOMX_RETURN_IF_ERROR(WriteFileAtomically(run.path() / "recipe.yaml", RecipeToYaml(recipe)));
  }
  std::printf("geomx: starting %s on this machine (%d data centres, %d workers); run folder %s\n",
              recipe.name.c_str(), static_cast<int>(recipe.topology.datacentres.size()),
              recipe.topology.total_workers(), run.path().c_str());
  std::fflush(stdout);
  const Status status = RunWithRestarts(f, recipe, job, run.path(), interrupted);

  // summary.json agrees with the job's ending: the evaluating worker wrote it (or died first); a failure elsewhere
  // (a killed server, a dead scheduler) makes it "failed" with the cause, Ctrl-C "interrupted". The whole job's
  // traffic (every process's published counters) replaces the evaluating worker's view.
  const comm::TrafficSnapshot traffic = ReadTrafficDir(run.path() / "traffic");
  std::ifstream in(run.path() / "summary.json");
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const char* ending = status.ok() ? "completed" : status.code() == StatusCode::kCancelled ? "interrupted" : "failed";
  const std::string summary =
      TopologySummaryJson(written, ending, status.ok() ? std::string() : status.ToString(), recipe, run, traffic);
  Status ws = run.WriteSummary(summary);
  if (!status.ok()) {
    if (!ws.ok()) GEOMX_LOG(kWarning) << "cannot write summary.json: " << ws.ToString();
    return status;
  }
  GEOMX_RETURN_IF_ERROR(ws);
  if (!status.ok()) return status;
  std::printf("geomx: completed; WAN %.1f MB, LAN %.1f MB; summary %s/summary.json\n", traffic.wan_bytes() / 1e6,
              traffic.lan_bytes() / 1e6, run.path().c_str());
  return Status::Ok();
}

void PrintPlan(const Recipe& recipe, const RunSetup& setup, nn::Module& model) {
  std::printf("# resolved recipe\n%s\n", RecipeToYaml(recipe).c_str());
  const auto& info = setup.data.train->info();
  std::printf("# plan\n");
  if (!recipe.has_topology) {  // with a topology, PrintLocalTopologyPlan lists the processes
    std::printf("processes: 1 (single-process training on %s, %s)\n", setup.device.ToString().c_str(),
                recipe.threads > 0 ? (std::to_string(recipe.threads) + " threads").c_str() : "all cores");
  }
  std::printf("data: %s (%s) train %lld, test %lld examples, %d classes\n", recipe.data.name.c_str(),
              info.source.c_str(), static_cast<long long>(setup.data.train->size()),
              static_cast<long long>(setup.data.test->size()), info.num_classes);
  std::printf("model: %s, %lld parameters\n%s", recipe.model.name.c_str(),
              static_cast<long long>(model.NumParameters()), model.Summary().c_str());
  if (recipe.model.freeze > 0) {
    int64_t trainable = 0;
    for (nn::Parameter* p : model.TrainableParameters()) trainable += p->numel();
    std::printf("frozen: the first %d layers; %lld parameters train (and are the parameter-server keys)\n",
                recipe.model.freeze, static_cast<long long>(trainable));
  }
}

}  // namespace

Status ParsePartyNetns(std::string_view value, std::map<std::string, PartyNetns>* out) {
  const size_t eq = value.find('='), at = value.find('@', eq == std::string_view::npos ? 0 : eq);
  if (eq == std::string_view::npos || at == std::string_view::npos || eq == 0 || at == eq + 1 ||
      at + 1 == value.size()) {
    return Status::InvalidArgument("--party-netns '" + std::string(value) + "': expected PARTY=NAMESPACE@IP");
  }
  (*out)[std::string(value.substr(0, eq))] = {std::string(value.substr(eq + 1, at - eq - 1)),
                                              std::string(value.substr(at + 1))};
  return Status::Ok();
}

std::string FormatPartyNetns(const std::string& party, const PartyNetns& where) {
  return party + "=" + where.ns + "@" + where.ip;
}

Status RunTrainCommand(const TrainFlags& flags, const std::atomic<bool>* interrupted) {
  // 1. Validate everything before creating anything. A resumed run continues with its own resolved recipe
  //    (DIR/recipe.yaml, which already holds the first run's --set values) plus any new --set overrides.
  Recipe recipe;
  if (!flags.resume.empty()) {
    const fs::path recorded = fs::path(flags.resume) / "recipe.yaml";
    if (!fs::exists(recorded)) {
      return Status::NotFound("--resume " + flags.resume + ": not a geomx run folder (no recipe.yaml)");
    }
    GEOMX_ASSIGN_OR_RETURN(recipe, LoadRecipe(recorded.string(), flags.sets));
    if (!flags.recipe.empty()) {
      GEOMX_ASSIGN_OR_RETURN(Recipe given, LoadRecipe(flags.recipe));
      GEOMX_ASSIGN_OR_RETURN(Recipe run_recipe, LoadRecipe(recorded.string()));
      if (RecipeToYaml(given) != RecipeToYaml(run_recipe)) {
        return Status::InvalidArgument(
            flags.recipe + " differs from the recipe the run in " + flags.resume +
            " was trained with (its recipe.yaml); omit the recipe to resume that run, and change keys with --set");
      }
    }
  } else {
    if (flags.recipe.empty()) return Status::InvalidArgument("train: a RECIPE file is required (or --resume DIR)");
    GEOMX_ASSIGN_OR_RETURN(recipe, LoadRecipe(flags.recipe, flags.sets));
  }
  if (recipe.has_algorithm && !recipe.has_topology) return RunAlgorithmTraining(flags, recipe, interrupted);
  if (recipe.has_algorithm) {  // every role as a process; the workers fit through the parameter server
    if (!flags.resume.empty()) {
      return Status::InvalidArgument("--resume: " + recipe.algorithm.name +
                                     " is a classical algorithm, fitted in one go; train it again instead");
    }
    if (flags.dry_run) {
      std::printf("# resolved recipe\n%s\n# plan\nalgorithm: %s, fitted across the topology's workers\n",
                  RecipeToYaml(recipe).c_str(), recipe.algorithm.name.c_str());
      return PrintLocalTopologyPlan(flags, recipe);
    }
    return RunTopologyTraining(flags, recipe, nullptr, interrupted);
  }
  // A resumed run's checkpoint holds every weight: model.init_from is not read again.
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe, /*start_weights=*/flags.resume.empty()));
  GEOMX_RETURN_IF_ERROR(CheckBatchFitsTrainingSet(recipe, *setup.data.train));
  nn::Module& model = *setup.model;
  auto opt_or = nn::CreateOptimizer(recipe.optimizer);
  if (!opt_or.ok()) return opt_or.status().WithContext("optimizer");
  std::unique_ptr<nn::Optimizer> optimizer = std::move(opt_or).value();

  if (flags.dry_run) {
    PrintPlan(recipe, setup, model);
    return recipe.has_topology ? PrintLocalTopologyPlan(flags, recipe) : Status::Ok();
  }
  if (recipe.has_topology) {
    if (!flags.resume.empty()) {  // the master worker finds the round again; this is the check before any start
      GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig config, ClusterConfigOf(recipe));
      Result<int64_t> start =
          cluster::ResumeRound(config, JobOf(recipe, setup), fs::path(flags.resume) / "snapshots");
      if (!start.ok()) return Status::InvalidArgument("--resume " + flags.resume + ": " + start.status().message());
      std::printf("resuming %s at round %lld from its server snapshots\n", flags.resume.c_str(),
                  static_cast<long long>(*start));
    }
    const ps::JobDescription job = JobOf(recipe, setup);
    return RunTopologyTraining(flags, recipe, &job, interrupted);
  }

  // 2. The run folder: new, or the one being resumed.
  TrainState state;
  std::optional<RunDir> run;
  if (!flags.resume.empty()) {
    GEOMX_ASSIGN_OR_RETURN(RunDir opened, RunDir::Open(flags.resume));
    GEOMX_ASSIGN_OR_RETURN(fs::path ckpt, RunDir::LastCheckpoint(opened.path()));
    nn::CheckpointMeta meta;
    Status st = nn::LoadCheckpoint(ckpt, model, optimizer.get(), &meta);
    if (!st.ok()) return st.WithContext("--resume " + flags.resume);
    state = StateFromJson(meta.extra_json);
    if (state.epoch >= recipe.training.epochs &&
        (recipe.training.max_iterations == 0 || state.iteration >= recipe.training.max_iterations)) {
      return Status::InvalidArgument("--resume " + flags.resume + ": the run already finished " +
                                     std::to_string(state.epoch) + " of " +
                                     std::to_string(recipe.training.epochs) +
                                     " epochs (raise training.epochs with --set to train further)");
    }
    // Keep the overrides for the next resume.
    GEOMX_RETURN_IF_ERROR(WriteFileAtomically(opened.path() / "recipe.yaml", RecipeToYaml(recipe)));
    std::printf("resuming %s from %s (iteration %lld, epoch %d)\n", opened.path().c_str(), ckpt.c_str(),
                static_cast<long long>(state.iteration), state.epoch);
    run.emplace(std::move(opened));
  } else {
    const fs::path dir = flags.out.empty() ? RunDir::DefaultPath("runs", recipe.name) : fs::path(flags.out);
    GEOMX_ASSIGN_OR_RETURN(RunDir created, RunDir::Create(dir, RecipeToYaml(recipe)));
    run.emplace(std::move(created));
  }

  // 3. Train.
  data::DataLoader loader(setup.data.train, data::TrainLoaderOptions(recipe.data, /*rank=*/0, /*world=*/1, recipe.seed));

  comm::TrafficCounters traffic;  // single process: nothing crosses a link, so these stay zero
  Progress progress(stdout, isatty(STDOUT_FILENO) == 1, recipe.training.log_every);
  RunListener listener(&*run, &progress, &model, optimizer.get(), recipe.model.name,
                       [&traffic] { return traffic.Snapshot(); });
  train::TrainerOptions to;
  to.training = recipe.training;
  to.schedule = recipe.lr_schedule;
  to.base_lr = recipe.optimizer.lr;
  to.clip_norm = recipe.optimizer.clip_norm;
  to.device = setup.device;
  to.scored_classes = train::ScoredClasses(recipe.data);
  to.make_eval_model = EvalModelFactory(recipe, setup);
  train::Trainer trainer(to, &model, optimizer.get(), &loader, setup.data.test.get(), &listener, interrupted);

  const int64_t num_params = model.NumParameters();
  progress.Message("geomx: training " + recipe.model.name + " (" + std::to_string(num_params) +
                   " parameters) on " + recipe.data.name + ", " + std::to_string(loader.num_examples()) +
                   " examples, " + std::to_string(trainer.total_iterations()) + " iterations; run folder " +
                   run->path().string());
  Result<StopReason> reason = trainer.Run(&state);
  progress.Finish();

  const comm::TrafficSnapshot t = traffic.Snapshot();
  if (!reason.ok()) {
    Status ws = run->WriteSummary(
        SummaryJson("failed", reason.status().ToString(), recipe, setup, num_params, state, *run, t));
    (void)ws;  // the training error is the one to report
    return reason.status();
  }
  const bool was_interrupted = *reason == StopReason::kInterrupted;
  GEOMX_RETURN_IF_ERROR(run->WriteSummary(SummaryJson(was_interrupted ? "interrupted" : "completed", "", recipe,
                                                      setup, num_params, state, *run, t)));
  char line[512];
  std::snprintf(line, sizeof(line),
                "geomx: %s after %lld iterations (%d epochs) in %s: final test accuracy %.4f, best %.4f; "
                "summary %s/summary.json",
                train::StopReasonName(*reason), static_cast<long long>(state.iteration), state.epoch,
                Progress::FormatDuration(state.elapsed_s).c_str(), std::max(0.0, state.final_accuracy),
                std::max(0.0, state.best_accuracy), run->path().c_str());
  progress.Message(line);
  if (was_interrupted) {
    return Status::Cancelled("interrupted; checkpoint saved, continue with: geomx train --resume " +
                             run->path().string());
  }
  return Status::Ok();
}

}  // namespace geomx::cli
