// Optimizer: updates parameters from their gradients. One interface for every rule (SGD ... AdamW now; DC-ASGD,
// FTRL, FTML later). State is kept per parameter *key*, so the same optimizer runs on a worker (over
// Module::Parameters()) or on a parameter server (over keyed tensors it holds) — see StepKey.
// Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/tensor.h"
#include "nn/optim/optimizer_config.h"
#include "nn/parameter.h"

namespace geomx::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string_view name() const = 0;

  // Updates every parameter that has a gradient, under NoGradGuard. Increments step().
  void Step(const std::vector<Parameter*>& params);
  // Updates one keyed tensor in place (parameter-server side). Does not increment step(); call AdvanceStep().
  virtual void StepKey(const std::string& key, const Tensor& grad, Tensor* weight) = 0;
  void AdvanceStep() { ++step_; }

  float lr() const { return lr_; }
  void SetLr(float lr) { lr_ = lr; }
  int64_t step() const { return step_; }

  // Per-key state tensors (for checkpoints): name "key/slot" -> tensor. LoadState replaces them.
  virtual std::map<std::string, Tensor> StateDict() const = 0;
  virtual Status LoadState(const std::map<std::string, Tensor>& state, int64_t step) = 0;

 protected:
  explicit Optimizer(float lr) : lr_(lr) {}
  float lr_;
  int64_t step_ = 0;
};

// kNotFound for an unknown name; kInvalidArgument for out-of-range hyper-parameters (names the field).
Result<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config);
std::vector<std::string> OptimizerNames();
Status ValidateOptimizerConfig(const OptimizerConfig& config);

// Learning rate at `iteration` (0-based) given the epoch and the total planned iterations.
float ScheduledLr(const LrScheduleConfig& schedule, float base_lr, int64_t iteration, int epoch,
                  int64_t total_iterations);
Status ValidateLrScheduleConfig(const LrScheduleConfig& config);

}  // namespace geomx::nn
