#include "algorithms/train/trainer.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "algorithms/train/grad_clip.h"
#include "algorithms/train/target.h"
#include "engine/autograd/functions.h"
#include "engine/ops.h"

namespace geomx::train {
namespace {
using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int64_t CountCorrect(const Tensor& logits, const Tensor& labels) {
  const Tensor pred = ops::ArgMax(logits).To(Device::Cpu());
  const Tensor y = labels.To(Device::Cpu());
  const int64_t* p = pred.data<int64_t>();
  const int64_t* t = y.data<int64_t>();
  int64_t correct = 0;
  for (int64_t i = 0; i < y.numel(); ++i) correct += (p[i] == t[i]);
  return correct;
}

// The ids of `scored` that are outputs of a k-wide head, sorted, without repeats; none: every output.
std::vector<int64_t> OutputsAmong(const std::vector<int64_t>& scored, int64_t k) {
  std::vector<int64_t> outs;
  for (int64_t c : scored) {
    if (c >= 0 && c < k) outs.push_back(c);
  }
  std::sort(outs.begin(), outs.end());
  outs.erase(std::unique(outs.begin(), outs.end()), outs.end());
  if (outs.empty()) {
    outs.resize(static_cast<size_t>(k));
    std::iota(outs.begin(), outs.end(), int64_t{0});
  }
  return outs;
}

// One example's logits `z` (k outputs) scored among `outs` (non-empty, sorted): adds 1 to *correct when the most
// likely of them (the first on a tie) is `label`, and to *loss the cross-entropy of the softmax over them (and
// over the label's output when it is not among them).
void ScoreAmong(const float* z, int64_t k, const std::vector<int64_t>& outs, int64_t label, double* loss,
                int64_t* correct) {
  int64_t best = outs.front();
  for (int64_t c : outs) {
    if (z[c] > z[best]) best = c;
  }
  if (label < 0 || label >= k) return;  // not an output of the model: wrong
  *correct += best == label;
  const bool listed = std::binary_search(outs.begin(), outs.end(), label);
  const double top = listed ? z[best] : std::max(z[best], z[label]);
  double sum = listed ? 0.0 : std::exp(static_cast<double>(z[label]) - top);
  for (int64_t c : outs) sum += std::exp(static_cast<double>(z[c]) - top);
  *loss += top + std::log(sum) - static_cast<double>(z[label]);
}
}  // namespace

std::vector<int64_t> ScoredClasses(const data::DataConfig& data) {
  return data.score_within_classes ? data.classes : std::vector<int64_t>{};
}

const char* StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kCompleted: return "completed";
    case StopReason::kTargetReached: return "target_reached";
    case StopReason::kMaxIterations: return "max_iterations";
    case StopReason::kInterrupted: return "interrupted";
  }
  return "?";
}

EvalResult Evaluate(nn::Module& model, const data::Dataset& test, Device device, int64_t batch_size,
                    int64_t limit, const std::vector<int64_t>& scored_classes) {
  const bool was_training = model.training();
  model.Eval();
  autograd::NoGradGuard no_grad;
  const int64_t n = limit > 0 ? std::min(limit, test.size()) : test.size();
  const auto& shape = test.info().example_shape;
  int64_t row = 1;
  for (int64_t d : shape) row *= d;
  EvalResult r;
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    const int64_t b = std::min(batch_size, n - begin);
    std::vector<int64_t> dims = {b};
    dims.insert(dims.end(), shape.begin(), shape.end());
    Tensor x = Tensor::Empty(Shape(dims));
    Tensor y = Tensor::Empty(Shape({b}), DType::kI64);
    float* xp = x.data<float>();
    int64_t* yp = y.data<int64_t>();
    for (int64_t i = 0; i < b; ++i) {
      test.Get(begin + i, xp + i * row, nullptr);
      yp[i] = test.Label(begin + i);
    }
    autograd::Variable logits = model.Forward(autograd::Variable(x.To(device)));
    if (scored_classes.empty()) {
      const Tensor y_device = y.To(device);
      auto ce = ops::SoftmaxCrossEntropy(logits.data(), y_device);
      loss_sum += ops::Sum(ce.loss).item();
      correct += CountCorrect(logits.data(), y_device);
      continue;
    }
    const std::vector<float> z = logits.data().ToFloatVector();
    const int64_t k = static_cast<int64_t>(z.size()) / b;
    const std::vector<int64_t> outs = OutputsAmong(scored_classes, k);
    if (outs.empty()) continue;  // a model without outputs: nothing is right
    for (int64_t i = 0; i < b; ++i) ScoreAmong(z.data() + i * k, k, outs, yp[i], &loss_sum, &correct);
  }
  r.examples = n;
  r.loss = n > 0 ? loss_sum / n : 0;
  r.accuracy = n > 0 ? static_cast<double>(correct) / n : 0;
  model.Train(was_training);
  return r;
}

std::vector<float> PredictProbabilities(nn::Module& model, const data::Dataset& input, Device device,
                                        int64_t batch_size, int64_t* classes,
                                        const std::vector<int64_t>& scored_classes) {
  const bool was_training = model.training();
  model.Eval();
  autograd::NoGradGuard no_grad;
  const auto& shape = input.info().example_shape;
  int64_t row = 1;
  for (int64_t d : shape) row *= d;
  std::vector<float> out;
  *classes = 0;
  for (int64_t begin = 0; begin < input.size(); begin += batch_size) {
    const int64_t b = std::min(batch_size, input.size() - begin);
    std::vector<int64_t> dims = {b};
    dims.insert(dims.end(), shape.begin(), shape.end());
    Tensor x = Tensor::Empty(Shape(dims));
    float* xp = x.data<float>();
    for (int64_t i = 0; i < b; ++i) input.Get(begin + i, xp + i * row, nullptr);
    const std::vector<float> logits = model.Forward(autograd::Variable(x.To(device))).data().ToFloatVector();
    const int64_t k = static_cast<int64_t>(logits.size()) / b;
    *classes = k;
    const std::vector<int64_t> outs = OutputsAmong(scored_classes, k);  // every output when none is scored
    if (outs.empty()) continue;
    std::vector<char> scored(static_cast<size_t>(k), 0);
    for (int64_t c : outs) scored[static_cast<size_t>(c)] = 1;
    for (int64_t i = 0; i < b; ++i) {
      const float* z = logits.data() + i * k;
      float top = z[outs.front()];
      for (int64_t c : outs) top = std::max(top, z[c]);
      double sum = 0;
      for (int64_t c : outs) sum += std::exp(static_cast<double>(z[c]) - top);
      for (int64_t c = 0; c < k; ++c) {
        const double p = scored[static_cast<size_t>(c)] ? std::exp(static_cast<double>(z[c]) - top) / sum : 0.0;
        out.push_back(static_cast<float>(p));
      }
    }
  }
  model.Train(was_training);
  return out;
}

Trainer::Trainer(TrainerOptions options, nn::Module* model, nn::Optimizer* optimizer, data::DataLoader* loader,
                 const data::Dataset* test, TrainerListener* listener, const std::atomic<bool>* interrupted,
                 ParameterUpdate* update)
    : options_(std::move(options)),
      model_(model),
      optimizer_(optimizer),
      local_update_(optimizer),
      update_(update ? update : &local_update_),
      loader_(loader),
      test_(test),
      listener_(listener),
      interrupted_(interrupted),
      params_(model->TrainableParameters()) {}

int64_t Trainer::iterations_per_epoch() const {
  const int64_t all = loader_->batches_per_epoch();
  return options_.iterations_per_epoch > 0 ? std::min(options_.iterations_per_epoch, all) : all;
}

int64_t Trainer::total_iterations() const {
  int64_t total = static_cast<int64_t>(options_.training.epochs) * iterations_per_epoch();
  if (options_.training.max_iterations > 0) total = std::min(total, options_.training.max_iterations);
  return total;
}

Result<StepStats> TrainStep(nn::Module& model, ParameterUpdate& update, const std::vector<nn::Parameter*>& params,
                            const Tensor& x, const Tensor& y, int64_t round, float clip_norm) {
  model.ZeroGrad();
  autograd::Variable logits = model.Forward(autograd::Variable(x));
  autograd::Variable loss = autograd::SoftmaxCrossEntropy(logits, y);
  StepStats r;
  r.loss = loss.data().item();
  update.SetLoss(r.loss);
  if (clip_norm <= 0.0f && update.WantsGradientsEarly()) {
    // Each parameter's gradient goes to the update as soon as it is final (P3 sends it during backward).
    std::unordered_map<const void*, size_t> index;
    for (size_t i = 0; i < params.size(); ++i) index[params[i]->var().id()] = i;
    Status early;
    autograd::BackwardOptions options;
    options.on_leaf_done = [&](const autograd::Variable& leaf) {
      auto it = index.find(leaf.id());
      if (it != index.end() && early.ok()) early = update.GradientReady(params, it->second, round);
    };
    loss.Backward(Tensor::Full(loss.data().shape(), 1.0f, loss.data().dtype(), loss.data().device()), options);
    GEOMX_RETURN_IF_ERROR(early);
  } else {
    loss.Backward();
  }
  if (clip_norm > 0.0f) ClipGradNorm(params, clip_norm);
  GEOMX_RETURN_IF_ERROR(update.Apply(params, round));
  r.correct = CountCorrect(logits.data(), y);
  r.examples = y.numel();
  return r;
}

Result<StepStats> Trainer::Step(const data::Batch& batch, int64_t round) {
  return TrainStep(*model_, *update_, params_, batch.x.To(options_.device), batch.y.To(options_.device), round,
                   options_.clip_norm);
}

MetricsRow Trainer::RowNow(const TrainState& state, double now_s, int epoch_1based) {
  MetricsRow row;
  row.time_s = now_s;
  row.iteration = state.iteration;
  row.epoch = epoch_1based;
  row.loss = window_steps_ > 0 ? window_loss_ / window_steps_ : 0;
  row.train_accuracy = window_examples_ > 0 ? static_cast<double>(window_correct_) / window_examples_ : 0;
  row.samples_per_second = window_train_s_ > 0 ? window_examples_ / window_train_s_ : 0;
  row.lr = optimizer_->lr();
  window_loss_ = 0;
  window_correct_ = window_examples_ = window_steps_ = 0;
  window_train_s_ = 0;
  return row;
}

Status Trainer::Report(MetricsRow row, const EvalResult& ev, bool full, TrainState* state) {
  row.test_loss = ev.loss;
  row.test_accuracy = ev.accuracy;
  row.test_examples = ev.examples;
  state->best_accuracy = std::max(state->best_accuracy, ev.accuracy);
  if (full || ev.examples == test_->size()) {
    state->final_accuracy = ev.accuracy;
    state->final_test_loss = ev.loss;
  }
  if (state->time_to_target_s < 0 && ReachesTarget(ev.accuracy, options_.training.target_accuracy)) {
    state->time_to_target_s = row.time_s;
  }
  ++reports_;
  return listener_ ? listener_->OnEvaluation(row, *state) : Status::Ok();
}

Status Trainer::CollectEvaluation(TrainState* state, bool wait) {
  if (!pending_eval_) return Status::Ok();
  if (!wait && pending_eval_->result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return Status::Ok();
  }
  PendingEvaluation done = std::move(*pending_eval_);
  pending_eval_.reset();
  return Report(std::move(done.row), done.result.get(), /*full=*/false, state);
}

namespace {

// The calling thread runs only on cores nothing else wants (Linux SCHED_IDLE): an asynchronous evaluation fills
// the time the workers wait for the network instead of taking turns with training steps. It is never starved for
// long: the next evaluation (or the end of the run) waits for it, and then it has the core to itself.
void RunAtIdlePriority() {
#if defined(SCHED_IDLE)
  sched_param none{};
  (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);  // a hint: without it the evaluation still runs
#endif
}

}  // namespace

Result<bool> Trainer::StartAsyncEvaluation(const MetricsRow& row) {
  if (!options_.make_eval_model || !options_.device.is_cpu()) return false;
  if (!eval_model_) {
    eval_model_ = options_.make_eval_model();
    if (!eval_model_) return false;
  }
  // The parameters as the next step reads them (an overlapping update, P3, may still be writing them).
  GEOMX_RETURN_IF_ERROR(update_->Flush());
  const std::vector<nn::Parameter*> from = model_->Parameters(), to = eval_model_->Parameters();
  const auto from_buffers = model_->Buffers(), to_buffers = eval_model_->Buffers();
  bool same = from.size() == to.size() && from_buffers.size() == to_buffers.size();
  for (size_t i = 0; same && i < from.size(); ++i) same = from[i]->data().shape() == to[i]->data().shape();
  for (size_t i = 0; same && i < from_buffers.size(); ++i) {
    same = from_buffers[i].second->shape() == to_buffers[i].second->shape();
  }
  if (!same) {  // a model the factory cannot rebuild (a transferred head, say): evaluate in line from now on
    options_.make_eval_model = nullptr;
    eval_model_.reset();
    return false;
  }
  for (size_t i = 0; i < from.size(); ++i) Tensor(to[i]->data()).CopyFrom(from[i]->data());
  for (size_t i = 0; i < from_buffers.size(); ++i) to_buffers[i].second->CopyFrom(*from_buffers[i].second);
  nn::Module* copy = eval_model_.get();
  const data::Dataset* test = test_;
  const TrainerOptions& o = options_;
  pending_eval_ = PendingEvaluation{row, std::async(std::launch::async, [copy, test, &o] {
                                      RunAtIdlePriority();
                                      return Evaluate(*copy, *test, o.device, o.eval_batch_size,
                                                      o.training.eval_limit, o.scored_classes);
                                    })};
  return true;
}

Status Trainer::EvaluateAndReport(TrainState* state, double now_s, bool full, int epoch_1based) {
  if (!options_.evaluate) return Status::Ok();
  GEOMX_RETURN_IF_ERROR(CollectEvaluation(state, /*wait=*/true));  // rows are reported in order
  MetricsRow row = RowNow(*state, now_s, epoch_1based);
  if (!full) {
    GEOMX_ASSIGN_OR_RETURN(const bool started, StartAsyncEvaluation(row));
    if (started) return Status::Ok();
  }
  const EvalResult ev = Evaluate(*model_, *test_, options_.device, options_.eval_batch_size,
                                 full ? 0 : options_.training.eval_limit, options_.scored_classes);
  return Report(std::move(row), ev, full, state);
}

// The bookkeeping after one step: statistics, the progress report.
void Trainer::Record(const StepStats& step, double step_s, int epoch, TrainState* state) {
  ++state->iteration;
  ++state->epoch_iteration;
  state->samples += step.examples;
  state->train_seconds += step_s;
  window_loss_ += step.loss;
  window_correct_ += step.correct;
  window_examples_ += step.examples;
  window_train_s_ += step_s;
  ++window_steps_;
  if (!listener_) return;
  const int64_t total = total_iterations();
  ProgressInfo p;
  p.epoch = epoch + 1;
  p.epochs = options_.training.epochs;
  p.iteration = state->iteration;
  p.total_iterations = total;
  p.epoch_iteration = state->epoch_iteration;
  p.epoch_iterations = iterations_per_epoch();
  p.loss = window_loss_ / window_steps_;
  p.accuracy = window_examples_ > 0 ? double(window_correct_) / window_examples_ : 0;
  p.samples_per_second = window_train_s_ > 0 ? window_examples_ / window_train_s_ : 0;
  const double sec_per_iter = state->train_seconds / std::max<int64_t>(1, state->iteration);
  p.eta_seconds = sec_per_iter * static_cast<double>(total - state->iteration);
  listener_->OnIteration(p);
}

Status Trainer::Checkpoint(TrainState* state, double now_s) {
  GEOMX_RETURN_IF_ERROR(update_->Flush());
  state->elapsed_s = now_s;
  return listener_ ? listener_->OnCheckpoint(*state) : Status::Ok();
}

// One epoch from state->epoch_iteration on. Sets *stop (with *reason) when training must end inside it;
// *evaluated says whether the last evaluation covered the current iteration fully.
Status Trainer::RunEpoch(int epoch, TrainState* state, const std::function<double()>& now_s, bool* stop,
                         StopReason* reason, bool* evaluated) {
  const int64_t per_epoch = iterations_per_epoch();
  const int64_t total = total_iterations();
  const auto& tc = options_.training;
  loader_->StartEpoch(epoch, state->epoch_iteration);
  data::Batch batch;
  while (!*stop) {
    if (interrupted_ && interrupted_->load()) {
      *reason = StopReason::kInterrupted;
      *stop = true;
      break;
    }
    if (tc.max_iterations > 0 && state->iteration >= tc.max_iterations) {
      *reason = StopReason::kMaxIterations;
      *stop = true;
      break;
    }
    if (state->epoch_iteration >= per_epoch || !loader_->Next(&batch)) break;
    optimizer_->SetLr(nn::ScheduledLr(options_.schedule, options_.base_lr, state->iteration, epoch, total));
    const auto ts = Clock::now();
    GEOMX_ASSIGN_OR_RETURN(const StepStats step, Step(batch, state->iteration));
    const double step_s = SecondsSince(ts);
    if (!std::isfinite(step.loss)) {
      return Status::Internal("training diverged: loss is " + std::to_string(step.loss) + " at iteration " +
                              std::to_string(state->iteration + 1) + " (try a smaller optimizer.lr)");
    }
    Record(step, step_s, epoch, state);
    *evaluated = false;
    const int64_t reports_before = reports_;
    GEOMX_RETURN_IF_ERROR(CollectEvaluation(state, /*wait=*/false));
    if (update_->Finished()) {
      *reason = StopReason::kCompleted;
      *stop = true;
    }
    if (tc.eval_every > 0 && state->iteration % tc.eval_every == 0 && state->epoch_iteration != per_epoch) {
      GEOMX_RETURN_IF_ERROR(EvaluateAndReport(state, now_s(), /*full=*/false, epoch + 1));
      // A limited evaluation does not give the final numbers: re-evaluate fully if training stops here.
      *evaluated = tc.eval_limit == 0 || tc.eval_limit >= test_->size();
    }
    if (tc.stop_at_target && reports_ > reports_before && state->time_to_target_s >= 0) {
      *reason = StopReason::kTargetReached;
      *stop = true;
    }
    if (tc.checkpoint_every > 0 && state->iteration % tc.checkpoint_every == 0 && listener_) {
      GEOMX_RETURN_IF_ERROR(Checkpoint(state, now_s()));
    }
  }
  return Status::Ok();
}

Result<StopReason> Trainer::Run(TrainState* state) {
  const auto t0 = Clock::now();
  const double elapsed0 = state->elapsed_s;
  const std::function<double()> now_s = [&] { return elapsed0 + SecondsSince(t0); };
  const auto& tc = options_.training;
  model_->Train();

  StopReason reason = StopReason::kCompleted;
  bool evaluated_at_current = false;
  for (int epoch = state->epoch; epoch < tc.epochs; ++epoch) {
    bool stop = false;
    GEOMX_RETURN_IF_ERROR(RunEpoch(epoch, state, now_s, &stop, &reason, &evaluated_at_current));
    if (stop) break;
    // Epoch end: full evaluation and a checkpoint.
    state->epoch = epoch + 1;
    state->epoch_iteration = 0;
    GEOMX_RETURN_IF_ERROR(EvaluateAndReport(state, now_s(), /*full=*/true, epoch + 1));
    evaluated_at_current = true;
    GEOMX_RETURN_IF_ERROR(Checkpoint(state, now_s()));
    if (tc.stop_at_target && state->time_to_target_s >= 0) {
      reason = StopReason::kTargetReached;
      break;
    }
  }
  // An asynchronous evaluation still running is reported before the final numbers.
  GEOMX_RETURN_IF_ERROR(CollectEvaluation(state, /*wait=*/true));
  // Every answer of the last round is in the parameters before anyone reads them (checkpoint, caller).
  GEOMX_RETURN_IF_ERROR(update_->Flush());
  // Stopped mid-epoch (interrupt, max_iterations, target): make the final numbers and checkpoint current.
  if (!evaluated_at_current && state->iteration > 0 && reason != StopReason::kInterrupted) {
    GEOMX_RETURN_IF_ERROR(EvaluateAndReport(state, now_s(), /*full=*/true, state->epoch + 1));
  }
  state->elapsed_s = now_s();
  if (reason != StopReason::kCompleted && listener_) GEOMX_RETURN_IF_ERROR(listener_->OnCheckpoint(*state));
  return reason;
}

}  // namespace geomx::train
