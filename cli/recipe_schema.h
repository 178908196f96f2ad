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
#include "engine/base/closest_name.h"
#include "comm/topology.h"

namespace geomx::cli {

// `data.partition` is one string, "iid" | "by-class" | "dirichlet(ALPHA)", stored as kind + alpha.
struct PartitionField {
  data::PartitionKind* kind;
  float* alpha;
};

// Link fields of a data centre's own uplink may also be the word `wan` (kInheritWord): "as topology.links.wan",
// stored as comm::DataCentre::kInheritLink.
inline constexpr std::string_view kInheritWord = "wan";

// A link bandwidth in bits per second, written "50mbit" (cli/recipe_units.h).
struct BandwidthField {
  double* bits_per_second;
  bool inherit = false;  // `wan` is allowed
};
// A duration, written "25ms" / "2s" (cli/recipe_units.h), stored in exactly one of the two forms.
struct DurationField {
  int* millis = nullptr;
  double* seconds = nullptr;
  bool inherit = false;  // `wan` is allowed (seconds only)
};
// A packet loss rate in [0, 1), written "2%" or "0.02" (cli/recipe_units.h).
struct LossField {
  double* rate;
  bool inherit = false;  // `wan` is allowed
};

// Where a key's value lives inside a Recipe (borrowed pointers into the Recipe passed to RecipeKey::field).
// std::vector<comm::DataCentre>* and std::vector<comm::DirectLink>* are lists of mappings: their items' keys are
// the rows "<path>[].<name>".
using RecipeField = std::variant<std::string*, bool*, int*, int64_t*, uint64_t*, float*, std::vector<int>*,
                                 std::vector<int64_t>*, PartitionField, BandwidthField, DurationField, LossField,
                                 std::vector<comm::DataCentre>*, std::vector<comm::DirectLink>*>;

// How a key's value is written in YAML.
enum class RecipeValueKind : uint8_t {
  kString,
  kBool,
  kInteger,
  kNumber,
  kIntegerList,
  kPartition,
  kBandwidth,
  kDuration,
  kLoss,
  kRecordList,  // a list of mappings ("topology.datacentres")
};

// Numeric bounds of a value (of each element, for lists). Unset sides are unbounded.
struct RecipeRange {
  bool has_min = false;
  double min = 0;
  bool min_open = false;  // min itself is excluded
  bool has_max = false;
  double max = 0;
  bool max_open = false;
};

// A key is either plain ("data.batch_size": `field` is set) or a key of every item of a list of mappings
// ("topology.datacentres[].workers": `item_field` is set, and "topology.datacentres" is the list's own key).
struct RecipeKey {
  std::string_view path;                                 // "data.batch_size"; sections are the dotted prefixes
  RecipeField (*field)(Recipe&) = nullptr;               // the member this key sets
  RecipeField (*item_field)(Recipe&, size_t) = nullptr;  // item keys: the member of item i (i < list size)
  RecipeRange range;                      // numbers, list elements, durations (in seconds)
  std::vector<std::string_view> allowed;  // closed set of string values; empty = see check/allowed_doc
  std::string_view noun;                  // names the thing in "unknown <noun> 'x'" (default "value")
  std::string_view help;                  // one line for docs/recipes.md
  std::string_view allowed_doc;           // docs text for the allowed values when `allowed` cannot say it
  // Extra check of a scalar string value (name syntax, device syntax); returns "" or the problem.
  std::string (*check)(std::string_view value) = nullptr;
  int min_items = 0;        // lists: at least this many elements
  int max_items = 1 << 20;  // lists: at most this many elements
};

// Every key, in the order RecipeToYaml prints them; sections are contiguous (cli/recipe_keys.cc).
const std::vector<RecipeKey>& RecipeKeys();
// The key with this exact dotted path, or nullptr.
const RecipeKey* FindRecipeKey(std::string_view path);
// True when `path` is a section ("model", "optimizer.schedule"): a proper prefix of some key.
bool IsRecipeSection(std::string_view path);
// Direct children (last path segment) of a section ("" = top level), in table order: the did-you-mean candidates.
std::vector<std::string> RecipeSectionChildren(std::string_view section);

// True for the keys of the items of a list of mappings ("topology.datacentres[].name").
bool IsRecipeItemKey(const RecipeKey& key);
// The list key an item key belongs to ("topology.datacentres" for "topology.datacentres[].name").
const RecipeKey& RecipeListKeyOf(const RecipeKey& item_key);
// The items of a list-of-mappings key in `recipe` (its current length).
size_t RecipeListSize(const RecipeKey& list_key, const Recipe& recipe);
// Replaces the list's items by `n` default items.
void ResetRecipeList(const RecipeKey& list_key, size_t n, Recipe* recipe);
// The path of item `index`'s key as users write it: "topology.datacentres[1].workers".
std::string RecipeItemPath(const RecipeKey& item_key, size_t index);
// The item keys of a list key, in table order.
std::vector<const RecipeKey*> RecipeItemKeys(const RecipeKey& list_key);
// True for "topology" and every path below it (indexed or not): the keys that give a recipe a topology.
bool IsTopologyPath(std::string_view path);

RecipeValueKind KindOf(const RecipeKey& key);

// Parses one scalar (YAML text, already unquoted) into the key's field of `*recipe` (of its item `index`, for item
// keys; the list must be long enough), then checks its range, allowed values and syntax. Returns "" on success,
// else the problem without location or key path ("expected an integer, got 'abc'"). Not for list keys.
std::string SetRecipeScalar(const RecipeKey& key, std::string_view text, Recipe* recipe, size_t index = 0);
// Parses one list element; checks its range. Returns "" or the problem.
std::string ParseRecipeListItem(const RecipeKey& key, std::string_view text, int64_t* value);
// Stores a parsed list; checks its length. Returns "" or the problem.
std::string SetRecipeList(const RecipeKey& key, const std::vector<int64_t>& items, Recipe* recipe);

// The key's value in `recipe` (item `index`'s, for item keys) as YAML text that SetRecipeScalar / the list parser
// read back to the same value (floats in shortest round-trip form, lists in flow style, strings quoted when YAML
// needs it; a list of mappings as [{name: dc-a, ...}, ...]).
std::string RecipeValueText(const RecipeKey& key, const Recipe& recipe, size_t index = 0);
// For docs and errors: "integer", "number", "boolean", "string", "list of integers", "bandwidth", "duration",
// "loss rate", "list of mappings".
std::string RecipeTypeText(const RecipeKey& key);
// For docs and errors: "relu, tanh, sigmoid, gelu", ">= 1", "[0, 1)", or allowed_doc; "" when unconstrained.
std::string RecipeAllowedText(const RecipeKey& key);

// The Markdown key reference of docs/recipes.md (one table per section, generated from the table).
std::string RecipeSchemaMarkdown();

// "Did you mean" for recipe keys and flag values (engine/base/closest_name.h).
using ::geomx::ClosestName;

}  // namespace geomx::cli
