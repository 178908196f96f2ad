// The smaller subcommands of the geomx CLI. Each returns a Status; main.cc maps it to the exit code
// (0 ok, 2 user error, 1 runtime failure). They print their results to stdout.
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::cli {

// `geomx eval CHECKPOINT RECIPE`: test accuracy of a checkpoint (a .ckpt file or a run folder -> its last one).
Status RunEvalCommand(const std::string& checkpoint, const std::string& recipe, const std::vector<std::string>& sets,
                      bool json);

// `geomx data list`: known datasets, where `path: auto` looks, and whether the files are there.
Status RunDataListCommand();
// `geomx data inspect FILE`: format, counts, shapes, class histogram.
Status RunDataInspectCommand(const std::string& path);

// `geomx algos`: the algorithm catalogue.
Status RunAlgosCommand(bool all);
// `geomx version`: version, build options, library versions.
Status RunVersionCommand();

}  // namespace geomx::cli
