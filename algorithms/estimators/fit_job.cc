#include "algorithms/estimators/fit_job.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "algorithms/estimators/ps_collective.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<data::TableOptions> TableOptionsOf(const EstimatorJob& job, data::TableTask task) {
  data::TableOptions o;
  o.task = task;
  if (!data::ParseScaleKind(job.data.scale, &o.scale)) {
    return Status::InvalidArgument("data.scale: unknown scaling '" + job.data.scale +
                                   "' (allowed: none, standard, minmax, maxabs)");
  }
  o.max_train_rows = job.data.max_train_examples;
  o.seed = job.seed;
  return o;
}

data::Table ShardOf(const data::Table& table, int rank, int world, uint64_t seed) {
  if (world <= 1) return table;
  std::vector<std::vector<int64_t>> groups;
  if (table.qids.empty()) {
    for (int64_t i = 0; i < table.rows; ++i) groups.push_back({i});
  } else {
    std::unordered_map<int64_t, size_t> at;
    for (int64_t i = 0; i < table.rows; ++i) {
      auto [it, fresh] = at.emplace(table.qids[static_cast<size_t>(i)], groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    }
  }
  Rng rng(seed ^ 0x5a4d);
  for (size_t i = groups.size(); i > 1; --i) std::swap(groups[i - 1], groups[rng.Below(i)]);
  std::vector<int64_t> mine;
  for (size_t g = static_cast<size_t>(rank); g < groups.size(); g += static_cast<size_t>(world)) {
    mine.insert(mine.end(), groups[g].begin(), groups[g].end());
  }
  std::sort(mine.begin(), mine.end());
  return table.Select(mine);
}

Result<PreparedEstimatorJob> PrepareEstimatorJob(const EstimatorJob& job) {
  PreparedEstimatorJob p;
  GEOMX_ASSIGN_OR_RETURN(p.estimator, CreateEstimator(job.algorithm, job.params));
  p.def = EstimatorRegistry::Find(job.algorithm);
  std::vector<ParamProblem> problems;
  p.resolved = ResolveParams(p.def->params, job.params, &problems);
  GEOMX_ASSIGN_OR_RETURN(data::TableOptions options, TableOptionsOf(job, p.def->task));
  GEOMX_ASSIGN_OR_RETURN(p.splits, data::OpenTable(job.data, options));
  GEOMX_ASSIGN_OR_RETURN(p.ps_job,
                         EstimatorJobDescription(p.estimator->RowTables(p.splits.train.cols, p.splits.train.num_classes)));
  return p;
}

Result<EstimatorOutcome> RunEstimatorJob(const EstimatorJob& job, FitObserver* observer,
                                         const std::atomic<bool>* interrupted, Collective* collective) {
  GEOMX_ASSIGN_OR_RETURN(PreparedEstimatorJob prepared, PrepareEstimatorJob(job));
  return RunEstimatorJob(job, std::move(prepared), observer, interrupted, collective);
}

Result<EstimatorOutcome> RunEstimatorJob(const EstimatorJob& job, PreparedEstimatorJob prepared, FitObserver* observer,
                                         const std::atomic<bool>* interrupted, Collective* collective) {
  const EstimatorDef* def = prepared.def;
  std::unique_ptr<Estimator> estimator = std::move(prepared.estimator);
  const ParamValues& resolved = prepared.resolved;
  data::TableSplits& splits = prepared.splits;

  EstimatorOutcome out;
  FitContext context;
  context.threads = std::max(1, job.threads);
  context.seed = job.seed;
  context.observer = observer;
  context.eval = &splits.test;
  context.collective = collective;
  context.interrupted = interrupted;
  data::Table train = collective != nullptr
                          ? ShardOf(splits.train, collective->rank(), collective->world(), job.seed)
                          : std::move(splits.train);
  out.train_rows = train.rows;
  out.test_rows = splits.test.rows;
  const auto t0 = std::chrono::steady_clock::now();
  GEOMX_RETURN_IF_ERROR(estimator->Fit(train, context));
  out.fit_seconds = SecondsSince(t0);
  const auto t1 = std::chrono::steady_clock::now();
  GEOMX_ASSIGN_OR_RETURN(Prediction prediction,
                         collective != nullptr ? estimator->PredictAcross(splits.test, context.threads, collective)
                                               : estimator->Predict(splits.test, context.threads));
  out.predict_seconds = SecondsSince(t1);
  out.test = EvaluateTask(def->task, splits.test, prediction);
  for (Metric& m : estimator->ModelMetrics(splits.test, prediction)) out.test.push_back(std::move(m));

  FittedModel& m = out.model;
  m.algorithm = job.algorithm;
  m.params = resolved.texts();
  m.task = def->task;
  m.num_features = train.cols;
  m.num_classes = train.num_classes;
  m.class_names = train.class_names;
  m.scaler = std::move(splits.scaler);
  m.data_format = job.data.name;
  m.estimator = std::move(estimator);
  return out;
}

}  // namespace geomx::algorithms
