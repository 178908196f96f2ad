// OpenDataset: resolves path: "auto", then dispatches by name through DatasetRegistry.
#include "datasets/dataset.h"

#include <filesystem>
#include <memory>
#include <utility>

#include "datasets/dataset_registry.h"
#include "datasets/subset.h"

namespace geomx::data {
namespace {

// References one symbol of every reader file so the static library keeps their registrations.
void LinkBuiltinDatasets() {
  LinkIdxDatasets();
  LinkCifar10Dataset();
  LinkCsvDataset();
  LinkLibsvmDataset();
  LinkImageFolderDataset();
  LinkSyntheticDataset();
}

struct WellKnown {
  const char* name;
  std::vector<std::string> dirs;
  const char* how_to_get;
};

const std::vector<WellKnown>& WellKnownLocations() {
  static const std::vector<WellKnown> table = {
      {"fashion-mnist",
       {"/usr/share/datasets/fashion-mnist", "data/fashion-mnist"},
       "install it with `apt-get install dataset-fashion-mnist` (Debian/Ubuntu) or run `geomx data fetch "
       "fashion-mnist` (into data/fashion-mnist), or set data.path to a directory holding train-images-idx3-ubyte.gz, "
       "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz"},
      {"mnist",
       {"/usr/share/datasets/mnist", "data/mnist"},
       "run `geomx data fetch mnist` (downloads and verifies train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
       "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz into data/mnist), or set data.path to a directory "
       "holding them"},
      {"cifar10",
       {"/usr/share/datasets/cifar10", "data/cifar10", "data/cifar-10-batches-bin"},
       "run `geomx data fetch cifar10` (downloads, verifies and unpacks the binary version into data/cifar10), or "
       "set data.path to the directory holding data_batch_1.bin .. test_batch.bin"},
  };
  return table;
}

const WellKnown* FindWellKnown(const std::string& name) {
  for (const auto& w : WellKnownLocations()) {
    if (name == w.name) return &w;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> DatasetNames() {
  LinkBuiltinDatasets();
  return DatasetRegistry::Global().Names();
}

std::string DatasetHelp(const std::string& name) {
  LinkBuiltinDatasets();
  return DatasetRegistry::Global().Help(name);
}

std::vector<std::string> DatasetSearchPaths(const std::string& name) {
  const WellKnown* w = FindWellKnown(name);
  return w ? w->dirs : std::vector<std::string>{};
}

Result<DatasetSplits> OpenDataset(const DataConfig& config) {
  LinkBuiltinDatasets();
  const auto& registry = DatasetRegistry::Global();
  if (!registry.Has(config.name)) {
    std::string known;
    for (const auto& n : registry.Names()) known += (known.empty() ? "" : ", ") + n;
    return Status::NotFound("data.name: unknown dataset '" + config.name + "' (known: " + known + ")");
  }
  DataConfig resolved = config;
  const WellKnown* w = config.path == "auto" ? FindWellKnown(config.name) : nullptr;
  {
    if (w) {
      resolved.path.clear();
      std::string looked;
      for (const auto& dir : w->dirs) {
        std::error_code ec;
        if (resolved.path.empty() && std::filesystem::is_directory(dir, ec)) resolved.path = dir;
        looked += (looked.empty() ? "" : ", ") + dir;
      }
      if (resolved.path.empty()) {
        return Status::NotFound(config.name + ": data.path is auto and no data was found (looked in " + looked + "); " +
                                w->how_to_get);
      }
    }
  }
  auto opened = registry.Create(config.name, resolved);
  if (!opened.ok()) {
    if (w && opened.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(opened.status().message() + "; " + w->how_to_get);
    }
    return opened.status();
  }
  DatasetSplits splits = std::move(**opened);
  if (!splits.train || !splits.test) return Status::Internal(config.name + ": the reader returned no split");
  if (splits.train->info().example_shape != splits.test->info().example_shape) {
    return Status::InvalidArgument(config.name + ": train and test examples differ in shape");
  }
  if (!config.classes.empty()) return FilterClasses(splits, config.classes);
  return splits;
}

}  // namespace geomx::data
