// Builds what every model-running command needs from a Recipe: the device, the dataset splits and the model
// (with its input geometry taken from the data). Shared by `geomx train` and `geomx eval`.
#pragma once

#include <memory>

#include "cli/recipe.h"
#include "datasets/dataset.h"
#include "engine/base/status.h"
#include "engine/device.h"
#include "nn/module.h"

namespace geomx::cli {

struct RunSetup {
  Device device;
  data::DatasetSplits data;
  nn::ModelConfig model_config;  // with the input geometry filled in
  std::unique_ptr<nn::Module> model;  // initialised from recipe.seed, on `device`
};

// Every failure here is the user's input (recipe, data files, device): the Status says which, with the key path.
Result<RunSetup> PrepareRun(const Recipe& recipe);

}  // namespace geomx::cli
