// The classical-algorithm side of the CLI (recipes with an `algorithm` section; docs/algorithms.md):
// `geomx train` fits the estimator and writes the run folder (recipe.yaml, metrics.jsonl, summary.json, model.gxm),
// `geomx eval RUN` re-evaluates the saved model on the recipe's test split, `geomx predict RUN INPUT --out FILE`
// writes one prediction per input row. The work itself is algorithms/estimators/fit_job.h.
#pragma once

#include <atomic>
#include <string>

#include "cli/cluster.h"
#include "cli/recipe.h"
#include "cli/train_command.h"
#include "engine/base/status.h"

namespace geomx::cli {

// `geomx train` for a recipe with an `algorithm` section and no topology: one process.
Status RunAlgorithmTraining(const TrainFlags& flags, const Recipe& recipe, const std::atomic<bool>* interrupted);

// The master worker and the workers of an algorithm recipe with a topology (cli/cluster.cc dispatches here): the
// master sends the estimator job's keys; every worker fits on its shard through the parameter server
// (algorithms/cluster/estimator_worker.h); worker 0 of the first data centre writes the run folder.
Status RunAlgorithmMasterWorker(const Recipe& recipe, const ClusterEnv& env);
Status RunAlgorithmWorker(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env,
                          const std::atomic<bool>* interrupted);

// `geomx eval RUN` of an algorithm run: loads RUN/model.gxm and evaluates it on the test split of `recipe`.
Status EvalAlgorithmRun(const std::string& run_dir, const Recipe& recipe, bool json);

// `geomx predict RUN INPUT --out FILE`: RUN is a run folder (or a model.gxm file) of an algorithm run; INPUT a csv
// or libsvm file in the training data's layout. A neural run folder goes to RunNeuralPredict (cli/commands.h). Writes FILE atomically as CSV: a header, then per row the
// prediction (class name or id, value, score or cluster) and, where the model has them, the class probabilities.
Status RunPredictCommand(const std::string& run, const std::string& input, const std::string& out, int threads);

}  // namespace geomx::cli
