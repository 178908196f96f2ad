// `geomx bench RECIPE --configs ...`: runs the recipe's job once per configuration (and repeat), each as a
// `geomx train RECIPE --set ...` child process with its own run folder under the bench folder, the DDP peer as
// bench/peers/ddp_train.py, then writes the table (stdout), bench.csv, bench.json and the PNG charts.
// A configuration that fails (its recipe is rejected, a role fails) is reported as failed with its error; the
// others still run.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/launcher.h"
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

// How long a configuration's run gets after each stop signal before the next, harder one: three times a Launcher's
// default grace, because a `geomx train` child stops its own processes with SIGINT, SIGTERM and SIGKILL that far
// apart and only then writes the run's summary.json (with the default grace its own SIGKILL came first, and a run
// stopped in a long round lost its summary).
inline constexpr int kChildStopGraceMs = 3 * cli::kDefaultGracePeriodMs;

// What RunChildren saw.
struct ChildOutcome {
  Status status;
  bool timed_out = false;
  bool user_interrupt = false;
  std::string output;  // everything it printed (for the DDP peer's JSON lines), with keep_output
};
// Runs one configuration's processes under a Launcher until they exit, `max_time_s` passes (0: no limit) or
// `interrupted` is set: they then get SIGINT (workers finish the round, write their figures and stop), SIGTERM and
// SIGKILL, kChildStopGraceMs apart. Output goes to `log_path` and the evaluation lines to stdout.
ChildOutcome RunChildren(const std::vector<cli::ChildSpec>& specs, double max_time_s,
                         const std::filesystem::path& log_path, const std::atomic<bool>* interrupted,
                         bool keep_output);

}  // namespace geomx::bench
