// One estimator job end to end, without a recipe: open the data as tables, fit (on one machine, or on this worker's
// shard with a Collective), predict the test split, evaluate. Used by `geomx train` for algorithm recipes, by the
// workers of a topology and by `geomx bench algos`.
#pragma once

#include <atomic>
#include <map>
#include <string>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/model_io.h"
#include "algorithms/ps/job.h"
#include "datasets/data_config.h"
#include "datasets/table.h"

namespace geomx::algorithms {

struct EstimatorJob {
  std::string algorithm;                      // registry name
  std::map<std::string, std::string> params;  // as given (validated here)
  data::DataConfig data;                      // what to read; data.scale / max_train_examples are applied
  int threads = 1;                            // >= 1
  uint64_t seed = 42;
};

struct EstimatorOutcome {
  FittedModel model;
  Metrics test;                 // EvaluateTask + ModelMetrics on the test split (rank 0 only when distributed)
  double fit_seconds = 0;       // Fit() alone (tables already in memory)
  double predict_seconds = 0;   // Predict() on the test split
  int64_t train_rows = 0;       // rows this process fitted on (its shard when distributed)
  int64_t test_rows = 0;
};

// The resolved TableOptions of a job (task from the estimator, scale and subsample from the data config).
// kInvalidArgument for an unknown data.scale.
Result<data::TableOptions> TableOptionsOf(const EstimatorJob& job, data::TableTask task);

// Worker `rank` of `world`'s share of `table`: a fixed-seed shuffle dealt round-robin (ranking tables: whole queries,
// so no query is split across data centres). world == 1 returns the table.
data::Table ShardOf(const data::Table& table, int rank, int world, uint64_t seed);

// A job with its data open and its estimator created: what a worker knows before it joins the parameter server.
struct PreparedEstimatorJob {
  const EstimatorDef* def = nullptr;
  std::unique_ptr<Estimator> estimator;
  ParamValues resolved;
  data::TableSplits splits;
  // The parameter-server description of the job: the estimator job schema with the estimator's row tables for
  // this training table, and their rule (ps_collective.h: EstimatorJobDescription).
  ps::JobDescription ps_job;
};

// Creates the estimator and opens the data. Errors: the parameters', the data's.
Result<PreparedEstimatorJob> PrepareEstimatorJob(const EstimatorJob& job);

// Runs the job. With `collective` set, this process fits on its shard (ShardOf by collective->rank()) and every
// worker ends with the same model; the test split is evaluated on every worker (all hold the same model).
// `observer` may be null. Errors: the data's, the parameters', the estimator's; kCancelled when interrupted.
Result<EstimatorOutcome> RunEstimatorJob(const EstimatorJob& job, FitObserver* observer,
                                         const std::atomic<bool>* interrupted, Collective* collective = nullptr);
// The same on a prepared job (consumed).
Result<EstimatorOutcome> RunEstimatorJob(const EstimatorJob& job, PreparedEstimatorJob prepared, FitObserver* observer,
                                         const std::atomic<bool>* interrupted, Collective* collective);

}  // namespace geomx::algorithms
