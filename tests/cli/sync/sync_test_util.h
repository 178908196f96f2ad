// Helpers of the sync-mode tests that run a 2 x 2 topology as threads (tests/cli/cluster_test_util.h): the test
// loss of a set of weights, and an observer that records every worker's model after every averaging sync.
// Test-only code.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/train/trainer.h"
#include "cli/setup.h"
#include "tests/cli/cluster_test_util.h"

namespace geomx::cli::sync_testing {

using cluster_testing::Weights;

// Test loss (mean cross-entropy over the recipe's test set) of `w` loaded into the recipe's model; null: the
// model's initial weights.
inline double TestLoss(const Recipe& r, const Weights* w) {
  auto setup = PrepareRun(r);
  EXPECT_TRUE(setup.ok()) << setup.status().ToString();
  if (w != nullptr) {
    auto params = setup->model->Parameters();
    EXPECT_EQ(params.size(), w->size());
    for (size_t i = 0; i < params.size() && i < w->size(); ++i) {
      Tensor t = Tensor::FromVector((*w)[i], params[i]->data().shape());
      Tensor(params[i]->data()).CopyFrom(t);
    }
  }
  return train::Evaluate(*setup->model, *setup->data.test, Device::Cpu(), 64, 0).loss;
}

// Counts the averaging syncs (AveragingCounter) and records every worker's model after each of its syncs:
// models[sync index][worker index over all data centres].
struct ModelRecorder : cluster_testing::AveragingCounter {
  std::mutex mu;
  std::map<int64_t, std::map<int, Weights>> models;
  bool WantsWorkerModels() const override { return true; }
  void OnWorkerModel(int worker_index, int64_t sync_index, const std::vector<std::vector<float>>& weights) override {
    std::lock_guard<std::mutex> lock(mu);
    models[sync_index][worker_index] = weights;
  }
};

}  // namespace geomx::cli::sync_testing
