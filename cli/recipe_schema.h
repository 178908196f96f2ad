// RecipeSchema: the one table that describes every recipe key (docs/recipes.md, docs/style.md R19).
//
// Each RecipeKey says where its value lives in a Recipe, its type, its default (read from a default-constructed
// Recipe), its allowed range or values and its help text. cli/recipe.cc walks YAML against this table (parsing,
// validation, "did you mean" hints), RecipeToYaml prints it in table order, and the reference section of
// docs/recipes.md is RecipeSchemaMarkdown() verbatim (a test compares them).
//
// Nothing here sees yaml-cpp: values arrive as scalar text. All functions are pure and thread-safe; the table
// is immutable after first use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/recipe.h"

namespace geomx::cli {

// `data.partition` is one string, "iid" | "by-class" | "dirichlet(ALPHA)", stored as kind + alpha.
struct PartitionField {
  data::PartitionKind* kind;
  float* alpha;
};

// Where a key's value lives inside a Recipe (borrowed pointers into the Recipe passed to RecipeKey::field).
using RecipeField = std::variant<std::string*, bool*, int*, int64_t*, uint64_t*, float*, std::vector<int>*,
                                 std::vector<int64_t>*, PartitionField>;

// How a key's value is written in YAML.
enum class RecipeValueKind : uint8_t { kString, kBool, kInteger, kNumber, kIntegerList, kPartition };

// Numeric bounds of a value (of each element, for lists). Unset sides are unbounded.
struct RecipeRange {
  bool has_min = false;
  double min = 0;
  bool min_open = false;  // min itself is excluded
  bool has_max = false;
  double max = 0;
  bool max_open = false;
};

struct RecipeKey {
  std::string_view path;                  // "data.batch_size"; sections are the dotted prefixes
  RecipeField (*field)(Recipe&);          // the member this key sets
  RecipeRange range;                      // numbers and list elements
  std::vector<std::string_view> allowed;  // closed set of string values; empty = see check/allowed_doc
  std::string_view noun;                  // names the thing in "unknown <noun> 'x'" (default "value")
  std::string_view help;                  // one line for docs/recipes.md
  std::string_view allowed_doc;           // docs text for the allowed values when `allowed` cannot say it
  // Extra check of a scalar string value (name syntax, device syntax); returns "" or the problem.
  std::string (*check)(std::string_view value) = nullptr;
  int min_items = 0;        // lists: at least this many elements
  int max_items = 1 << 20;  // lists: at most this many elements
};

// Every key, in the order RecipeToYaml prints them; sections are contiguous.
const std::vector<RecipeKey>& RecipeKeys();
// The key with this exact dotted path, or nullptr.
const RecipeKey* FindRecipeKey(std::string_view path);
// True when `path` is a section ("model", "optimizer.schedule"): a proper prefix of some key.
bool IsRecipeSection(std::string_view path);
// Direct children (last path segment) of a section ("" = top level), in table order: the did-you-mean candidates.
std::vector<std::string> RecipeSectionChildren(std::string_view section);
// True for the parameter-server parts of the recipe (topology, sync, accelerators, optimizer.where and anything
// below them): refused in this single-process build, never silently ignored.
bool IsDistributedOnlyPath(std::string_view path);

RecipeValueKind KindOf(const RecipeKey& key);

// Parses one scalar (YAML text, already unquoted) into the key's field of `*recipe`, then checks its range,
// allowed values and syntax. Returns "" on success, else the problem without location or key path
// ("expected an integer, got 'abc'"). Not for list keys.
std::string SetRecipeScalar(const RecipeKey& key, std::string_view text, Recipe* recipe);
// Parses one list element; checks its range. Returns "" or the problem.
std::string ParseRecipeListItem(const RecipeKey& key, std::string_view text, int64_t* value);
// Stores a parsed list; checks its length. Returns "" or the problem.
std::string SetRecipeList(const RecipeKey& key, const std::vector<int64_t>& items, Recipe* recipe);

// The key's value in `recipe` as YAML text that SetRecipeScalar / the list parser read back to the same value
// (floats in shortest round-trip form, lists in flow style, strings quoted when YAML needs it).
std::string RecipeValueText(const RecipeKey& key, const Recipe& recipe);
// For docs and errors: "integer", "number", "boolean", "string", "list of integers", "string (partition)".
std::string RecipeTypeText(const RecipeKey& key);
// For docs and errors: "relu, tanh, sigmoid, gelu", ">= 1", "[0, 1)", or allowed_doc; "" when unconstrained.
std::string RecipeAllowedText(const RecipeKey& key);

// The Markdown key reference of docs/recipes.md (one table per section, generated from the table).
std::string RecipeSchemaMarkdown();

// The candidate closest to `word` by edit distance (adjacent swaps count 1), if close enough to be a plausible
// typo; "" otherwise.
std::string ClosestName(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace geomx::cli
