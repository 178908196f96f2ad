#include "bench/kernels_data.h"

#include <filesystem>
#include <fstream>
#include <numeric>
#include <utility>

#include "engine/base/check.h"
#include "engine/base/rng.h"

namespace geomx::bench {

Result<std::shared_ptr<const data::Dataset>> OpenKernelsTrainingSet(const std::string& dir,
                                                                    std::string* resolved_dir) {
  data::DataConfig config;
  config.name = "fashion-mnist";
  config.path = dir.empty() ? "auto" : dir;
  config.normalize = true;
  config.augment = false;
  auto splits = data::OpenDataset(config);
  if (!splits.ok()) {
    const Status& s = splits.status();
    return Status(s.code(), "--data " + config.path + ": " + s.message());
  }
  std::shared_ptr<const data::Dataset> train = std::move(splits->train);
  const std::vector<int64_t> want = {1, 28, 28};
  if (train->info().example_shape != want) {
    return Status::InvalidArgument("--data " + config.path + ": " + train->info().source +
                                   " does not hold 28x28 grey images (geomx-cnn's input)");
  }
  if (train->size() < 1) return Status::DataLoss("--data " + config.path + ": " + train->info().source + " is empty");
  if (resolved_dir != nullptr) *resolved_dir = std::filesystem::path(train->info().source).parent_path().string();
  return train;
}

std::vector<int64_t> KernelsExampleOrder(int64_t num_examples, uint64_t seed) {
  GEOMX_CHECK_GE(num_examples, 0);
  std::vector<int64_t> order(static_cast<size_t>(num_examples));
  std::iota(order.begin(), order.end(), int64_t{0});
  Rng rng(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  return order;
}

Status WriteKernelsOrder(const std::vector<int64_t>& order, const std::string& path) {
  std::vector<char> bytes(order.size() * 8);
  for (size_t i = 0; i < order.size(); ++i) {
    const uint64_t v = static_cast<uint64_t>(order[i]);
    for (size_t k = 0; k < 8; ++k) bytes[i * 8 + k] = static_cast<char>((v >> (8 * k)) & 0xff);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status::InvalidArgument(path + ": cannot write the example order");
  return Status::Ok();
}

data::Batch AssembleKernelsBatch(const data::Dataset& train, const std::vector<int64_t>& order, int64_t b,
                                 int batch) {
  GEOMX_CHECK(!order.empty() && b >= 0 && batch >= 1);
  std::vector<int64_t> dims = {batch};
  int64_t numel = 1;
  for (int64_t d : train.info().example_shape) {
    dims.push_back(d);
    numel *= d;
  }
  data::Batch out;
  out.x = Tensor::Empty(Shape(std::move(dims)), DType::kF32);
  out.y = Tensor::Empty(Shape({batch}), DType::kI64);
  float* x = out.x.data<float>();
  int64_t* y = out.y.data<int64_t>();
  for (int j = 0; j < batch; ++j) {
    const int64_t index = KernelsBatchExample(order, b, batch, j);
    train.Get(index, x + j * numel, nullptr);
    y[j] = train.Label(index);
  }
  return out;
}

}  // namespace geomx::bench
