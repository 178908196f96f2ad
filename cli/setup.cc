#include "cli/setup.h"

#include <filesystem>
#include <string>

#include "engine/backend_registry.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"

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
  return status;
}

Result<RunSetup> PrepareRun(const Recipe& recipe) {
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
  return s;
}

}  // namespace geomx::cli
