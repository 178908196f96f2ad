// OptimizerConfig and LrScheduleConfig: what `optimizer:` in a recipe says.
#pragma once

#include <string>

namespace geomx::nn {

struct OptimizerConfig {
  std::string name = "adam";  // sgd | momentum | nesterov | adagrad | rmsprop | adadelta | adam | adamw | ftrl
  float lr = 0.001f;          // > 0
  float weight_decay = 0.0f;  // >= 0 (L2 for all but adamw, decoupled for adamw)
  float momentum = 0.9f;      // momentum, nesterov: [0, 1)
  float beta1 = 0.9f;         // adam, adamw: [0, 1)
  float beta2 = 0.999f;       // adam, adamw: [0, 1)
  float rho = 0.9f;           // rmsprop, adadelta: [0, 1)
  float eps = 1e-8f;          // > 0
  float l1 = 0.01f;           // ftrl: L1 strength, >= 0 (MXNet's lamda1)
  float ftrl_beta = 1.0f;     // ftrl: beta of the per-coordinate rate lr / (beta + sqrt(n)), >= 0
  float clip_norm = 0.0f;     // > 0: clip the global gradient L2 norm to this before each update; 0 = off
};

struct LrScheduleConfig {
  std::string name = "constant";  // constant | step | cosine
  int step_epochs = 1;            // step: multiply lr by gamma every step_epochs epochs (>= 1)
  float gamma = 0.1f;             // step: (0, 1]
  float min_lr = 0.0f;            // cosine: final lr, >= 0
  int warmup_iterations = 0;      // linear warm-up from 0 over this many iterations, >= 0
};

}  // namespace geomx::nn
