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

// On-disk constants; the byte layout is specified in docs/checkpoint_format.md (change both together).
inline constexpr char kCheckpointMagic[8] = {'G', 'E', 'O', 'M', 'X', 'C', 'K', 'P'};
inline constexpr uint32_t kCheckpointVersion = 1;  // bump on any layout change (see the doc's version policy)
// Names of optimizer state entries in the file: this prefix + Optimizer::StateDict() name ("key/slot").
inline constexpr char kCheckpointOptimizerPrefix[] = "optimizer/";

struct CheckpointMeta {
  int64_t iteration = 0;   // completed iterations
  int64_t epoch = 0;       // completed epochs
  int64_t optimizer_step = 0;
  std::string model_name;  // for a clear error when loading into another model
  std::string extra_json = "{}";  // free-form (rng state, best accuracy...), written by the caller
};

// Saves every parameter and buffer of `model` (under their keys) and, if non-null, the optimizer state (under
// kCheckpointOptimizerPrefix; meta.optimizer_step is then taken from optimizer->step()). Device tensors are
// copied to the host. Writes "<path>.tmp", syncs it, renames it over `path`; on failure the .tmp is removed
// (WriteFileAtomically, engine/base/file_write.h): kResourceExhausted when the disk is full, kInternal when the
// file cannot be written otherwise (both name the path and the errno text; runtime failures, exit code 1).
Status SaveCheckpoint(const std::filesystem::path& path, Module& model, const Optimizer* optimizer,
                      const CheckpointMeta& meta);
// Loads into `model` (names and shapes must match exactly; errors name the tensor) and, if non-null, the
// optimizer. kDataLoss for a corrupt/truncated file (names the offset), kInvalidArgument for a mismatch,
// kNotFound for a missing file, kUnimplemented for a newer format version. All-or-nothing: everything is
// validated before the model or the optimizer changes. Tensors are copied onto the devices the model lives on.
// `meta` (may be null) receives the stored meta.
Status LoadCheckpoint(const std::filesystem::path& path, Module& model, Optimizer* optimizer,
                      CheckpointMeta* meta);

// Low-level: the tensor map and meta as stored (used by tests and `geomx data inspect` style tooling).
// Write: same atomic .tmp + rename protocol and errors as SaveCheckpoint; names must be non-empty.
// Read: `tensors` receives host tensors; errors as LoadCheckpoint's file errors. Either output may be null.
Status WriteTensorFile(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                       const CheckpointMeta& meta);
Status ReadTensorFile(const std::filesystem::path& path, std::map<std::string, Tensor>* tensors,
                      CheckpointMeta* meta);

}  // namespace geomx::nn
