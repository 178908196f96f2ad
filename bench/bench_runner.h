// `geomx bench RECIPE --configs ...`: runs the recipe's job once per configuration (and repeat), each as a
// `geomx train RECIPE --set ...` child process with its own run folder under the bench folder, the DDP peer as
// bench/peers/ddp_train.py, then writes the table (stdout), bench.csv, bench.json and the PNG charts.
// A configuration that fails (its recipe is rejected, a role fails) is reported as failed with its error; the
// others still run.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::bench {

// The flags of `geomx bench RECIPE` (declared to CLI11 in bench_commands.cc).
struct BenchRecipeFlags {
  std::string recipe;
  std::string configs = "flat-ps,hips";
  std::vector<std::string> sets;  // applied to every configuration, before the preset's
  std::string wan;                // RATE/DELAY, e.g. 50mbit/25ms; empty = the recipe's
  double target_accuracy = -1;    // < 0: the recipe's training.target_accuracy
  double max_time_s = 0;          // per configuration run; 0 = no limit
  int repeat = 1;
  bool netns = false;             // real Linux shaping (root)
  std::string tcp_cc;             // --netns: the namespaces' TCP congestion control ("": the host's)
  std::string out;                // bench folder; default runs/bench-<name>-<timestamp>
  std::string python = "/usr/bin/python3";
  std::string ddp_script;         // default bench/peers/ddp_train.py next to the source tree
};

Status RunBenchRecipe(const BenchRecipeFlags& flags, const std::atomic<bool>* interrupted);

}  // namespace geomx::bench
