// `geomx bench ...`: the benchmark subcommands and their wiring into the CLI. cli/main.cc calls AddBenchCommands
// before parsing and RunBenchCommand when BenchCommandChosen; it is the only file of cli/ that sees bench/.
//
//   geomx bench RECIPE --configs a,b   compares configurations of a recipe's job (bench_runner.h)
//   geomx bench kernels                engine vs PyTorch training samples/s (kernels_command.cc)
//   geomx bench comm                   parameter server vs raw ZeroMQ ping-pong (comm_command.cc, comm_bench.h)
//   geomx bench algos                  classical estimators vs scikit-learn / LIBLINEAR / LIBSVM (algos_bench.h)
//   geomx bench soak                   every role over inproc ZeroMQ for 10,000 rounds: deadlock, values, RSS
//                                      (soak_command.cc, soak_bench.h)
//
// Every command returns a Status (main.cc maps it to the exit code) and prints its results to stdout. No
// thresholds: the numbers are reported, never asserted (except soak's pass/fail: no deadlock, right values, flat
// memory).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/algos_bench.h"
#include "bench/bench_runner.h"
#include "engine/base/status.h"

namespace CLI {
class App;
}

namespace geomx::bench {

// `geomx bench kernels`: training samples/s of geomx-cnn against PyTorch in the same run (kernels_command.cc).
struct BenchKernelsFlags {
  std::string model = "cnn";  // cnn (geomx-cnn), lstm or gru (the rnn model, 128 units, model.cell), gan
  std::vector<int> batch_sizes = {32, 64};
  std::vector<int> threads = {1, 2};
  int iterations = 60;  // timed iterations per configuration (after warm-up)
  int warmup = 10;
  std::string python = "/usr/bin/python3";
  std::string torch_script;  // bench/peers/torch_cnn.py by default (found next to the binary's source tree)
  bool skip_torch = false;
  std::string json_out;  // also write the table as JSON here
  std::string data = "auto";  // the Fashion-MNIST directory both sides train on (bench/kernels_data.h)
};
// `interrupted` (may be null) stops the PyTorch peer (Ctrl-C); the run then reports kCancelled.
Status RunBenchKernelsCommand(const BenchKernelsFlags& flags, const std::atomic<bool>* interrupted);

// `geomx bench comm`: push+pull throughput of the parameter server (KvWorker::PushPull over ZmqVan) next to a raw
// ZeroMQ ping-pong, both over tcp://127.0.0.1 in this process, with the ratio (comm_command.cc, comm_bench.h).
struct BenchCommFlags {
  std::vector<size_t> sizes = {4096, 4194304};  // bytes each way per round trip (multiples of 4)
  int iterations = 0;    // timed round trips per size, path and repeat; 0 = by size (2000 for 4 KB, 50 for 4 MB)
  int warmup = -1;       // untimed round trips before each timing; -1 = iterations / 10, at least 2
  int repeats = 5;       // raw and kv timed alternately this many times; the medians are reported
  std::string json_out;  // also write the table as JSON here
};
Status RunBenchCommCommand(const BenchCommFlags& flags);

// `geomx bench soak`: a topology's every role as threads over inproc ZeroMQ for many synchronous rounds of
// push+pull through both tiers, each pulled value checked, resident memory sampled (soak_command.cc,
// soak_bench.h). Unlike the other commands it judges: exit 1 on a deadlock, a wrong value or a drift above the
// limit.
struct BenchSoakFlags {
  int64_t rounds = 10000;
  int datacentres = 4;
  int workers_per_dc = 8;
  uint64_t key_bytes = 64 << 10;  // pushed (and pulled) per worker and round, over 4 dense keys
  double max_drift_percent = 5;   // resident-memory growth after the warm-up that still passes
  int deadline_s = 60;            // no round completed for this long = deadlock
  std::string json_out;           // also write the figures as JSON here
};
Status RunBenchSoakCommand(const BenchSoakFlags& flags, const std::atomic<bool>* interrupted);

// What the command line chose under `geomx bench`, filled by CLI11 during the app's parse.
struct BenchCommandLine {
  BenchRecipeFlags recipe;  // `geomx bench RECIPE ...`
  BenchKernelsFlags kernels;
  BenchCommFlags comm;
  BenchAlgosFlags algos;
  BenchSoakFlags soak;
  CLI::App* bench_cmd = nullptr;  // the subcommands, owned by the app (set by AddBenchCommands)
  CLI::App* kernels_cmd = nullptr;
  CLI::App* comm_cmd = nullptr;
  CLI::App* algos_cmd = nullptr;
  CLI::App* soak_cmd = nullptr;
};

// Adds `bench` (the RECIPE form with its options) and its subcommands `kernels`, `comm`, `algos` and `soak` to
// `app`. `cl` receives the flags; it must outlive app->parse and RunBenchCommand.
void AddBenchCommands(CLI::App* app, BenchCommandLine* cl);

// After the app's parse: true when the user chose `geomx bench ...`.
bool BenchCommandChosen(const BenchCommandLine& cl);

// Runs what was chosen. kInvalidArgument for `geomx bench` without a RECIPE or a subcommand. `interrupted` is set
// by the Ctrl-C handler (may be null).
Status RunBenchCommand(const BenchCommandLine& cl, const std::atomic<bool>* interrupted);

}  // namespace geomx::bench
