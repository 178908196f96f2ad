// RunRole: runs one process of a parameter-server topology (docs/product.md §3, docs/deployment.md). The CLI
// resolves the role flags into a RoleSpec (cli/role_command.h: `geomx serve --role ...`, and
// `geomx train --party P --rank N` for workers); `geomx train RECIPE` on one host starts every role as its own
// process (cli/local_topology.h), each of which ends up here.
#pragma once

#include <atomic>
#include <string>

#include "cli/recipe.h"
#include "engine/base/status.h"

namespace geomx::cli {

// Which process of the topology this is. Validated against the recipe's topology before RunRole is called:
// central roles (kGlobalScheduler, kGlobalServer, kMasterWorker) have party "central"; the others name a data
// centre of recipe.topology; rank is in range for the role (0 for the schedulers and the master worker).
struct RoleSpec {
  enum class Kind { kGlobalScheduler, kGlobalServer, kScheduler, kServer, kWorker, kMasterWorker, kStateServer } kind;
  std::string party;    // a data centre's name, or "central"
  int rank = 0;         // index among the party's processes of this kind
  std::string out_dir;  // the run folder (--out); workers write metrics and checkpoints there; may be empty
  // --resume RUN (out_dir is RUN): the job continues the run from its servers' snapshots; the master worker
  // finds the round, the evaluating worker appends to the run's files.
  bool resume = false;
};

// Runs the role until training ends, a peer fails, or *interrupted turns true (Ctrl-C: workers checkpoint, then
// kCancelled). `recipe.has_topology` is true. Blocks the calling thread. Errors name the peer or the cause.
Status RunRole(const Recipe& recipe, const RoleSpec& spec, const std::atomic<bool>* interrupted);

}  // namespace geomx::cli
