// The model registry: built-in models by name (docs/design.md: registration, not switches).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/base/registry.h"
#include "engine/base/rng.h"
#include "engine/base/status.h"
#include "nn/models/model_config.h"
#include "nn/module.h"

namespace geomx::nn {

// Models by name. A new model is one file with one GEOMX_REGISTER(ModelRegistry, "name", factory) line; the
// factory receives a config that passed ValidateModelConfig and checks only what is specific to it (input
// geometry). Keys of built-in models: conv1.weight, fc1.bias, stage2.block0.conv1.weight, ...
// (nn is linked whole-archive, see nn/CMakeLists.txt, so registrations in any nn file are kept.)
using ModelRegistry = Registry<Module, const ModelConfig&, Rng&>;

// Creates a model with weights initialised from `rng` (same seed => same weights). kNotFound for an unknown
// name, kInvalidArgument for a config the model cannot take (e.g. resnet20 on a 1x1 input).
Result<std::unique_ptr<Module>> CreateModel(const ModelConfig& config, Rng& rng);
// Registered names, sorted.
std::vector<std::string> ModelNames();
// Checks the fields every model shares (name known, hidden widths > 0, activation/init known, dropout in [0, 1),
// input geometry and class count >= 1) and reports every problem naming its field ("model.dropout: must be in
// [0, 1), got 1"). kInvalidArgument when anything is wrong.
Status ValidateModelConfig(const ModelConfig& config);

}  // namespace geomx::nn
