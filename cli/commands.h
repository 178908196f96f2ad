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

// `geomx bench kernels`: training samples/s of geomx-cnn against PyTorch in the same run (bench_command.cc).
struct BenchKernelsFlags {
  std::vector<int> batch_sizes = {32, 64};
  std::vector<int> threads = {1, 2};
  int iterations = 60;  // timed iterations per configuration (after warm-up)
  int warmup = 10;
  std::string python = "/usr/bin/python3";
  std::string torch_script;  // bench/peers/torch_cnn.py by default (found next to the binary's source tree)
  bool skip_torch = false;
  std::string json_out;  // also write the table as JSON here
};
Status RunBenchKernelsCommand(const BenchKernelsFlags& flags);

}  // namespace geomx::cli
