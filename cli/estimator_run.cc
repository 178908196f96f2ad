#include "cli/estimator_run.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "algorithms/estimators/fit_job.h"
#include "algorithms/estimators/model_io.h"
#include "algorithms/cluster/estimator_worker.h"
#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/tiers.h"
#include "algorithms/estimators/ps_collective.h"
#include "cli/commands.h"
#include "cli/json_writer.h"
#include "cli/run_report.h"
#include "cli/run_dir.h"
#include "cli/setup.h"

namespace geomx::cli {
namespace fs = std::filesystem;

namespace {

int ThreadsOf(const Recipe& recipe) {
  if (recipe.threads > 0) return recipe.threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

algorithms::EstimatorJob JobOf(const Recipe& recipe) {
  algorithms::EstimatorJob job;
  job.algorithm = recipe.algorithm.name;
  job.params = recipe.algorithm.params;
  job.data = recipe.data;
  job.threads = ThreadsOf(recipe);
  job.seed = recipe.seed;
  return job;
}

JsonObject MetricsJson(const algorithms::Metrics& metrics) {
  JsonObject j;
  for (const algorithms::Metric& m : metrics) j.Add(m.name, m.value);
  return j;
}

std::string MetricsText(const algorithms::Metrics& metrics) {
  std::string out;
  for (const algorithms::Metric& m : metrics) {
    char buf[96];
    // Counts (trees, support vectors, rows) print as integers, scores with four decimals.
    const bool whole = m.value == std::floor(m.value) && std::fabs(m.value) < 1e15;
    std::snprintf(buf, sizeof(buf), whole ? "%s%s %.0f" : "%s%s %.4f", out.empty() ? "" : ", ", m.name.c_str(),
                  m.value);
    out += buf;
  }
  return out;
}

// Progress of a fit: one metrics.jsonl line per step, and on stdout the first step and then at most one line a
// second (a linear SVM reports every pass of every class).
class RunObserver final : public algorithms::FitObserver {
 public:
  RunObserver(const fs::path& file, bool echo) : out_(file, std::ios::app), dir_(file.parent_path()), echo_(echo) {}
  void OnStep(int64_t step, const algorithms::Metrics& metrics) override {
    JsonObject j;
    j.Add("step", step);
    for (const algorithms::Metric& m : metrics) j.Add(m.name, m.value);
    out_ << j.str() << "\n";
    out_.flush();
    const auto now = std::chrono::steady_clock::now();
    if (echo_ && (!printed_ || now - last_print_ >= std::chrono::seconds(1))) {
      std::printf("  step %lld: %s\n", static_cast<long long>(step), MetricsText(metrics).c_str());
      std::fflush(stdout);
      printed_ = true;
      last_print_ = now;
    }
  }
  // Files written while fitting (the gan's sample grids) go beside metrics.jsonl; failing to write one is reported
  // and does not stop the fit.
  void OnArtefact(const algorithms::Artefact& a) override {
    const Status written = WriteFileAtomically(dir_ / a.name, a.contents);
    if (!written.ok()) std::fprintf(stderr, "geomx: %s\n", written.ToString().c_str());
  }

 private:
  std::ofstream out_;
  fs::path dir_;
  bool echo_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point last_print_;
};

// Path of the model file given a run folder or the file itself.
fs::path ModelPathOf(const std::string& run) {
  std::error_code ec;
  if (fs::is_directory(run, ec)) return fs::path(run) / algorithms::kModelFileName;
  return fs::path(run);
}

// Writes the model (on success) and summary.json of a fit, and reports it.
Status FinishRun(RunDir& run, const Recipe& recipe, const algorithms::EstimatorJob& job,
                 const algorithms::EstimatorDef& def, const Result<algorithms::EstimatorOutcome>& outcome,
                 const comm::TrafficSnapshot& traffic) {
  JsonObject summary;
  summary.Add("status", outcome.ok() ? "completed"
                        : outcome.status().code() == StatusCode::kCancelled ? "interrupted"
                                                                             : "failed");
  summary.Add("algorithm", job.algorithm).Add("task", data::TableTaskName(def.task)).Add("data", recipe.data.name);
  JsonObject params;
  for (const auto& [k, v] : recipe.algorithm.params) params.Add(k, v);
  summary.Add("params", params).Add("threads", job.threads);
  summary.Add("workers", recipe.has_topology ? recipe.topology.total_workers() : 1);
  if (!outcome.ok()) {
    summary.Add("error", outcome.status().ToString()).AddRaw("traffic", TrafficJson(traffic));
    Status ws = run.WriteSummary(summary.str());
    (void)ws;  // the fit's error is the one to report
    return outcome.status();
  }
  const algorithms::EstimatorOutcome& o = *outcome;
  GEOMX_RETURN_IF_ERROR(algorithms::SaveFittedModel((run.path() / algorithms::kModelFileName).string(), o.model));
  std::vector<std::string> files;
  for (const algorithms::Artefact& a : o.model.estimator->Artefacts()) {
    GEOMX_RETURN_IF_ERROR(WriteFileAtomically(run.path() / a.name, a.contents));
    files.push_back(a.name);
  }
  summary.Add("train_examples", o.train_rows)
      .Add("test_examples", o.test_rows)
      .Add("features", o.model.num_features)
      .Add("fit_seconds", o.fit_seconds)
      .Add("predict_seconds", o.predict_seconds)
      .Add("test", MetricsJson(o.test))
      .Add("model", algorithms::kModelFileName)
      .AddRaw("files", [&] {
        std::string a = "[";
        for (size_t i = 0; i < files.size(); ++i) a += (i ? ", " : "") + JsonEscape(files[i]);
        return a + "]";
      }())
      .AddRaw("traffic", TrafficJson(traffic));
  GEOMX_RETURN_IF_ERROR(run.WriteSummary(summary.str()));
  std::printf("geomx: completed %s in %.2f s (predict %.2f s): test %s; summary %s/summary.json\n",
              job.algorithm.c_str(), o.fit_seconds, o.predict_seconds, MetricsText(o.test).c_str(),
              run.path().c_str());
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

Status RunAlgorithmTraining(const TrainFlags& flags, const Recipe& recipe, const std::atomic<bool>* interrupted) {
  if (!flags.resume.empty()) {
    return Status::InvalidArgument("--resume: " + recipe.algorithm.name +
                                   " is a classical algorithm, fitted in one go; train it again instead");
  }
  const algorithms::EstimatorJob job = JobOf(recipe);
  const algorithms::EstimatorDef* def = algorithms::EstimatorRegistry::Find(job.algorithm);
  if (def == nullptr) return Status::NotFound("unknown algorithm '" + job.algorithm + "'");
  if (flags.dry_run) {
    std::printf("# resolved recipe\n%s\n# plan\nprocesses: 1 (single-process %s, %d threads)\nalgorithm: %s (%s, %s)\n"
                "data: %s (%s)\n",
                RecipeToYaml(recipe).c_str(), job.algorithm.c_str(), job.threads, def->title.c_str(),
                data::TableTaskName(def->task), def->distributed.c_str(), recipe.data.name.c_str(),
                recipe.data.path.c_str());
    return Status::Ok();
  }
  // Validate the data before creating the folder: the job opens it again (cheap next to the fit).
  const fs::path dir = flags.out.empty() ? RunDir::DefaultPath("runs", recipe.name) : fs::path(flags.out);
  {
    GEOMX_ASSIGN_OR_RETURN(data::TableOptions options, algorithms::TableOptionsOf(job, def->task));
    auto opened = data::OpenTable(job.data, options);
    if (!opened.ok()) return DataErrorInRecipeTerms(recipe, opened.status());
  }
  GEOMX_ASSIGN_OR_RETURN(RunDir run, RunDir::Create(dir, RecipeToYaml(recipe)));
  std::printf("geomx: fitting %s (%s) on %s with %d threads; run folder %s\n", job.algorithm.c_str(),
              def->title.c_str(), recipe.data.name.c_str(), job.threads, run.path().c_str());
  std::fflush(stdout);
  RunObserver observer(run.path() / "metrics.jsonl", /*echo=*/true);
  Result<algorithms::EstimatorOutcome> outcome = algorithms::RunEstimatorJob(job, &observer, interrupted);
  return FinishRun(run, recipe, job, *def, outcome, comm::TrafficSnapshot{});
}

Status RunAlgorithmMasterWorker(const Recipe& recipe, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  // The job's keys depend on the estimator and the data's shape (row tables): open the data like a worker does.
  Result<algorithms::PreparedEstimatorJob> prepared = algorithms::PrepareEstimatorJob(JobOf(recipe));
  if (!prepared.ok()) return DataErrorInRecipeTerms(recipe, prepared.status());
  return cluster::RunMasterWorker(c, prepared->ps_job, {}, env);
}

Status RunAlgorithmWorker(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env,
                          const std::atomic<bool>* interrupted) {
  GEOMX_ASSIGN_OR_RETURN(cluster::ClusterConfig c, ClusterConfigOf(recipe));
  GEOMX_ASSIGN_OR_RETURN(int dc_index, cluster::FindDataCentre(recipe.topology, party));
  const algorithms::EstimatorJob job = JobOf(recipe);
  const algorithms::EstimatorDef* def = algorithms::EstimatorRegistry::Find(job.algorithm);
  if (def == nullptr) return Status::NotFound("unknown algorithm '" + job.algorithm + "'");
  const bool evaluator = cluster::WorkerIndex(recipe.topology, dc_index, rank) == 0;
  std::optional<RunDir> run;
  std::unique_ptr<RunObserver> observer;
  if (evaluator && !env.out_dir.empty()) {
    GEOMX_ASSIGN_OR_RETURN(RunDir opened, RunDir::OpenOrCreateForWorker(env.out_dir, RecipeToYaml(recipe)));
    run.emplace(std::move(opened));
    observer = std::make_unique<RunObserver>(run->path() / "metrics.jsonl", /*echo=*/true);
  }
  Result<algorithms::EstimatorOutcome> outcome =
      cluster::RunEstimatorWorker(c, party, rank, job, env, observer.get(), interrupted);
  if (!outcome.ok()) outcome = DataErrorInRecipeTerms(recipe, outcome.status());
  if (!run) return outcome.ok() ? Status::Ok() : outcome.status();
  return FinishRun(*run, recipe, job, *def, outcome, ReadTrafficDir(run->path() / "traffic"));
}

Status EvalAlgorithmRun(const std::string& run_dir, const Recipe& recipe, bool json) {
  const fs::path model_path = ModelPathOf(run_dir);
  GEOMX_ASSIGN_OR_RETURN(algorithms::FittedModel model, algorithms::LoadFittedModel(model_path.string()));
  algorithms::EstimatorJob job = JobOf(recipe);
  job.data.scale = "none";  // the model's own scaler is applied below
  job.data.max_train_examples = 0;
  GEOMX_ASSIGN_OR_RETURN(data::TableOptions options, algorithms::TableOptionsOf(job, model.task));
  Result<data::TableSplits> opened = data::OpenTable(job.data, options);
  if (!opened.ok()) return DataErrorInRecipeTerms(recipe, opened.status());
  data::TableSplits& splits = *opened;
  if (splits.test.cols != model.num_features) {
    return Status::InvalidArgument(splits.test.source + ": " + std::to_string(splits.test.cols) +
                                   " features, the model was trained on " + std::to_string(model.num_features));
  }
  GEOMX_ASSIGN_OR_RETURN(algorithms::Prediction p, algorithms::PredictRaw(model, splits.test, job.threads));
  data::Table scaled = splits.test;
  GEOMX_RETURN_IF_ERROR(data::ApplyScaler(model.scaler, &scaled));
  algorithms::Metrics metrics = algorithms::EvaluateTask(model.task, splits.test, p);
  for (auto& m : model.estimator->ModelMetrics(scaled, p)) metrics.push_back(std::move(m));
  if (json) {
    JsonObject j;
    j.Add("model", model_path.string()).Add("algorithm", model.algorithm).Add("test_examples", splits.test.rows);
    j.Add("test", MetricsJson(metrics));
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("model %s (%s)\ntest %s  (%lld examples)\n", model_path.c_str(), model.algorithm.c_str(),
                MetricsText(metrics).c_str(), static_cast<long long>(splits.test.rows));
  }
  return Status::Ok();
}

Status RunPredictCommand(const std::string& run, const std::string& input, const std::string& out, int threads) {
  const fs::path model_path = ModelPathOf(run);
  std::error_code ec;
  if (!fs::exists(model_path, ec)) {
    std::error_code ec2;
    if (fs::exists(fs::path(run) / "recipe.yaml", ec2)) return RunNeuralPredict(run, input, out);
    return Status::NotFound(run + ": no model file (expected a run folder holding " +
                            std::string(algorithms::kModelFileName) + ", or the model file itself)");
  }
  GEOMX_ASSIGN_OR_RETURN(algorithms::FittedModel model, algorithms::LoadFittedModel(model_path.string()));
  // The layout of the input is the training data's (csv or libsvm), read with the run's recipe when there is one.
  data::DataConfig config;
  config.name = model.data_format;
  const fs::path recipe_path = fs::path(run) / "recipe.yaml";
  if (fs::exists(recipe_path, ec)) {
    GEOMX_ASSIGN_OR_RETURN(Recipe recipe, LoadRecipe(recipe_path.string()));
    config = recipe.data;
  }
  if (config.name == "ratings-synthetic") config.name = "ratings";  // mf: `user item [rating]` lines
  // image-trained: pixel rows as csv
  if (config.name != "csv" && config.name != "libsvm" && config.name != "ratings") config.name = "csv";
  GEOMX_ASSIGN_OR_RETURN(data::Table table,
                         data::ReadTableFile(input, config, model.task, model.num_features, model.class_names));
  GEOMX_ASSIGN_OR_RETURN(algorithms::Prediction p, algorithms::PredictRaw(model, std::move(table), threads));
  std::string text = model.task == data::TableTask::kClassification ? "prediction"
                     : model.task == data::TableTask::kClustering   ? "cluster"
                     : model.task == data::TableTask::kRanking      ? "score"
                     : model.task == data::TableTask::kControl      ? "return"
                                                                    : "value";
  for (int64_t c = 0; c < p.proba_columns; ++c) {
    text += ",p_" + (static_cast<size_t>(c) < model.class_names.size() ? model.class_names[static_cast<size_t>(c)]
                                                                       : std::to_string(c));
  }
  text += "\n";
  char buf[64];
  for (size_t i = 0; i < p.value.size(); ++i) {
    if (model.task == data::TableTask::kClassification) {
      const auto id = static_cast<size_t>(p.value[i]);
      text += id < model.class_names.size() ? model.class_names[id] : std::to_string(id);
    } else if (model.task == data::TableTask::kClustering) {
      text += std::to_string(static_cast<int64_t>(p.value[i]));
    } else {
      std::snprintf(buf, sizeof(buf), "%.9g", p.value[i]);
      text += buf;
    }
    for (int64_t c = 0; c < p.proba_columns; ++c) {
      std::snprintf(buf, sizeof(buf), ",%.6g", p.proba[i * static_cast<size_t>(p.proba_columns) + c]);
      text += buf;
    }
    text += "\n";
  }
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(out, text));
  std::printf("geomx: %zu predictions of %s written to %s\n", p.value.size(), model.algorithm.c_str(), out.c_str());
  return Status::Ok();
}

}  // namespace geomx::cli
