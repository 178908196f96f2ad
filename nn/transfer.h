// Incremental training (docs/algorithms.md, "feature-extraction" and "fine-tune"): a model starts from the weights
// of another run's checkpoint (matched by key name) and keeps its first layers frozen.
//
// A model's *layers* here are its parameterised layers in Parameters() order: consecutive parameters whose keys
// share the prefix before the last '.' ("conv1.weight", "conv1.bias" -> "conv1"). geomx-cnn has five: conv1,
// conv2, fc1, fc2, fc3. Frozen parameters get no gradient, so no optimizer state, and are left out of
// Module::TrainableParameters(), hence out of the parameter-server keys (ps::KeySchemaFromModule): they never
// travel. Not thread-safe (one thread builds a model).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "nn/module.h"

namespace geomx::nn {

// The layer names of `model` in order ("conv1", "conv2", ...; a parameter without '.' is its own layer).
std::vector<std::string> ParameterLayers(Module& model);

// Freezes the parameters of the first `n` layers (ParameterLayers). kInvalidArgument when n < 0 or n is not less
// than the number of layers (at least the last layer must train), naming both numbers.
Status FreezeLayers(Module& model, int n);

struct InitFromReport {
  std::vector<std::string> loaded;       // parameters and buffers copied from the checkpoint
  std::vector<std::string> kept_fresh;   // in both but of another shape or dtype (a new head): left as initialised
  std::vector<std::string> not_in_file;  // model tensors the checkpoint lacks: left as initialised
};

// Copies into `model` every parameter and buffer of the geomx checkpoint at `path` whose name and shape match;
// optimizer state and tensors the model lacks are ignored. `model_name` is the recipe's model ("geomx-cnn").
// Errors, before anything changes: the file's own (nn::ReadTensorFile: kNotFound, kDataLoss for a file that is
// not a geomx checkpoint, kUnimplemented); kInvalidArgument when the checkpoint was written for another model
// (its model name differs) or when no tensor matches.
Result<InitFromReport> InitFromCheckpoint(const std::filesystem::path& path, const std::string& model_name,
                                          Module& model);

}  // namespace geomx::nn
