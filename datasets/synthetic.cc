// The "synthetic" dataset: Gaussian blobs, one centre per class. Examples are generated on Get() from
// (seed, split, index), so the dataset takes no memory beyond the centres and is identical on every machine.
#include <cmath>
#include <memory>
#include <utility>

#include "datasets/dataset_registry.h"

namespace geomx::data {
namespace {

// Centres ~ N(0, 1) per value; an example is its class centre plus N(0, kNoise) noise. With 64 values the
// classes are well separated (centre distance ~ 11 noise stds): a model should learn it in a few steps.
constexpr double kNoise = 1.0;

// Immutable: thread-safe to read.
class SyntheticDataset final : public Dataset {
 public:
  SyntheticDataset(DatasetInfo info, int64_t size, std::shared_ptr<const std::vector<float>> centres, uint64_t seed,
                   uint64_t split)
      : info_(std::move(info)),
        size_(size),
        centres_(std::move(centres)),
        base_(seed ^ (split * 0x9e3779b97f4a7c15ULL)) {
    numel_ = 1;
    for (int64_t d : info_.example_shape) numel_ *= static_cast<size_t>(d);
  }
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return size_; }
  // Balanced classes: example i is of class i mod num_classes.
  int64_t Label(int64_t i) const override { return i % info_.num_classes; }
  void Get(int64_t i, float* out, Rng*) const override {
    Rng rng = base_.Fork(static_cast<uint64_t>(i));
    const float* centre = centres_->data() + static_cast<size_t>(Label(i)) * numel_;
    for (size_t k = 0; k < numel_; ++k) out[k] = centre[k] + static_cast<float>(kNoise * rng.Normal());
  }

 private:
  DatasetInfo info_;
  int64_t size_;
  std::shared_ptr<const std::vector<float>> centres_;
  Rng base_;
  size_t numel_ = 1;
};

Result<std::unique_ptr<DatasetSplits>> OpenSynthetic(const DataConfig& config) {
  if (config.synthetic_train < 1 || config.synthetic_test < 1) {
    return Status::InvalidArgument("data.synthetic_train/synthetic_test: must be >= 1, got " +
                                   std::to_string(config.synthetic_train) + "/" +
                                   std::to_string(config.synthetic_test));
  }
  if (config.synthetic_classes < 2 || config.synthetic_classes > 100000) {
    return Status::InvalidArgument("data.synthetic_classes: must be in [2, 100000], got " +
                                   std::to_string(config.synthetic_classes));
  }
  if (config.synthetic_shape.empty() || config.synthetic_shape.size() > 4) {
    return Status::InvalidArgument("data.synthetic_shape: needs 1 to 4 dimensions");
  }
  int64_t numel = 1;
  for (int64_t d : config.synthetic_shape) {
    if (d < 1 || d > (int64_t{1} << 20)) {
      return Status::InvalidArgument("data.synthetic_shape: dimensions must be in [1, 2^20], got " + std::to_string(d));
    }
    numel *= d;
    if (numel > (int64_t{1} << 24)) return Status::InvalidArgument("data.synthetic_shape: more than 2^24 values");
  }
  auto centres = std::make_shared<std::vector<float>>(static_cast<size_t>(numel * config.synthetic_classes));
  Rng rng(config.synthetic_seed);
  for (float& v : *centres) v = static_cast<float>(rng.Normal());

  DatasetInfo info;
  info.format = "synthetic";
  info.source = "synthetic(seed=" + std::to_string(config.synthetic_seed) + ")";
  info.example_shape = config.synthetic_shape;
  info.num_classes = config.synthetic_classes;
  auto splits = std::make_unique<DatasetSplits>();
  splits->train = std::make_shared<SyntheticDataset>(info, config.synthetic_train, centres, config.synthetic_seed, 1);
  splits->test = std::make_shared<SyntheticDataset>(info, config.synthetic_test, centres, config.synthetic_seed, 2);
  return splits;
}

GEOMX_REGISTER(DatasetRegistry, "synthetic", OpenSynthetic,
               "deterministic Gaussian blobs (data.synthetic_train/test/classes/shape/seed), for tests and benches");

}  // namespace

void LinkSyntheticDataset() {}

}  // namespace geomx::data
