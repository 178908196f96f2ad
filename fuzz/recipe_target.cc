// recipe: the YAML recipe loader (cli/recipe.h). Input: YAML text, optionally followed by "\n---overrides---\n"
// and one --set override ("a.b=c") per line.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli/recipe.h"
#include "fuzz/targets.h"

namespace geomx::fuzz {

Status FuzzRecipe(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return Status::OutOfRange("input too large");
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSplit = "\n---overrides---\n";
  const size_t split = input.find(kSplit);
  const std::string yaml(input.substr(0, split));
  std::vector<std::string> overrides;
  if (split != std::string_view::npos) {
    std::string_view rest = input.substr(split + kSplit.size());
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      overrides.emplace_back(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
  }
  Result<cli::Recipe> recipe = cli::ParseRecipe(yaml, "<fuzz>", overrides);
  if (!recipe.ok()) {
    if (recipe.status().message().empty()) internal::Broken("recipe", "an error without a message");
    return recipe.status();
  }
  // The resolved recipe "as YAML that ParseRecipe accepts again" (cli/recipe.h).
  const std::string again = cli::RecipeToYaml(*recipe);
  Result<cli::Recipe> reparsed = cli::ParseRecipe(again, "<fuzz>");
  if (!reparsed.ok()) {
    std::fprintf(stderr, "%s\n---\n%s\n", again.c_str(), reparsed.status().ToString().c_str());
    internal::Broken("recipe", "RecipeToYaml of an accepted recipe does not parse again");
  }
  const std::string third = cli::RecipeToYaml(*reparsed);
  if (third != again) {
    std::fprintf(stderr, "first resolution:\n%s\n---\nsecond resolution:\n%s\n", again.c_str(), third.c_str());
    internal::Broken("recipe", "RecipeToYaml is not a fixed point");
  }
  return Status::Ok();
}

}  // namespace geomx::fuzz
