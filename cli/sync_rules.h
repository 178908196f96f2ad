// The rules of a recipe's `sync` and `accelerators` sections that involve more than one key (docs/
// synchronization.md, "Compatibility"; docs/accelerators.md): which modes and accelerators need a topology, which
// combinations are refused and why. Single keys (ranges, allowed values) are checked by the schema. Each sync
// mode states its own rules next to its code (algorithms/sync/<mode>.cc, SyncModeDef::rules); here are the
// rules that hold for every mode, phrased with the modes' traits. Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/recipe.h"
#include "cli/topology_rules.h"
#include "comm/compression/link_plan.h"

namespace geomx::cli {

// The scheme of each link direction after resolving `auto` from accelerators.compression (GeoMX's presets,
// comm::ResolveLinkSchemes). The recipe schema admits only valid names; anything else resolves to none.
comm::LinkSchemes ResolveLinks(const AcceleratorsConfig& accelerators);

// Fills the defaults of recipe->sync that depend on other keys (SyncModeDef::defaults of the recipe's mode);
// `given(path)`: keys the recipe or a flag set. Nothing without a topology.
void ApplySyncDefaults(Recipe* recipe, const std::function<bool(const std::string&)>& given);

// `has_error(path)`: keys that already have an error (their rules are skipped).
std::vector<TopologyRuleViolation> CheckSyncRules(const Recipe& recipe,
                                                  const std::function<bool(const std::string&)>& has_error);

}  // namespace geomx::cli
