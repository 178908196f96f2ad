// Optimizer: updates parameters from their gradients. One interface for every rule (SGD ... AdamW now; DC-ASGD,
// FTRL, FTML later). State is kept per parameter *key*, so the same optimizer runs on a worker (over
// Module::Parameters()) or on a parameter server (over keyed tensors it holds) — see StepKey.
// Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/registry.h"
#include "engine/base/status.h"
#include "engine/tensor.h"
#include "nn/optim/optimizer_config.h"
#include "nn/parameter.h"

namespace geomx::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string_view name() const = 0;

  // Updates every parameter that has a gradient, under NoGradGuard, then increments step(). Parameters without
  // a gradient (unused in this forward pass) are skipped and keep their state.
  void Step(const std::vector<Parameter*>& params);
  // Updates one keyed tensor in place (parameter-server side), as update number step() + 1 (Adam's bias
  // correction). State for a new key is created lazily, zero-initialised, on the weight's device. grad and
  // weight must have the same shape; a key's shape must not change (both abort: programmer errors).
  // Does not increment step(); call AdvanceStep() once per round of keys.
  virtual void StepKey(const std::string& key, const Tensor& grad, Tensor* weight) = 0;
  void AdvanceStep() { ++step_; }

  float lr() const { return lr_; }
  void SetLr(float lr) { lr_ = lr; }
  int64_t step() const { return step_; }

  // Per-key state tensors (for checkpoints): name "key/slot" -> tensor (aliases the live state; slots per rule:
  // momentum/nesterov "v"; adagrad "h"; rmsprop "s"; adadelta "s", "u"; adam/adamw "m", "v").
  // LoadState replaces all state and step() (kInvalidArgument, naming the entry, for an unknown slot or a key
  // with missing slots; nothing changes then).
  virtual std::map<std::string, Tensor> StateDict() const = 0;
  virtual Status LoadState(const std::map<std::string, Tensor>& state, int64_t step) = 0;

 protected:
  explicit Optimizer(float lr) : lr_(lr) {}
  float lr_;
  int64_t step_ = 0;
};

// Optimizers by name. A new rule is one file with one GEOMX_REGISTER(OptimizerRegistry, "name", factory) line;
// factories receive a config that already passed ValidateOptimizerConfig. (nn is linked whole-archive, see
// nn/CMakeLists.txt, so registrations in any nn file are kept.)
using OptimizerRegistry = Registry<Optimizer, const OptimizerConfig&>;

// kNotFound for an unknown name; kInvalidArgument for out-of-range hyper-parameters (names the field).
Result<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config);
// Registered names, sorted.
std::vector<std::string> OptimizerNames();
// Checks every field and reports every problem, each naming its recipe field, joined by "; ":
// "optimizer.lr: must be > 0, got -1". An unknown name is reported too. kInvalidArgument when anything is wrong.
Status ValidateOptimizerConfig(const OptimizerConfig& config);

// Learning rate at `iteration` (0-based) given the epoch and the total planned iterations:
//   constant: base_lr;  step: base_lr * gamma^floor(epoch / step_epochs);
//   cosine:   min_lr + (base_lr - min_lr) * (1 + cos(pi * t / T)) / 2 with t = iteration - warmup_iterations
//             and T = total_iterations - warmup_iterations (t clamped to [0, T]; min_lr once t >= T).
// Linear warm-up multiplies the scheduled value by (iteration + 1) / warmup_iterations while
// iteration < warmup_iterations, so the first step already moves and step warmup-1 reaches the full rate.
// The config must have passed ValidateLrScheduleConfig (an unknown name aborts).
float ScheduledLr(const LrScheduleConfig& schedule, float base_lr, int64_t iteration, int epoch,
                  int64_t total_iterations);
// Like ValidateOptimizerConfig, for the recipe's "optimizer.schedule." fields:
// "optimizer.schedule.gamma: must be in (0, 1], got 2".
Status ValidateLrScheduleConfig(const LrScheduleConfig& config);

}  // namespace geomx::nn
