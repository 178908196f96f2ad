// The rules of a recipe's `topology` section that involve more than one key (docs/recipes.md, "Topology"):
// at least one data centre, every data centre named, names unique, no two schedulers on one host:port, heartbeat
// timeout longer than the interval. Single keys (ranges, name syntax, units) are checked by the schema
// (cli/recipe_schema.h); cli/recipe.cc turns each violation into a "file:line:col: path: message" error.
// Pure function; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/recipe.h"

namespace geomx::cli {

struct TopologyRuleViolation {
  std::vector<std::string> at;  // keys whose YAML position the error takes, first given wins ("topology" last)
  std::string path;             // the key the message is about: "topology.datacentres[1].name"
  std::string message;          // "duplicate data centre name 'dc-a' (also topology.datacentres[0].name)"
};

// `has_error(path)` is true for keys that already have an error; rules involving them are skipped, so one mistake
// gives one message.
std::vector<TopologyRuleViolation> CheckTopologyRules(const Recipe& recipe,
                                                      const std::function<bool(const std::string&)>& has_error);

}  // namespace geomx::cli
