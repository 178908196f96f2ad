#include "datasets/loader.h"

#include <algorithm>
#include <utility>

#include "engine/base/check.h"

namespace geomx::data {
namespace {

// One seed per (seed, epoch): the epoch's shuffle uses it directly, batch b's augmentation its Fork(b).
uint64_t EpochSeed(uint64_t seed, int epoch) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(epoch) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

LoaderOptions TrainLoaderOptions(const DataConfig& config, int rank, int world, uint64_t seed) {
  LoaderOptions o;
  o.batch_size = config.batch_size;
  o.shuffle = config.shuffle;
  o.augment = config.augment;
  o.prefetch = config.prefetch;
  o.seed = seed;
  o.rank = rank;
  o.world = world;
  o.partition = config.partition;
  o.dirichlet_alpha = config.dirichlet_alpha;
  return o;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  GEOMX_CHECK(dataset_ != nullptr) << "DataLoader needs a dataset";
  GEOMX_CHECK_GE(options_.batch_size, 1);
  GEOMX_CHECK_GE(options_.prefetch, 0);
  indices_ = PartitionIndices(*dataset_, options_.partition, options_.dirichlet_alpha, options_.rank, options_.world,
                              options_.seed);
}

DataLoader::~DataLoader() { StopWorker(); }

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = num_examples(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::StartEpoch(int epoch, int64_t skip_batches) {
  StopWorker();
  started_ = true;
  epoch_ = epoch;
  const uint64_t epoch_seed = EpochSeed(options_.seed, epoch);
  order_ = indices_;
  if (options_.shuffle) {
    Rng rng(epoch_seed);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.Below(i)]);
  }
  next_batch_ = std::clamp<int64_t>(skip_batches, 0, batches_per_epoch());
  if (options_.prefetch == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.clear();
    stop_ = false;
    worker_done_ = next_batch_ >= batches_per_epoch();
  }
  if (!worker_done_) worker_ = std::thread(&DataLoader::WorkerLoop, this, next_batch_, epoch_seed);
}

bool DataLoader::Next(Batch* batch) {
  if (!started_) StartEpoch(0);
  if (options_.prefetch == 0) {
    if (next_batch_ >= batches_per_epoch()) return false;
    Rng rng = Rng(EpochSeed(options_.seed, epoch_)).Fork(static_cast<uint64_t>(next_batch_));
    *batch = MakeBatch(next_batch_, options_.augment ? &rng : nullptr);
    ++next_batch_;
    return true;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty() || worker_done_; });
    if (queue_.empty()) return false;
    *batch = std::move(queue_.front());
    queue_.pop_front();
  }
  cv_.notify_all();
  ++next_batch_;
  return true;
}

Batch DataLoader::MakeBatch(int64_t batch_index, Rng* rng) const {
  const int64_t n = num_examples(), b = options_.batch_size;
  const int64_t begin = batch_index * b, end = std::min(n, begin + b);
  GEOMX_CHECK_LT(begin, end);
  const int64_t count = end - begin;
  std::vector<int64_t> dims = {count};
  int64_t numel = 1;
  for (int64_t d : dataset_->info().example_shape) {
    dims.push_back(d);
    numel *= d;
  }
  Batch out;
  out.x = Tensor::Empty(Shape(std::move(dims)), DType::kF32);
  out.y = Tensor::Empty(Shape({count}), DType::kI64);
  float* x = out.x.data<float>();
  int64_t* y = out.y.data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    const int64_t index = order_[static_cast<size_t>(begin + j)];
    dataset_->Get(index, x + j * numel, rng);
    y[j] = dataset_->Label(index);
  }
  return out;
}

void DataLoader::StopWorker() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  stop_ = false;
}

void DataLoader::WorkerLoop(int64_t first_batch, uint64_t epoch_seed) {
  const int64_t end = batches_per_epoch();
  const Rng epoch_rng(epoch_seed);
  for (int64_t b = first_batch; b < end; ++b) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || static_cast<int>(queue_.size()) < options_.prefetch; });
      if (stop_) break;
    }
    // Built outside the lock: the consumer keeps taking finished batches meanwhile.
    Rng rng = epoch_rng.Fork(static_cast<uint64_t>(b));
    Batch batch = MakeBatch(b, options_.augment ? &rng : nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
      queue_.push_back(std::move(batch));
    }
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker_done_ = true;
  }
  cv_.notify_all();
}

}  // namespace geomx::data
