// Trainer: the training loop of one process. One Step() = forward, loss, backward, optimizer update, stats.
// Evaluation every `eval_every` iterations and at every epoch end; checkpoints at epoch ends, every
// `checkpoint_every` iterations and on interruption (through the listener, which owns the run folder). Before a
// checkpoint and at the end of the run the ParameterUpdate is flushed (parameter_update.h), so what a listener
// reads is the complete latest round.
// Library-style: it never prints; progress and results go to the TrainerListener.
// Not thread-safe: one thread drives a Trainer. `interrupted` may be set from a signal handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/train/parameter_update.h"
#include "algorithms/train/trainer_events.h"
#include "algorithms/train/training_config.h"
#include "datasets/loader.h"
#include "engine/base/status.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace geomx::train {

// Everything a checkpoint must restore to continue a run exactly where it stopped.
struct TrainState {
  int64_t iteration = 0;        // completed iterations in total
  int epoch = 0;                // completed epochs
  int64_t epoch_iteration = 0;  // completed iterations inside the current (epoch+1-th) epoch
  double elapsed_s = 0;         // wall time spent in earlier sessions of this run (resume)
  double train_seconds = 0;     // time spent in training steps only (throughput)
  int64_t samples = 0;          // training samples processed
  double best_accuracy = -1;    // < 0: no evaluation yet
  double final_accuracy = -1;   // accuracy of the last full-test-set evaluation
  double final_test_loss = -1;
  double time_to_target_s = -1; // < 0: target not reached (or none)
};

enum class StopReason { kCompleted, kTargetReached, kMaxIterations, kInterrupted };
const char* StopReasonName(StopReason r);

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t examples = 0;
};

// Task-aware scoring (data.score_within_classes, docs/algorithms.md "fine-tune"): the outputs a prediction is
// chosen among. Empty = every output of the model. With classes {c1, c2, ...} a prediction is the most likely of
// those outputs (the smallest id on a tie), the others ignored: how a model with a wider head is scored on the task
// of those classes alone. Ids outside [0, outputs) are ignored; when none is inside, every output is scored.
// The recipe's choice: data.classes when data.score_within_classes is set, else empty.
std::vector<int64_t> ScoredClasses(const data::DataConfig& data);

// Class probabilities (softmax of the logits) of `model` in eval mode for every example of `input`: rows x
// *classes floats, row-major. For `geomx predict`. With `scored_classes` the softmax is over those outputs only
// and every other output's probability is 0.
std::vector<float> PredictProbabilities(nn::Module& model, const data::Dataset& input, Device device,
                                        int64_t batch_size, int64_t* classes,
                                        const std::vector<int64_t>& scored_classes = {});

// Evaluates `model` (switched to eval mode and back) on the first `limit` examples of `test` (0 = all). With
// `scored_classes` (ScoredClasses) a prediction is the most likely of those outputs and the loss is the
// cross-entropy of the softmax over them; an example whose label is not among them counts as wrong, its loss taken
// over those outputs and its label's.
EvalResult Evaluate(nn::Module& model, const data::Dataset& test, Device device, int64_t batch_size,
                    int64_t limit, const std::vector<int64_t>& scored_classes = {});

// One training iteration (forward, softmax cross-entropy, backward, parameter update) on device tensors.
// Returns the loss and the number of correct top-1 predictions. Used by Trainer and by `geomx bench kernels`, so
// the benchmark times exactly what training runs.
struct StepStats {
  double loss = 0;
  int64_t correct = 0;
  int64_t examples = 0;
};
// clip_norm > 0: the gradients are clipped to that global L2 norm (grad_clip.h) before the update.
Result<StepStats> TrainStep(nn::Module& model, ParameterUpdate& update, const std::vector<nn::Parameter*>& params,
                            const Tensor& x, const Tensor& y, int64_t round, float clip_norm = 0.0f);

class TrainerListener {
 public:
  virtual ~TrainerListener() = default;
  virtual void OnIteration(const ProgressInfo&) {}
  virtual Status OnEvaluation(const MetricsRow&, const TrainState&) { return Status::Ok(); }
  virtual Status OnCheckpoint(const TrainState&) { return Status::Ok(); }
};

struct TrainerOptions {
  TrainingConfig training;
  nn::LrScheduleConfig schedule;
  float base_lr = 0.001f;
  float clip_norm = 0.0f;  // optimizer.clip_norm: > 0 clips the global gradient norm before each update
  Device device = Device::Cpu();
  int64_t eval_batch_size = 500;
  // Iterations per epoch; 0 = every batch of the loader. Distributed FSA workers all use the same count, so
  // every worker takes part in every round.
  int64_t iterations_per_epoch = 0;
  // False on workers that do not evaluate (only one worker of a distributed run evaluates and reports).
  bool evaluate = true;
  // The outputs test predictions are chosen among (ScoredClasses; empty = all). Training itself is unchanged.
  std::vector<int64_t> scored_classes;
  // training.eval_async: the evaluations every eval_every iterations run on a copy of the model (parameters and
  // buffers, taken after the ParameterUpdate is flushed) on a thread of their own while training goes on; the
  // row keeps the time, iteration and training statistics of the copy and is reported at the first step after
  // its result is ready (before the next evaluation starts and before the run ends, at the latest);
  // stop_at_target stops there. Epoch-end and final evaluations stay in line. Needs this factory of a model of
  // the same architecture on `device`, and a CPU device (in line otherwise).
  std::function<std::unique_ptr<nn::Module>()> make_eval_model;
};

class Trainer {
 public:
  // All pointers are borrowed and must outlive the Trainer; `listener`, `interrupted` and `update` may be null
  // (null update: LocalUpdate over `optimizer`, whose learning rate follows the schedule either way).
  Trainer(TrainerOptions options, nn::Module* model, nn::Optimizer* optimizer, data::DataLoader* train_loader,
          const data::Dataset* test, TrainerListener* listener, const std::atomic<bool>* interrupted,
          ParameterUpdate* update = nullptr);

  // Trains from `*state` (default-constructed for a fresh run) and updates it. Errors from the listener (disk
  // full while checkpointing, ...) stop training and are returned.
  Result<StopReason> Run(TrainState* state);

  // One iteration on `batch` (moved to the device): TrainStep.
  Result<StepStats> Step(const data::Batch& batch, int64_t round);

  int64_t total_iterations() const;
  int64_t iterations_per_epoch() const;

 private:
  Status EvaluateAndReport(TrainState* state, double now_s, bool full, int epoch_1based);
  // The row of an evaluation at the current iteration, without its test figures; starts a new statistics window.
  MetricsRow RowNow(const TrainState& state, double now_s, int epoch_1based);
  // Fills the test figures of `row` from `ev`, updates `state` and tells the listener.
  Status Report(MetricsRow row, const EvalResult& ev, bool full, TrainState* state);
  // The asynchronous evaluation in flight, reported when it is ready (or waited for with `wait`).
  Status CollectEvaluation(TrainState* state, bool wait);
  // Starts an asynchronous evaluation of a copy of the model for `row`; false when it cannot (then evaluate in
  // line).
  Result<bool> StartAsyncEvaluation(const MetricsRow& row);
  Status RunEpoch(int epoch, TrainState* state, const std::function<double()>& now_s, bool* stop, StopReason* reason,
                  bool* evaluated);
  void Record(const StepStats& step, double step_s, int epoch, TrainState* state);
  Status Checkpoint(TrainState* state, double now_s);

  TrainerOptions options_;
  nn::Module* model_;
  nn::Optimizer* optimizer_;
  LocalUpdate local_update_;
  ParameterUpdate* update_;
  data::DataLoader* loader_;
  const data::Dataset* test_;
  TrainerListener* listener_;
  const std::atomic<bool>* interrupted_;
  std::vector<nn::Parameter*> params_;

  // Running training statistics since the previous evaluation row.
  double window_loss_ = 0;
  int64_t window_correct_ = 0, window_examples_ = 0, window_steps_ = 0;
  double window_train_s_ = 0;

  // training.eval_async: the copy the evaluation thread reads, and the evaluation in flight (declared after the
  // copy, so destroying the Trainer waits for the thread before the copy goes).
  std::unique_ptr<nn::Module> eval_model_;
  struct PendingEvaluation {
    MetricsRow row;
    std::future<EvalResult> result;
  };
  std::optional<PendingEvaluation> pending_eval_;
  int64_t reports_ = 0;  // evaluations reported so far (stop_at_target looks after each)
};

}  // namespace geomx::train
