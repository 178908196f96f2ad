// `geomx train RECIPE`: validates everything first (recipe, device, data, model, optimizer), then creates the run
// folder, trains with progress, evaluation, metrics and checkpoints, and writes summary.json.
// Exit codes (via the returned Status): OK -> 0; user errors -> 2 (nothing created); runtime failures -> 1
// (summary.json says "failed" with the cause); kCancelled on Ctrl-C after a final checkpoint -> 130.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace geomx::cli {

// Where a party's processes run when `geomx bench --netns` shapes the WAN with network namespaces
// (bench/netns.h): cli/local_topology.cc starts them as `ip netns exec NS ...` and uses IP as the party's host.
struct PartyNetns {
  std::string ns;  // network namespace
  std::string ip;  // the party's address inside it
};

struct TrainFlags {
  std::string recipe;              // path to the YAML recipe (optional with --resume: must then match the run's)
  std::vector<std::string> sets;   // --set key.path=value overrides
  std::string out;                 // --out DIR (default runs/<name>-<timestamp>)
  std::string resume;              // --resume RUN_DIR: continue from its last checkpoint with its recipe.yaml
  bool dry_run = false;            // --dry-run: print the resolved recipe and the plan, then exit
  // --party-netns PARTY=NS@IP (repeatable, hidden; internal to `geomx bench --netns`): party -> its namespace.
  // Empty: every process of a topology runs on loopback.
  std::map<std::string, PartyNetns> party_netns;
};

// One --party-netns value, "PARTY=NS@IP", added to `out` (a party given twice keeps the last). kInvalidArgument
// when a part is missing or empty.
Status ParsePartyNetns(std::string_view value, std::map<std::string, PartyNetns>* out);
// The inverse: "PARTY=NS@IP".
std::string FormatPartyNetns(const std::string& party, const PartyNetns& where);

// `interrupted` is set by the SIGINT handler; the trainer checkpoints and stops when it turns true.
Status RunTrainCommand(const TrainFlags& flags, const std::atomic<bool>* interrupted);

}  // namespace geomx::cli
