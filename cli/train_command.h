// `geomx train RECIPE`: validates everything first (recipe, device, data, model, optimizer), then creates the run
// folder, trains with progress, evaluation, metrics and checkpoints, and writes summary.json.
// Exit codes (via the returned Status): OK -> 0; user errors -> 2 (nothing created); runtime failures -> 1
// (summary.json says "failed" with the cause); kCancelled on Ctrl-C after a final checkpoint -> 130.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::cli {

struct TrainFlags {
  std::string recipe;              // path to the YAML recipe (optional with --resume: must then match the run's)
  std::vector<std::string> sets;   // --set key.path=value overrides
  std::string out;                 // --out DIR (default runs/<name>-<timestamp>)
  std::string resume;              // --resume RUN_DIR: continue from its last checkpoint with its recipe.yaml
  bool dry_run = false;            // --dry-run: print the resolved recipe and the plan, then exit
};

// `interrupted` is set by the SIGINT handler; the trainer checkpoints and stops when it turns true.
Status RunTrainCommand(const TrainFlags& flags, const std::atomic<bool>* interrupted);

}  // namespace geomx::cli
