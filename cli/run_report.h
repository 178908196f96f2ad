// What a training run reports into its run folder: the listener that prints evaluations and writes metrics and
// checkpoints, the checkpointed TrainState (as JSON in the checkpoint's extra field), and summary.json.
// Shared by single-process training (train_command.cc) and the evaluating worker of a distributed run (cluster.cc).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "algorithms/train/trainer.h"
#include "cli/progress.h"
#include "cli/recipe.h"
#include "cli/run_dir.h"
#include "cli/setup.h"
#include "comm/traffic.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {

using train::StopReason;
using train::TrainState;

uint64_t PeakRssBytes();

// TrainState <-> the JSON object stored in a checkpoint's extra field.
std::string StateToJson(const TrainState& s);
TrainState StateFromJson(const std::string& json);

// Where the traffic counters in metrics rows and the summary come from: this process's counters, or (a
// distributed run) the sum of every process's published counters.
using TrafficSource = std::function<comm::TrafficSnapshot()>;

// Traffic files: every process of a distributed run publishes its counters as <run>/traffic/<process>.json
// (atomically, periodically and at exit); ReadTrafficDir sums all of them.
std::string TrafficJson(const comm::TrafficSnapshot& t);
Status WriteTrafficFile(const std::filesystem::path& path, const comm::TrafficSnapshot& t);
comm::TrafficSnapshot ReadTrafficDir(const std::filesystem::path& dir);

// Connects a Trainer to the terminal and the run folder: progress lines, metrics rows (with the traffic
// counters), checkpoints. All pointers borrowed. Not thread-safe (the trainer's thread).
class RunListener final : public train::TrainerListener {
 public:
  RunListener(RunDir* run, Progress* progress, nn::Module* model, nn::Optimizer* opt, std::string model_name,
              TrafficSource traffic);
  void OnIteration(const ProgressInfo& p) override;
  Status OnEvaluation(const MetricsRow& row, const TrainState& state) override;
  Status OnCheckpoint(const TrainState& state) override;

 private:
  RunDir* run_;
  Progress* progress_;
  nn::Module* model_;
  nn::Optimizer* opt_;
  std::string model_name_;
  TrafficSource traffic_;
};

// summary.json (docs/cli.md): status is "completed", "interrupted" or "failed" (with `error`).
std::string SummaryJson(const char* status, const std::string& error, const Recipe& recipe, const RunSetup& setup,
                        int64_t num_params, const TrainState& s, const RunDir& run,
                        const comm::TrafficSnapshot& traffic);

// summary.json of a whole topology run (the one-host launcher), from what the evaluating worker wrote (`written`;
// empty or foreign when it died before writing): `status` and `error` become the job's ending (a job that failed
// after the worker wrote "completed" is "failed", with the cause) and `traffic` the whole job's; the worker's other
// fields are kept. Without a worker summary: status, error, name, run_dir and traffic only.
std::string TopologySummaryJson(const std::string& written, const char* status, const std::string& error,
                                const Recipe& recipe, const RunDir& run, const comm::TrafficSnapshot& traffic);

}  // namespace geomx::cli
