// TrainingConfig: how long a training run goes and when it evaluates and checkpoints (recipe section `training`,
// docs/recipes.md). Parsed once in cli/; the trainer and the sync modes read it. Value type.
#pragma once

#include <cstdint>

namespace geomx::train {

struct TrainingConfig {
  int epochs = 5;                  // >= 1
  int64_t max_iterations = 0;      // stop after this many iterations in total; 0 = no limit
  int64_t eval_every = 0;          // evaluate every N iterations (plus at every epoch end); 0 = epoch ends only
  int64_t eval_limit = 0;          // evaluate on at most N test examples at intermediate evals; 0 = all
  bool eval_async = false;         // intermediate evals on a copy of the model, beside training (trainer.h)
  float target_accuracy = 0.0f;    // [0, 1]; 0 = none. Records time_to_target; training continues
  bool stop_at_target = false;     // stop as soon as target_accuracy is reached
  int64_t checkpoint_every = 0;    // also checkpoint every N iterations; 0 = at epoch ends only
  int64_t log_every = 50;          // progress line every N iterations when stdout is not a terminal, >= 1
};

}  // namespace geomx::train
