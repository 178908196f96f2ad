// Checkpoints: a versioned binary file of named tensors plus training state (docs/checkpoint_format.md).
// Writes go to "<path>.tmp" then rename(), so a crash never leaves a half-written checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "engine/base/status.h"
#include "engine/tensor.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace geomx::nn {

struct CheckpointMeta {
  int64_t iteration = 0;   // completed iterations
  int64_t epoch = 0;       // completed epochs
  int64_t optimizer_step = 0;
  std::string model_name;  // for a clear error when loading into another model
  std::string extra_json = "{}";  // free-form (rng state, best accuracy...), written by the caller
};

// Saves every parameter and buffer of `model` and, if non-null, the optimizer state.
Status SaveCheckpoint(const std::filesystem::path& path, Module& model, const Optimizer* optimizer,
                      const CheckpointMeta& meta);
// Loads into `model` (names and shapes must match exactly; errors name the tensor) and, if non-null, the
// optimizer. kDataLoss for a corrupt/truncated file (names the offset), kInvalidArgument for a mismatch.
Status LoadCheckpoint(const std::filesystem::path& path, Module& model, Optimizer* optimizer,
                      CheckpointMeta* meta);

// Low-level: the tensor map and meta as stored (used by tests and `geomx data inspect` style tooling).
Status WriteTensorFile(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                       const CheckpointMeta& meta);
Status ReadTensorFile(const std::filesystem::path& path, std::map<std::string, Tensor>* tensors,
                      CheckpointMeta* meta);

}  // namespace geomx::nn
