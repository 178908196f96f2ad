// The rules of a recipe's `sync` and `accelerators` sections that involve more than one key (docs/
// synchronization.md, "Compatibility"; docs/accelerators.md): which modes and accelerators need a topology, which
// combinations are refused and why. Single keys (ranges, allowed values) are checked by the schema. Also the one
// place that resolves `auto` links from `accelerators.compression` (GeoMX's table), so every role agrees.
// Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/recipe.h"
#include "cli/topology_rules.h"

namespace geomx::cli {

// The scheme of each link direction after resolving `auto`: "none" | "fp16" | "bsc" | "mpq".
struct ResolvedLinks {
  std::string worker_to_local = "none";
  std::string local_to_global = "none";
  std::string global_to_local = "none";
  std::string local_to_worker = "none";
  bool any() const {
    return worker_to_local != "none" || local_to_global != "none" || global_to_local != "none" ||
           local_to_worker != "none";
  }
  bool lan() const { return worker_to_local != "none" || local_to_worker != "none"; }
};

// Preset `compression` (none | bsc | fp16 | mpq), overridden per link by the `links` keys that are not `auto`:
//   none: every link dense f32;  bsc: Bi-Sparse between local and global servers, LAN dense;
//   fp16: FP16 on all four links;  mpq: mpq on all four links (small tensors FP16; large ones Bi-Sparse on the
//   WAN and f32 on the LAN).
ResolvedLinks ResolveLinks(const AcceleratorsConfig& accelerators);

// `has_error(path)`: keys that already have an error (their rules are skipped).
std::vector<TopologyRuleViolation> CheckSyncRules(const Recipe& recipe,
                                                  const std::function<bool(const std::string&)>& has_error);

}  // namespace geomx::cli
