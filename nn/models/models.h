// The model registry: built-in models by name (docs/design.md: registration, not switches).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/base/rng.h"
#include "engine/base/status.h"
#include "nn/models/model_config.h"
#include "nn/module.h"

namespace geomx::nn {

// Creates a model with weights initialised from `rng` (same seed => same weights). kNotFound for an unknown
// name, kInvalidArgument for a config the model cannot take (e.g. resnet20 on a 1x1 input).
Result<std::unique_ptr<Module>> CreateModel(const ModelConfig& config, Rng& rng);
// Registered names, sorted.
std::vector<std::string> ModelNames();

}  // namespace geomx::nn
