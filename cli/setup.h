// Builds what every model-running command needs from a Recipe: the device, the dataset splits and the model
// (with its input geometry taken from the data). Shared by `geomx train` and `geomx eval`.
#pragma once

#include <functional>
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

// `status`, an error from opening the recipe's data, in the recipe's terms: when data.path (or data.test_path)
// names nothing on disk, or `path: auto` found no data set, the message starts with the key's file:line:column
// (or --set flag) from recipe.origins. Other errors (a malformed data file: they name the file and the line or
// offset) are returned unchanged, as is Ok.
Status DataErrorInRecipeTerms(const Recipe& recipe, const Status& status);

// Every failure here is the user's input (recipe, data files, device): the Status says which, with the key path.
// The model's first model.freeze layers are frozen (nn/transfer.h). With `start_weights` the weights of
// model.init_from are loaded (the log lists the tensors that kept their fresh initialisation); eval and predict
// pass false, as they load a checkpoint over every weight.
Result<RunSetup> PrepareRun(const Recipe& recipe, bool start_weights = true);

// training.eval_async: a factory of models of `setup`'s architecture on its device, for the trainer's evaluation
// copy (train::TrainerOptions::make_eval_model); empty when the recipe evaluates in line.
std::function<std::unique_ptr<nn::Module>()> EvalModelFactory(const Recipe& recipe, const RunSetup& setup);

// Training only (not eval/predict): data.batch_size must not exceed the training examples of any worker, i.e. the
// training set with one process, or the smallest share data.partition gives a worker of the recipe's topology.
// kInvalidArgument at the data.batch_size key naming both numbers (and the worker) otherwise.
Status CheckBatchFitsTrainingSet(const Recipe& recipe, const data::Dataset& train);

}  // namespace geomx::cli
