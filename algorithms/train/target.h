// Whether an evaluation reached the recipe's target accuracy (training.target_accuracy), shared by the trainer's
// time to target and `geomx bench`'s reading of the metrics.
#pragma once

namespace geomx::train {

// The target is a float (the recipe's 0.85 is 0.8500000238...), the accuracy a fraction of examples (1700 / 2000 is
// the double 0.85): compared in double, an accuracy equal to the target missed it. Compared at the target's
// precision.
inline bool ReachesTarget(double accuracy, double target) {
  return target > 0 && static_cast<float>(accuracy) >= static_cast<float>(target);
}

}  // namespace geomx::train
