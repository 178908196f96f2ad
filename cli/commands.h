// The smaller subcommands of the geomx CLI. Each returns a Status; main.cc maps it to the exit code
// (0 ok, 2 user error, 1 runtime failure). They print their results to stdout.
#pragma once

#include <cstddef>
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

// `geomx bench comm`: push+pull throughput of the parameter server (KvWorker::PushPull over ZmqVan) next to a raw
// ZeroMQ ping-pong, both over tcp://127.0.0.1 in this process, with the ratio (bench_comm_command.cc,
// comm/comm_bench.h). No thresholds: the numbers are reported, never asserted.
struct BenchCommFlags {
  std::vector<size_t> sizes = {4096, 4194304};  // bytes each way per round trip (multiples of 4)
  int iterations = 0;    // timed round trips per size, path and repeat; 0 = by size (2000 for 4 KB, 50 for 4 MB)
  int warmup = -1;       // untimed round trips before each timing; -1 = iterations / 10, at least 2
  int repeats = 5;       // raw and kv timed alternately this many times; the medians are reported
  std::string json_out;  // also write the table as JSON here
};
Status RunBenchCommCommand(const BenchCommFlags& flags);

}  // namespace geomx::cli
