#include "cli/setup.h"

#include "engine/backend_registry.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"

namespace geomx::cli {

Result<RunSetup> PrepareRun(const Recipe& recipe) {
  RunSetup s;
  GEOMX_ASSIGN_OR_RETURN(s.device, ResolveDevice(recipe.device));
  BackendFor(s.device).SetNumThreads(recipe.threads);

  auto data = data::OpenDataset(recipe.data);
  if (!data.ok()) return data.status().WithContext("data");
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
    return Status::InvalidArgument("data: examples of rank " + std::to_string(shape.size()) +
                                   " are not supported by the built-in models");
  }
  s.model_config.num_classes = info.num_classes;
  if (info.num_classes < 2) {
    return Status::InvalidArgument("data: " + info.source + " has " + std::to_string(info.num_classes) +
                                   " class(es); classification needs at least 2");
  }
  Rng rng(recipe.seed);
  auto model = nn::CreateModel(s.model_config, rng);
  if (!model.ok()) return model.status().WithContext("model");
  s.model = std::move(model).value();
  s.model->To(s.device);
  return s;
}

}  // namespace geomx::cli
