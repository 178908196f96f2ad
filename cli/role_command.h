// The role flags of the CLI: `geomx serve --role ROLE RECIPE [--party P] [--rank N]` for the non-worker processes
// of a topology and `geomx train RECIPE --party P --rank N` for a worker (docs/cli.md, docs/deployment.md).
// Everything is checked against the recipe's topology before the role starts; problems are user errors (exit 2).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "cli/recipe.h"
#include "cli/roles.h"
#include "engine/base/status.h"

namespace geomx::cli {

struct RoleFlags {
  std::string role;               // serve: --role; "worker" for `train --party`
  std::string recipe;             // the recipe file
  std::vector<std::string> sets;  // --set key.path=value overrides
  std::string party;              // --party: a data centre's name, or "central"/empty for the central roles
  int rank = 0;                   // --rank
  std::string out;                // --out: the run folder
  std::string resume;             // --resume RUN: continue that run (the run folder; instead of --out)
  bool dry_run = false;           // print the resolved role and where it connects, then exit
};

// The command-line names of the roles, as `serve --role` takes them ("global-scheduler", "global-server",
// "scheduler", "server", "master-worker", "state-server").
const std::vector<std::string>& ServeRoleNames();
// "global-scheduler", ..., "worker", "master-worker".
std::string RoleName(RoleSpec::Kind kind);
// The process's name in logs and errors: "central/global-scheduler", "central/global-server0", "dc-a/scheduler",
// "dc-a/server1", "dc-a/worker0", "central/master-worker" (a rank only for roles that can have several).
std::string ProcessName(const RoleSpec& spec);

// Checks the flags against `recipe` (which must have a topology) and returns the role to run. kInvalidArgument
// names the flag at fault, e.g. "--party: unknown data centre 'dc-c' (did you mean 'dc-a'?); the recipe has:
// dc-a, dc-b". The state-server role needs sync.mode esync and topology.central.state_server_port.
Result<RoleSpec> ResolveRoleSpec(const Recipe& recipe, const RoleFlags& flags);

// One line describing the resolved role: "worker 1 of dc-a (2 workers); scheduler 10.0.0.2:9100".
std::string DescribeRole(const Recipe& recipe, const RoleSpec& spec);

// Loads the recipe (with --set), resolves the role, and runs it (cli/roles.h). A recipe without a topology is
// refused: "serve needs a recipe with a topology section".
Status RunRoleCommand(const RoleFlags& flags, const std::atomic<bool>* interrupted);

}  // namespace geomx::cli
