// Dataset: random access to labelled examples, stored compactly (u8 pixels stay u8 until a batch is built).
// Immutable after construction, so it is safe to read from several threads (the loader's prefetch thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/data_config.h"
#include "engine/base/rng.h"
#include "engine/base/status.h"

namespace geomx::data {

struct DatasetInfo {
  std::string format;                  // "idx", "idx.gz", "cifar10-bin", "csv", "libsvm", "image-folder", ...
  std::string source;                  // file or directory it came from
  std::vector<int64_t> example_shape;  // e.g. {1, 28, 28} or {num_features}
  int num_classes = 0;
  std::vector<std::string> class_names;  // may be empty
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual const DatasetInfo& info() const = 0;
  virtual int64_t size() const = 0;
  // Label of example i (in [0, num_classes)). Used for partitioning and class histograms.
  virtual int64_t Label(int64_t i) const = 0;
  // Writes example i as floats (numel(example_shape) values, normalised as configured) to `out`.
  // `rng` is non-null when augmentation is on (random crop/flip); null means deterministic.
  virtual void Get(int64_t i, float* out, Rng* rng) const = 0;
  // Optional query id per example (LIBSVM qid, for ranking); -1 when absent.
  virtual int64_t QueryId(int64_t) const { return -1; }
};

struct DatasetSplits {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> test;
};

// Opens train and test splits. Errors: kNotFound (missing file; lists where "auto" looked), kDataLoss (corrupt
// or truncated: names the file and byte offset), kInvalidArgument (a config the format cannot take).
// Thread-safe (the registry is filled during static initialisation).
Result<DatasetSplits> OpenDataset(const DataConfig& config);
// The registered dataset names, sorted.
std::vector<std::string> DatasetNames();
// One line of help per dataset name ("" for an unknown name).
std::string DatasetHelp(const std::string& name);
// The directories path: "auto" tries for `name`, in order (empty for names that need an explicit path).
std::vector<std::string> DatasetSearchPaths(const std::string& name);

// One IDX image file ([N, H, W] u8, gzip or raw) as a dataset normalised like `config`'s training data (mnist or
// fashion-mnist; labels all 0): the input of `geomx predict` for image models. kDataLoss naming the file for a bad
// header or size, kInvalidArgument for another dataset.
Result<std::shared_ptr<const Dataset>> OpenIdxImageFile(const std::string& path, const DataConfig& config);

// Describes a single data file (for `geomx data inspect`): format, counts, shapes, class histogram as text.
Result<std::string> InspectDataFile(const std::string& path);

}  // namespace geomx::data
