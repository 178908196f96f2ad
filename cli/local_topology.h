// A recipe's whole topology on this machine: `geomx train RECIPE` (no role flags) starts every role as its own
// process on loopback by re-executing itself with role flags, supervised by a Launcher (docs/deployment.md):
//
//   central/global-scheduler     geomx serve --role global-scheduler RECIPE ...
//   central/global-server<r>     geomx serve --role global-server RECIPE --rank r ...
//   <dc>/scheduler               geomx serve --role scheduler RECIPE --party <dc> ...
//   <dc>/server<r>               geomx serve --role server RECIPE --party <dc> --rank r ...
//   <dc>/worker<r>               geomx train RECIPE --party <dc> --rank r ...
//   central/master-worker        geomx serve --role master-worker RECIPE ...
//   central/state-server         geomx serve --role state-server RECIPE ...   (sync.mode esync only)
//
// Every child gets the user's --set flags, then the scheduler ports (free ports picked here for those the recipe
// leaves at 0) and loopback hosts as more --set flags, then --out RUN_DIR, so all processes resolve the same
// recipe. Not thread-safe (one call at a time; RunLocalTopology blocks).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "cli/launcher.h"
#include "cli/recipe.h"
#include "cli/roles.h"
#include "cli/train_command.h"
#include "engine/base/status.h"

namespace geomx::cli {

struct PlannedProcess {
  RoleSpec spec;
  std::string name;               // "dc-a/worker0" (ProcessName)
  std::vector<std::string> argv;  // argv[0] is the geomx executable
  std::string listens;            // "127.0.0.1:41234" for schedulers; "" = an ephemeral port it registers
  bool may_fail = false;          // a worker under topology.failure_policy: continue (ChildSpec::may_fail)
  bool restartable = false;       // started again when it fails (topology.worker_restarts; ChildSpec::restartable)
};

struct LocalTopologyPlan {
  std::vector<PlannedProcess> processes;  // in start order
  std::string run_dir;                    // passed to every process as --out
  bool secure = false;                    // CurveZMQ on (cli/security.h) for the hosts of this plan
  std::string keys;                       // the key directory the processes use (when secure)
  // RUN/keys when security is on and the recipe names no security.keys: RunLocalTopology writes a key pair for
  // every process there before starting them (each gets --set security.keys=RUN/keys).
  std::string generated_keys;
};

// Builds the plan for `recipe` (which has a topology) run with `flags`, re-executing `exe`. Picks free loopback
// ports for schedulers whose recipe port is 0. The run folder is flags.resume, else flags.out, else
// runs/<name>-<timestamp>; it is not created here. Fails when no port can be picked. A party listed in
// flags.party_netns (`geomx bench --netns`) has its processes started as `ip netns exec NS EXE ...` and the
// namespace's address as its host instead of loopback.
Result<LocalTopologyPlan> PlanLocalTopology(const TrainFlags& flags, const Recipe& recipe, const std::string& exe);

// The plan as text for `geomx train --dry-run`: one block per process (name, role, where it listens, its command
// line, shell-quoted), then the run folder, the links and the security line.
std::string FormatLocalTopologyPlan(const LocalTopologyPlan& plan, const Recipe& recipe);

// `geomx train RECIPE --dry-run` for a recipe with a topology: plans with this executable and prints the plan
// to stdout. Starts nothing.
Status PrintLocalTopologyPlan(const TrainFlags& flags, const Recipe& recipe);

// The Launcher's view of the plan.
std::vector<ChildSpec> ChildSpecsOf(const LocalTopologyPlan& plan);

// Plans the topology with this executable (/proc/self/exe), starts every process and waits (Launcher::Wait: OK
// when all exit 0; the first failure stops the rest and is reported with its last log lines; Ctrl-C is forwarded
// as SIGINT and returns kCancelled). The caller creates the run folder first if the roles need it.
Status RunLocalTopology(const TrainFlags& flags, const Recipe& recipe, const std::atomic<bool>* interrupted);

}  // namespace geomx::cli
