// RecipeToYaml (declared in cli/recipe.h): the resolved recipe, every key in schema order, as YAML that
// ParseRecipe reads back to the same Recipe.
#include <algorithm>
#include <string>
#include <vector>

#include "cli/recipe.h"
#include "cli/recipe_schema.h"

namespace geomx::cli {

std::string RecipeToYaml(const Recipe& recipe) {
  std::string source = recipe.source;
  std::replace(source.begin(), source.end(), '\n', ' ');
  std::string out = "# every key with its value" + (source.empty() ? std::string() : ", resolved from " + source) +
                    " (keys: docs/recipes.md)\n";
  std::vector<std::string> open;  // the sections printed so far, outermost first
  for (const RecipeKey& key : RecipeKeys()) {
    // A recipe without a topology trains in one process; printing one would change that.
    if (IsRecipeItemKey(key) || (IsTopologyPath(key.path) && !recipe.has_topology)) continue;
    // An algorithm recipe has no network: printing `model` or `optimizer` would add a section it must not have.
    const bool algorithm_key = key.path.rfind("algorithm.", 0) == 0;
    if (algorithm_key != recipe.has_algorithm && (algorithm_key || key.path.rfind("model.", 0) == 0)) continue;
    if (recipe.has_algorithm && key.path.rfind("optimizer.", 0) == 0) continue;
    std::vector<std::string> parts;
    std::string_view p = key.path;
    for (size_t dot = p.find('.'); dot != std::string_view::npos; p.remove_prefix(dot + 1), dot = p.find('.')) {
      parts.emplace_back(p.substr(0, dot));
    }
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    open.resize(common);
    for (size_t i = common; i < parts.size(); ++i) {
      out += std::string(2 * i, ' ') + parts[i] + ":\n";
      open.push_back(parts[i]);
    }
    std::string indent(2 * parts.size(), ' ');
    if (KindOf(key) == RecipeValueKind::kRecordList && RecipeListSize(key, recipe) > 0) {
      out += indent + std::string(p) + ":\n";  // block style: one "- key: value" group per item
      for (size_t i = 0; i < RecipeListSize(key, recipe); ++i) {
        bool first = true;
        for (const RecipeKey* item_key : RecipeItemKeys(key)) {
          std::string_view leaf = item_key->path.substr(item_key->path.rfind('.') + 1);
          out += indent + (first ? "  - " : "    ") + std::string(leaf) + ": " + RecipeValueText(*item_key, recipe, i) +
                 "\n";
          first = false;
        }
      }
      continue;
    }
    out += indent + std::string(p) + ": " + RecipeValueText(key, recipe) + "\n";
    if (key.path == "algorithm.name") {
      for (const auto& [name, value] : recipe.algorithm.params) out += indent + name + ": " + value + "\n";
    }
  }
  return out;
}

}  // namespace geomx::cli
