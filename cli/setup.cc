#include "cli/setup.h"

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli/run_dir.h"
#include "datasets/loader.h"
#include "engine/backend_registry.h"
#include "engine/base/logging.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"
#include "nn/transfer.h"

namespace geomx::cli {

Status DataErrorInRecipeTerms(const Recipe& recipe, const Status& status) {
  if (status.ok()) return status;
  const auto missing = [](const std::string& path) {
    std::error_code ec;
    return !path.empty() && path != "auto" && !std::filesystem::exists(path, ec);
  };
  const std::string& message = status.message();
  if (missing(recipe.data.path)) return AtRecipeKey(recipe, "data.path", status);
  if (missing(recipe.data.test_path)) return AtRecipeKey(recipe, "data.test_path", status);
  if (status.code() == StatusCode::kNotFound &&
      (message.rfind("data.name: ", 0) == 0 || message.find("data.path is auto") != std::string::npos)) {
    return AtRecipeKey(recipe, "data.name", status);
  }
  for (const char* key : {"data.batch_size", "data.num_features", "data.classes"}) {  // reader limits, class filter
    if (message.rfind(std::string(key) + ": ", 0) == 0) return AtRecipeKey(recipe, key, status);
  }
  return status;
}

Status CheckBatchFitsTrainingSet(const Recipe& recipe, const data::Dataset& train) {
  const int64_t batch = recipe.data.batch_size;
  const int world = recipe.has_topology ? std::max(1, recipe.topology.total_workers()) : 1;
  if (world == 1) {
    if (batch <= train.size()) return Status::Ok();
    return AtRecipeKey(recipe, "data.batch_size",
                       Status::InvalidArgument("data.batch_size: " + std::to_string(batch) +
                                               " is larger than the training set (" + std::to_string(train.size()) +
                                               " examples of " + train.info().source + "); lower data.batch_size"));
  }
  // Every worker draws its batches from its own share (datasets/loader.h); the smallest share is the limit.
  int64_t smallest = -1;
  int smallest_rank = 0;
  for (int rank = 0; rank < world; ++rank) {
    const int64_t share = static_cast<int64_t>(data::PartitionIndices(train, recipe.data.partition,
                                                                      recipe.data.dirichlet_alpha, rank, world,
                                                                      recipe.seed)
                                                   .size());
    if (smallest < 0 || share < smallest) {
      smallest = share;
      smallest_rank = rank;
    }
  }
  if (batch <= smallest) return Status::Ok();
  std::string msg = "data.batch_size: ";
  msg += std::to_string(batch);
  msg += " is larger than the " + std::to_string(smallest) + " training examples of worker " +
         std::to_string(smallest_rank) + " of " + std::to_string(world) + " (the " + std::to_string(train.size()) +
         " examples of " + train.info().source + " are split between the topology's workers by data.partition); "
         "lower data.batch_size";
  return AtRecipeKey(recipe, "data.batch_size", Status::InvalidArgument(std::move(msg)));
}

namespace {

// model.init_from names a run folder (its last checkpoint) or a checkpoint file.
Result<std::filesystem::path> InitFromCheckpointPath(const std::string& init_from) {
  std::error_code ec;
  if (!std::filesystem::exists(init_from, ec)) {
    return Status::InvalidArgument("model.init_from: " + init_from + " does not exist (give a run folder of "
                                   "`geomx train` or a checkpoint file)");
  }
  if (!std::filesystem::is_directory(init_from, ec)) return std::filesystem::path(init_from);
  Result<std::filesystem::path> last = RunDir::LastCheckpoint(init_from);
  if (!last.ok()) {
    return Status::InvalidArgument("model.init_from: " + init_from + " is not a run folder with a checkpoint (" +
                                   last.status().message() + ")");
  }
  return last;
}

Status StartModel(const Recipe& recipe, bool start_weights, nn::Module& model) {
  if (start_weights && !recipe.model.init_from.empty()) {
    Result<std::filesystem::path> path = InitFromCheckpointPath(recipe.model.init_from);
    if (!path.ok()) return AtRecipeKey(recipe, "model.init_from", path.status());
    Result<nn::InitFromReport> report = nn::InitFromCheckpoint(*path, recipe.model.name, model);
    if (!report.ok()) {
      return AtRecipeKey(recipe, "model.init_from",
                         Status::InvalidArgument("model.init_from: " + report.status().message()));
    }
    std::string fresh;
    for (const auto& names : {report->kept_fresh, report->not_in_file}) {
      for (const std::string& n : names) {
        if (!fresh.empty()) fresh += ", ";
        fresh += n;
      }
    }
    const std::string loaded = std::to_string(report->loaded.size()) + " tensors from " + path->string();
    if (fresh.empty()) {
      GEOMX_LOG(kInfo) << "model.init_from: " << loaded;
    } else {  // worth seeing (a new head, or the wrong source): a warning
      GEOMX_LOG(kWarning) << "model.init_from: " << loaded << "; freshly initialised (another shape or not in the "
                          << "file): " << fresh;
    }
  }
  if (recipe.model.freeze > 0) {
    Status frozen = nn::FreezeLayers(model, recipe.model.freeze);
    if (!frozen.ok()) return AtRecipeKey(recipe, "model.freeze", frozen);
  }
  return Status::Ok();
}

}  // namespace

Result<RunSetup> PrepareRun(const Recipe& recipe, bool start_weights) {
  RunSetup s;
  Result<Device> device = ResolveDevice(recipe.device);
  if (!device.ok()) return AtRecipeKey(recipe, "device", device.status());
  s.device = *device;
  BackendFor(s.device).SetNumThreads(recipe.threads);

  auto data = data::OpenDataset(recipe.data);
  if (!data.ok()) {
    Status in_recipe_terms = DataErrorInRecipeTerms(recipe, data.status());
    return in_recipe_terms.message() != data.status().message() ? in_recipe_terms : data.status().WithContext("data");
  }
  s.data = std::move(data).value();

  const data::DatasetInfo& info = s.data.train->info();
  s.model_config = recipe.model;
  const auto& shape = info.example_shape;
  if (shape.size() == 3) {
    s.model_config.in_channels = static_cast<int>(shape[0]);
    s.model_config.in_height = static_cast<int>(shape[1]);
    s.model_config.in_width = static_cast<int>(shape[2]);
  } else if (shape.size() == 1) {
    s.model_config.in_channels = 1;
    s.model_config.in_height = 1;
    s.model_config.in_width = static_cast<int>(shape[0]);
  } else {
    return AtRecipeKey(recipe, "model.name",
                       Status::InvalidArgument(info.source + ": examples of rank " + std::to_string(shape.size()) +
                                               " are not supported by the built-in models"));
  }
  s.model_config.num_classes = info.num_classes;
  if (info.num_classes < 2) {
    return AtRecipeKey(recipe, "data.name",
                       Status::InvalidArgument(info.source + " has " + std::to_string(info.num_classes) +
                                               " class(es); classification needs at least 2"));
  }
  Rng rng(recipe.seed);
  auto model = nn::CreateModel(s.model_config, rng);
  if (!model.ok()) return AtRecipeKey(recipe, "model.name", model.status());
  s.model = std::move(model).value();
  s.model->To(s.device);
  GEOMX_RETURN_IF_ERROR(StartModel(recipe, start_weights, *s.model));
  return s;
}

std::function<std::unique_ptr<nn::Module>()> EvalModelFactory(const Recipe& recipe, const RunSetup& setup) {
  if (!recipe.training.eval_async) return nullptr;
  return [config = setup.model_config, device = setup.device]() -> std::unique_ptr<nn::Module> {
    Rng rng(0);  // the weights are overwritten by the copy
    Result<std::unique_ptr<nn::Module>> model = nn::CreateModel(config, rng);
    if (!model.ok()) return nullptr;
    (*model)->To(device);
    return std::move(model).value();
  };
}

}  // namespace geomx::cli
