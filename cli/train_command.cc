#include "cli/train_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "cli/json_writer.h"
#include "cli/local_topology.h"
#include "cli/progress.h"
#include "cli/recipe.h"
#include "cli/run_dir.h"
#include "cli/setup.h"
#include "cli/trainer.h"
#include "comm/traffic.h"
#include "datasets/loader.h"
#include "nn/checkpoint.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {
namespace fs = std::filesystem;

namespace {

uint64_t PeakRssBytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

// Reads a number field of a flat JSON object written by JsonObject ("key": value). nullopt when absent/null.
std::optional<double> JsonNumber(const std::string& json, const std::string& key) {
  const std::string needle = JsonEscape(key) + ": ";
  const size_t pos = json.find(needle);
  if (pos == std::string::npos) return std::nullopt;
  const char* start = json.c_str() + pos + needle.size();
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start) return std::nullopt;
  return v;
}

std::string StateToJson(const TrainState& s) {
  JsonObject j;
  j.Add("iteration", s.iteration)
      .Add("epoch", s.epoch)
      .Add("epoch_iteration", s.epoch_iteration)
      .Add("elapsed_s", s.elapsed_s)
      .Add("train_seconds", s.train_seconds)
      .Add("samples", s.samples)
      .Add("best_accuracy", s.best_accuracy)
      .Add("final_accuracy", s.final_accuracy)
      .Add("final_test_loss", s.final_test_loss)
      .Add("time_to_target_s", s.time_to_target_s);
  return j.str();
}

TrainState StateFromJson(const std::string& json) {
  TrainState s;
  auto get = [&](const char* k, double def) { return JsonNumber(json, k).value_or(def); };
  s.iteration = static_cast<int64_t>(get("iteration", 0));
  s.epoch = static_cast<int>(get("epoch", 0));
  s.epoch_iteration = static_cast<int64_t>(get("epoch_iteration", 0));
  s.elapsed_s = get("elapsed_s", 0);
  s.train_seconds = get("train_seconds", 0);
  s.samples = static_cast<int64_t>(get("samples", 0));
  s.best_accuracy = get("best_accuracy", -1);
  s.final_accuracy = get("final_accuracy", -1);
  s.final_test_loss = get("final_test_loss", -1);
  s.time_to_target_s = get("time_to_target_s", -1);
  return s;
}

// Connects the trainer to the terminal and the run folder.
class RunListener final : public TrainerListener {
 public:
  RunListener(RunDir* run, Progress* progress, nn::Module* model, nn::Optimizer* opt, std::string model_name,
              const comm::TrafficCounters* traffic)
      : run_(run), progress_(progress), model_(model), opt_(opt), model_name_(std::move(model_name)),
        traffic_(traffic) {}

  void OnIteration(const ProgressInfo& p) override { progress_->Update(p); }

  Status OnEvaluation(const MetricsRow& row_in, const TrainState&) override {
    MetricsRow row = row_in;
    const comm::TrafficSnapshot t = traffic_->Snapshot();
    row.lan_bytes = t.lan_bytes();
    row.wan_bytes = t.wan_bytes();
    char line[256];
    std::snprintf(line, sizeof(line),
                  "eval  epoch %d  iter %lld  train loss %.4f  train acc %.4f  test loss %.4f  test acc %.4f%s",
                  row.epoch, static_cast<long long>(row.iteration), row.loss, row.train_accuracy, row.test_loss,
                  row.test_accuracy, row.test_examples > 0 ? "" : " (no test data)");
    progress_->Message(line);
    return run_->AppendMetrics(row);
  }

  Status OnCheckpoint(const TrainState& state) override {
    nn::CheckpointMeta meta;
    meta.iteration = state.iteration;
    meta.epoch = state.epoch;
    meta.optimizer_step = opt_->step();
    meta.model_name = model_name_;
    meta.extra_json = StateToJson(state);
    const fs::path path = run_->CheckpointPath(state.iteration);
    GEOMX_RETURN_IF_ERROR(nn::SaveCheckpoint(path, *model_, opt_, meta));
    return run_->CommitCheckpoint(path);
  }

 private:
  RunDir* run_;
  Progress* progress_;
  nn::Module* model_;
  nn::Optimizer* opt_;
  std::string model_name_;
  const comm::TrafficCounters* traffic_;
};

std::string SummaryJson(const char* status, const std::string& error, const Recipe& recipe, const RunSetup& setup,
                        int64_t num_params, const TrainState& s, const RunDir& run,
                        const comm::TrafficSnapshot& traffic) {
  auto opt_or_null = [](double v) { return v >= 0 ? std::optional<double>(v) : std::nullopt; };
  JsonObject traffic_json;
  traffic_json.Add("wan_bytes", traffic.wan_bytes())
      .Add("lan_bytes", traffic.lan_bytes())
      .Add("wan_bytes_sent", traffic.wan_bytes_sent)
      .Add("wan_bytes_received", traffic.wan_bytes_received)
      .Add("lan_bytes_sent", traffic.lan_bytes_sent)
      .Add("lan_bytes_received", traffic.lan_bytes_received)
      .Add("wan_messages", traffic.wan_messages)
      .Add("lan_messages", traffic.lan_messages);
  JsonObject j;
  j.Add("status", status);
  if (!error.empty()) j.Add("error", error);
  j.Add("name", recipe.name)
      .Add("model", recipe.model.name)
      .Add("parameters", num_params)
      .Add("dataset", recipe.data.name)
      .Add("device", setup.device.ToString())
      .Add("threads", recipe.threads)
      .Add("iterations", s.iteration)
      .Add("epochs", s.epoch)
      .Add("samples", s.samples)
      .Add("wall_seconds", s.elapsed_s)
      .Add("train_seconds", s.train_seconds)
      .Add("final_test_accuracy", opt_or_null(s.final_accuracy))
      .Add("final_test_loss", opt_or_null(s.final_test_loss))
      .Add("best_test_accuracy", opt_or_null(s.best_accuracy))
      .Add("target_accuracy", static_cast<double>(recipe.training.target_accuracy))
      .Add("time_to_target_seconds", opt_or_null(s.time_to_target_s))
      .Add("samples_per_second", s.train_seconds > 0 ? s.samples / s.train_seconds : 0.0)
      .Add("traffic", traffic_json)
      .Add("peak_rss_bytes", PeakRssBytes())
      .Add("run_dir", run.path().string());
  return j.str();
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
}

}  // namespace

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
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));
  nn::Module& model = *setup.model;
  auto opt_or = nn::CreateOptimizer(recipe.optimizer);
  if (!opt_or.ok()) return opt_or.status().WithContext("optimizer");
  std::unique_ptr<nn::Optimizer> optimizer = std::move(opt_or).value();

  if (flags.dry_run) {
    PrintPlan(recipe, setup, model);
    return recipe.has_topology ? PrintLocalTopologyPlan(flags, recipe) : Status::Ok();
  }
  if (recipe.has_topology) {  // until the roles run: RunLocalTopology (cli/local_topology.h) takes over here
    return Status::Unimplemented("training with a topology (parameter-server roles) is being integrated; "
                                 "`geomx train " + recipe.source + " --dry-run` shows the process plan");
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
  data::LoaderOptions lo;
  lo.batch_size = recipe.data.batch_size;
  lo.shuffle = recipe.data.shuffle;
  lo.augment = recipe.data.augment;
  lo.prefetch = recipe.data.prefetch;
  lo.seed = recipe.seed;
  lo.partition = recipe.data.partition;
  lo.dirichlet_alpha = recipe.data.dirichlet_alpha;
  data::DataLoader loader(setup.data.train, lo);

  comm::TrafficCounters traffic;  // single process: nothing crosses a link, so these stay zero
  Progress progress(stdout, isatty(STDOUT_FILENO) == 1, recipe.training.log_every);
  RunListener listener(&*run, &progress, &model, optimizer.get(), recipe.model.name, &traffic);
  TrainerOptions to;
  to.training = recipe.training;
  to.schedule = recipe.lr_schedule;
  to.base_lr = recipe.optimizer.lr;
  to.device = setup.device;
  Trainer trainer(to, &model, optimizer.get(), &loader, setup.data.test.get(), &listener, interrupted);

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
                StopReasonName(*reason), static_cast<long long>(state.iteration), state.epoch,
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
