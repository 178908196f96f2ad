// SlowdownUpdate: emulates a slower machine (recipe topology.datacentres[].slowdown): before each update it sleeps
// (factor - 1) x the time since the previous update returned (the step's data loading, forward and backward).
// Wraps another ParameterUpdate (borrowed). Not thread-safe (the trainer's thread).
#pragma once

#include <chrono>
#include <thread>

#include "algorithms/train/parameter_update.h"

namespace geomx::train {

class SlowdownUpdate final : public ParameterUpdate {
 public:
  SlowdownUpdate(ParameterUpdate* inner, float factor) : inner_(inner), factor_(factor) {}
  Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) override {
    const auto now = std::chrono::steady_clock::now();
    if (started_) {
      const std::chrono::duration<double> compute = now - last_;
      std::this_thread::sleep_for(std::chrono::duration<double>(compute.count() * (factor_ - 1.0f)));
    }
    Status s = inner_->Apply(params, round);
    last_ = std::chrono::steady_clock::now();
    started_ = true;
    return s;
  }
  void SetLoss(double loss) override { inner_->SetLoss(loss); }
  bool Finished() const override { return inner_->Finished(); }
  Status Flush() override { return inner_->Flush(); }

 private:
  ParameterUpdate* inner_;
  const float factor_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace geomx::train
