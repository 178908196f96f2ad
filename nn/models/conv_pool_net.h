// ConvPoolNet: the small-image CNN shape shared by geomx-cnn and lenet5, with the widths as data:
//   conv1 5x5 (padding p) - relu - maxpool2 - conv2 5x5 - relu - maxpool2 - flatten
//   - fc1 - relu - fc2 - relu - fc3 num_classes
// Parameter keys: conv1.*, conv2.*, fc1.*, fc2.*, fc3.* (initialised in that order from the Rng). The flatten size
// follows the input geometry. Models are created by name through the registry (models.h); this header only
// serves the model files.
#pragma once

#include <memory>

#include "engine/base/rng.h"
#include "engine/base/status.h"
#include "nn/models/model_config.h"
#include "nn/module.h"

namespace geomx::nn {

struct ConvPoolNetSpec {
  const char* name;       // registry name, for error messages ("geomx-cnn")
  const char* type_name;  // Module::TypeName() ("GeomxCnn")
  int conv1_channels;
  int conv1_padding;
  int conv2_channels;
  int fc1;
  int fc2;
};

// kInvalidArgument when the input is too small for the two conv/pool stages or `config.init` is unknown.
Result<std::unique_ptr<Module>> MakeConvPoolNet(const ConvPoolNetSpec& spec, const ModelConfig& config, Rng& rng);

}  // namespace geomx::nn
