// Helpers shared by the recipe tests: parse a recipe that must be valid, or collect the error lines of one that
// must not be. Test-only code.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cli/recipe.h"

namespace geomx::cli::recipe_testing {

using Lines = std::vector<std::string>;

// The smallest valid topology: one data centre, everything else default.
inline constexpr char kTopologyBase[] = "topology:\n  datacentres:\n    - {name: dc-a}\n";

// Parses `yaml` (named "r.yaml" in errors) with `overrides`; a failure is a test failure and yields a default Recipe.
inline Recipe MustParse(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  Result<Recipe> r = ParseRecipe(yaml, "r.yaml", overrides);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Recipe{};
}

// The error lines of a recipe that must fail validation (kInvalidArgument, one problem per line).
inline Lines ErrorLines(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  Result<Recipe> r = ParseRecipe(yaml, "r.yaml", overrides);
  EXPECT_FALSE(r.ok()) << "expected errors, got a valid recipe for:\n" << yaml;
  if (r.ok()) return {};
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  Lines lines;
  std::istringstream in(r.status().message());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every recipe of `refused` (text, what its error must contain) is refused with that text in its message.
inline void ExpectRefused(const std::vector<std::pair<std::string, std::string>>& refused) {
  for (const auto& [text, expected] : refused) {
    Result<Recipe> r = ParseRecipe(text, "r.yaml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << text << "\n" << r.status().ToString();
  }
}

}  // namespace geomx::cli::recipe_testing
