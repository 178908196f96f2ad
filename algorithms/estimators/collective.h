// Collective: what an estimator sees of the other workers while it fits across data centres.
//
// Every worker of a job runs the same Fit() on its own shard and calls the same sequence of collective operations
// with the same keys and sizes (the estimators are written that way: a loop of map steps and reductions). Two
// implementations: ThreadCollective (N fits as threads of one process, sharing memory: the tests' and the "local
// equals distributed" reference) and the parameter-server one (algorithms/estimators/ps_collective.h), where a sum
// goes worker -> local server (LAN) -> global server (WAN) and back, through the sync mode and the accelerators of
// the recipe. A failed peer or link surfaces as a non-OK Status from the call, never as a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::algorithms {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;   // 0 .. world()-1; rank 0 is the worker that evaluates and writes the model
  virtual int world() const = 0;  // workers in the job
  // In place: data <- the element-wise sum of every worker's `data` (all give the same size for the same key).
  virtual Status AllReduceSum(const std::string& key, std::span<float> data) = 0;
  // Every worker's `mine`, concatenated in rank order (sizes may differ): the concat reducer (support vectors,
  // k-means|| candidates, local top-k lists).
  virtual Result<std::vector<float>> AllGather(const std::string& key, std::span<const float> mine) = 0;
};

// N workers as threads of this process. Create one, then give Worker(r) to the fit running on thread r.
class ThreadCollectiveGroup {
 public:
  explicit ThreadCollectiveGroup(int world);
  ~ThreadCollectiveGroup();
  Collective* Worker(int rank);

 private:
  struct Shared;
  class Member;
  std::shared_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Collective>> members_;
};

}  // namespace geomx::algorithms
