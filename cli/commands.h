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

// `geomx plot RUN [RUN...] [--out FILE.png]`: the training curves of run folders as one PNG (cli/plot.h, PlotRuns),
// then a line naming the file on stdout. Default FILE: RUN/curves.png for one run; several runs need `out`.
Status RunPlotCommand(const std::vector<std::string>& runs, const std::string& out);

// `geomx data list`: known datasets, where `path: auto` looks, and whether the files are there.
Status RunDataListCommand();
// `geomx data inspect FILE`: format, counts, shapes, class histogram.
Status RunDataInspectCommand(const std::string& path);

struct DataFetchFlags {
  std::string name;    // fashion-mnist, mnist or cifar10
  std::string dir;     // --dir: target directory ("": data/NAME, where `path: auto` looks)
  std::string mirror;  // --mirror: base URL replacing the official source
  bool force = false;  // --force: download again over files that fail verification
};
// `geomx data fetch NAME`: downloads, verifies (SHA-256) and unpacks a data set (datasets/fetch.h). Progress lines
// go to stdout, a percentage to stderr when it is a terminal. Exit codes as FetchDataset's errors say: 2 for an
// unknown name or an existing file that fails verification without --force, 1 for network errors and checksum
// mismatches of downloads.
Status RunDataFetchCommand(const DataFetchFlags& flags);

// `geomx algos [NAME]`: the algorithm catalogue; with NAME, one trainable algorithm and its parameters.
Status RunAlgosCommand(bool all, const std::string& name);
// `geomx version`: version, build options, library versions.
Status RunVersionCommand();

}  // namespace geomx::cli
