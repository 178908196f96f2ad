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
std::vector<int64_t> PartitionIndices(const Dataset& dataset, PartitionKind kind, float alpha, int rank, int world,
                                      uint64_t seed);

// The options `config` implies for worker `rank` of `world` reading the training split (shuffled, augmented as
// configured). For evaluation, set shuffle = augment = false and world = 1 (or shard the test set the same way).
LoaderOptions TrainLoaderOptions(const DataConfig& config, int rank, int world, uint64_t seed);

class DataLoader {
 public:
  // Partitions `dataset` at once (PartitionIndices with options.seed). Checks (programmer errors): a dataset,
  // batch_size >= 1, prefetch >= 0, 0 <= rank < world. Batches of the same (seed, epoch) are identical whatever
  // `prefetch` is, and augmentation draws come from (seed, epoch, batch index) so a resumed epoch repeats them.
  DataLoader(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options);
  // Stops and joins the prefetch thread, also mid-epoch.
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t num_examples() const { return static_cast<int64_t>(indices_.size()); }
  int64_t batches_per_epoch() const;
  // Starts epoch `epoch` (reshuffles with seed+epoch) beginning at batch `skip_batches` (for resume): the
  // batches then equal the tail of the full epoch. Abandons the rest of the current epoch.
  void StartEpoch(int epoch, int64_t skip_batches = 0);
  // Next batch of the current epoch; false at the end of the epoch. Before any StartEpoch(), starts epoch 0.
  // The last batch is smaller unless drop_last.
  bool Next(Batch* batch);
  int epoch() const { return epoch_; }
  // Index (in the epoch) of the batch the next Next() returns.
  int64_t next_batch() const { return next_batch_; }

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
  bool started_ = false;

  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;   // guarded by mu_
  bool stop_ = false;         // guarded by mu_
  bool worker_done_ = false;  // guarded by mu_
};

}  // namespace geomx::data
