// The smaller subcommands of the geomx CLI. Each returns a Status; main.cc maps it to the exit code
// (0 ok, 2 user error, 1 runtime failure). They print their results to stdout.
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::cli {

// `geomx eval RUN [RECIPE]`: test metrics of a run folder (neural: its last checkpoint; algorithm: its model.gxm) or
// of a .ckpt file. Without RECIPE, RUN must be a run folder (its recipe.yaml is used).
Status RunEvalCommand(const std::string& checkpoint, const std::string& recipe, const std::vector<std::string>& sets,
                      bool json);

// `geomx predict RUN INPUT --out FILE` for a neural-network run folder (its recipe and last checkpoint): INPUT is an
// IDX image file (mnist, fashion-mnist models) or csv/libsvm rows (table models); FILE gets the predicted class and
// the class probabilities per example, written atomically.
Status RunNeuralPredict(const std::string& run, const std::string& input, const std::string& out);

// `geomx data list`: known datasets, where `path: auto` looks, and whether the files are there.
Status RunDataListCommand();
// `geomx data inspect FILE`: format, counts, shapes, class histogram.
Status RunDataInspectCommand(const std::string& path);

// `geomx algos [NAME]`: the algorithm catalogue; with NAME, one trainable algorithm and its parameters.
Status RunAlgosCommand(bool all, const std::string& name);
// `geomx version`: version, build options, library versions.
Status RunVersionCommand();

}  // namespace geomx::cli
