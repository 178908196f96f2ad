// DataLoader: the (rank, world) shard of a dataset, shuffled per epoch from a seed, cut into batches, with an
// optional prefetch thread. Batches are CPU tensors: x f32 [B, example_shape...], y i64 [B].
// Not thread-safe (one consumer); owns its prefetch thread and joins it in the destructor.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "datasets/dataset.h"
#include "engine/tensor.h"

namespace geomx::data {

struct Batch {
  Tensor x;  // f32 [B, ...]
  Tensor y;  // i64 [B]
};

struct LoaderOptions {
  int batch_size = 32;
  bool shuffle = true;
  bool drop_last = false;
  bool augment = false;
  int prefetch = 2;
  uint64_t seed = 0;
  int rank = 0;   // this worker's index in [0, world)
  int world = 1;  // number of workers sharing the dataset
  PartitionKind partition = PartitionKind::kIid;
  float dirichlet_alpha = 0.5f;
};

// The indices of `dataset` assigned to `rank` of `world` under `kind` (deterministic in `seed`). Every index
// goes to exactly one rank. kByClass: GeoMX's non-IID split (classes dealt to ranks in contiguous groups).
std::vector<int64_t> PartitionIndices(const Dataset& dataset, PartitionKind kind, float alpha, int rank,
                                      int world, uint64_t seed);

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t num_examples() const { return static_cast<int64_t>(indices_.size()); }
  int64_t batches_per_epoch() const;
  // Starts epoch `epoch` (reshuffles with seed+epoch) beginning at batch `skip_batches` (for resume).
  void StartEpoch(int epoch, int64_t skip_batches = 0);
  // Next batch of the current epoch; false at the end of the epoch.
  bool Next(Batch* batch);

 private:
  Batch MakeBatch(int64_t batch_index, Rng* rng) const;
  void StopWorker();
  void WorkerLoop(int64_t first_batch, uint64_t epoch_seed);

  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  std::vector<int64_t> indices_;  // this rank's shard
  std::vector<int64_t> order_;    // current epoch's order
  int64_t next_batch_ = 0;
  int epoch_ = 0;

  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;  // guarded by mu_
  bool stop_ = false;        // guarded by mu_
  bool worker_done_ = false; // guarded by mu_
};

}  // namespace geomx::data
