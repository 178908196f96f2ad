#include "cli/recipe.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "cli/recipe_schema.h"

namespace geomx::cli {
namespace {

// Where a value came from: a position in the recipe file or a --set flag. Errors are listed file first (by
// position), then flags (in the order given).
struct Origin {
  int group = 0;      // 0: the file, 1: a --set flag
  int line = 1;       // file: 1-based line; flag: its index
  int column = 1;     // file: 1-based column
  std::string where;  // "recipe.yaml:3:5" or "--set data.batch_size=8"
};

struct Issue {
  Origin origin;
  std::string text;  // the whole error line
};

constexpr std::string_view kDistributedOnly =
    "distributed training is not available in this build yet (single-process training only); ";

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "an empty value";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "'" + node.Scalar() + "'";
  }
}

std::string ExpectedText(RecipeValueKind kind) {
  switch (kind) {
    case RecipeValueKind::kString:
      return "a string";
    case RecipeValueKind::kBool:
      return "a boolean (true or false)";
    case RecipeValueKind::kInteger:
      return "an integer";
    case RecipeValueKind::kNumber:
      return "a number";
    case RecipeValueKind::kIntegerList:
      return "a list of integers, e.g. [256, 128]";
    case RecipeValueKind::kPartition:
      return "iid, by-class or dirichlet(ALPHA)";
  }
  return "a value";
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string LastSegment(std::string_view path) {
  size_t dot = path.rfind('.');
  return std::string(dot == std::string_view::npos ? path : path.substr(dot + 1));
}

// Every key and section path, for suggestions.
std::vector<std::string> AllPaths() {
  std::vector<std::string> out;
  for (const RecipeKey& key : RecipeKeys()) {
    std::string_view p = key.path;
    for (size_t dot = p.find('.'); dot != std::string_view::npos; dot = p.find('.', dot + 1)) {
      std::string section(p.substr(0, dot));
      if (std::find(out.begin(), out.end(), section) == out.end()) out.push_back(section);
    }
    out.emplace_back(p);
  }
  return out;
}

// Names people reach for that the schema spells differently.
std::string Alias(const std::string& word) {
  static const std::map<std::string, std::string> kAliases = {
      {"learning_rate", "lr"},  {"lr_schedule", "schedule"}, {"scheduler", "schedule"},
      {"batch", "batch_size"},  {"batchsize", "batch_size"}, {"dataset", "data"},
      {"optim", "optimizer"},   {"train", "training"},       {"iterations", "max_iterations"},
      {"num_epochs", "epochs"}, {"workers", "threads"},      {"num_threads", "threads"}};
  auto it = kAliases.find(word);
  return it == kAliases.end() ? "" : it->second;
}

// A path elsewhere in the schema whose last segment is `word` (a key put in the wrong section).
std::string PathEndingIn(const std::string& word) {
  if (word.empty()) return "";
  for (const std::string& p : AllPaths()) {
    if (LastSegment(p) == word) return p;
  }
  return "";
}

// Reads YAML into a Recipe against the schema, collecting every problem. Not thread-safe; one per parse.
class RecipeReader {
 public:
  explicit RecipeReader(std::string source) : source_(std::move(source)) { recipe_.source = source_; }

  Origin FileOrigin(const YAML::Mark& mark) const {
    Origin o;
    o.line = mark.line >= 0 ? mark.line + 1 : 1;
    o.column = mark.column >= 0 ? mark.column + 1 : 1;
    o.where = source_ + ":" + std::to_string(o.line) + ":" + std::to_string(o.column);
    return o;
  }

  void Error(const Origin& origin, std::string_view path, const std::string& message) {
    issues_.push_back({origin, origin.where + ": " + (path.empty() ? "" : std::string(path) + ": ") + message});
    if (!path.empty()) bad_paths_.insert(std::string(path));
  }

  void ReadDocument(const YAML::Node& root) {
    if (root.IsNull()) return;  // an empty file: all defaults
    if (!root.IsMap()) {
      Error(FileOrigin(root.Mark()), "",
            "a recipe is a mapping of sections (" + Join(RecipeSectionChildren("")) + "), got " + Describe(root));
      return;
    }
    ReadSection(root, "");
  }

  // Applies one --set flag ("key.path=value") on top of what was read so far.
  void ApplyOverride(const std::string& flag, int index) {
    Origin o;
    o.group = 1;
    o.line = index;
    o.where = "--set " + flag;
    size_t eq = flag.find('=');
    std::string path = eq == std::string::npos ? "" : flag.substr(0, eq);
    path.erase(0, path.find_first_not_of(" \t"));
    path.erase(path.find_last_not_of(" \t") + 1);
    if (path.empty()) {
      Error(o, "", "expected key.path=value, e.g. --set data.batch_size=64");
      return;
    }
    if (IsDistributedOnlyPath(path)) {
      std::string top = path.substr(0, path.find('.'));
      Error(o, top == "optimizer" ? "optimizer.where" : top, std::string(kDistributedOnly) + "remove this flag");
      return;
    }
    if (IsRecipeSection(path)) {
      Error(
          o, path,
          "is a section; set one of its keys, e.g. --set " + path + "." + RecipeSectionChildren(path).front() + "=...");
      return;
    }
    const RecipeKey* key = FindRecipeKey(path);
    if (key == nullptr) {
      size_t dot = path.rfind('.');
      std::string section = dot == std::string::npos ? "" : path.substr(0, dot);
      std::string hint = IsRecipeSection(section) ? Suggest(section, LastSegment(path), /*full_path=*/true)
                                                  : ClosestName(path, AllPaths());
      if (hint.empty()) hint = Suggest("", LastSegment(path), /*full_path=*/true);
      Error(o, "", "unknown key '" + path + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      return;
    }
    std::string text = flag.substr(eq + 1);
    bool is_string = KindOf(*key) == RecipeValueKind::kString;
    YAML::Node value;
    bool literal = false;
    try {
      value = YAML::Load(text);
      literal = is_string && !value.IsNull() && !value.IsScalar();
    } catch (const YAML::Exception& e) {
      if (!is_string) {
        Error(o, path, "invalid YAML value '" + text + "': " + e.msg);
        return;
      }
      literal = true;
    }
    // A string key takes text that YAML does not read as one scalar ("/data/a: b.csv", "[x") literally.
    if (literal) value = YAML::Node(text);
    ReadValue(*key, value, [&o](const YAML::Node&) { return o; });
  }

  // Rules that involve more than one key; skipped when one of the keys already has an error.
  void CrossCheck() {
    const Recipe& r = recipe_;
    if (r.training.stop_at_target && r.training.target_accuracy <= 0 &&
        Clean({"training.stop_at_target", "training.target_accuracy"})) {
      Error(OriginOf({"training.stop_at_target"}), "training.stop_at_target",
            "needs training.target_accuracy > 0 (the accuracy to stop at)");
    }
    if ((r.data.name == "csv" || r.data.name == "libsvm") && r.data.path == "auto" &&
        Clean({"data.name", "data.path"})) {
      Error(OriginOf({"data.path", "data.name"}), "data.path",
            r.data.name +
                " reads a file you name: set data.path to the training file (auto only finds the "
                "built-in datasets)");
    }
    if (r.lr_schedule.name == "cosine" && r.lr_schedule.min_lr > r.optimizer.lr &&
        Clean({"optimizer.schedule.name", "optimizer.schedule.min_lr", "optimizer.lr"})) {
      std::ostringstream msg;
      msg << "must be <= optimizer.lr (" << r.optimizer.lr << ") for the cosine schedule, got " << r.lr_schedule.min_lr;
      Error(OriginOf({"optimizer.schedule.min_lr", "optimizer.lr"}), "optimizer.schedule.min_lr", msg.str());
    }
  }

  Result<Recipe> Finish() {
    if (issues_.empty()) return std::move(recipe_);
    std::stable_sort(issues_.begin(), issues_.end(), [](const Issue& a, const Issue& b) {
      return std::tie(a.origin.group, a.origin.line, a.origin.column) <
             std::tie(b.origin.group, b.origin.line, b.origin.column);
    });
    std::string text;
    for (const Issue& issue : issues_) text += (text.empty() ? "" : "\n") + issue.text;
    return Status::InvalidArgument(text);
  }

 private:
  using OriginFn = std::function<Origin(const YAML::Node&)>;

  void ReadSection(const YAML::Node& map, const std::string& section) {
    std::map<std::string, int> seen;  // key -> line
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node& k = it->first;
      const YAML::Node& v = it->second;
      Origin key_origin = FileOrigin(k.Mark());
      std::string name = k.IsScalar() ? k.Scalar() : Describe(k);
      std::string path = section.empty() ? name : section + "." + name;
      if (auto [pos, fresh] = seen.emplace(name, key_origin.line); !fresh) {
        Error(key_origin, path, "duplicate key (first given at line " + std::to_string(pos->second) + ")");
        continue;
      }
      if (IsDistributedOnlyPath(path)) {
        Error(key_origin, path,
              std::string(kDistributedOnly) + (section.empty() ? "remove this section" : "remove this key"));
        continue;
      }
      if (IsRecipeSection(path)) {
        origins_[path] = key_origin;
        if (v.IsMap()) {
          ReadSection(v, path);
        } else if (!v.IsNull()) {
          Error(FileOrigin(v.Mark()), path,
                "expected a mapping of keys (" + Join(RecipeSectionChildren(path)) + "), got " + Describe(v));
        }
        continue;
      }
      if (const RecipeKey* key = FindRecipeKey(path)) {
        ReadValue(*key, v, [this, &key_origin](const YAML::Node& n) {
          return n.IsNull() ? key_origin : FileOrigin(n.Mark());  // an empty value's mark is the next token
        });
        continue;
      }
      Error(key_origin, path, UnknownKeyMessage(section, name));
    }
  }

  static std::string UnknownKeyMessage(const std::string& section, const std::string& name) {
    if (section == "data" && name == "dirichlet_alpha") {
      return "unknown key; the alpha is part of the partition, e.g. partition: dirichlet(0.5)";
    }
    std::string hint = Suggest(section, name, /*full_path=*/false);
    if (!hint.empty()) return "unknown key (did you mean '" + hint + "'?)";
    return "unknown key (" + (section.empty() ? std::string("sections and keys") : section + " has") + ": " +
           Join(RecipeSectionChildren(section)) + ")";
  }

  // The key meant by an unknown `name` in `section`: a common alias or a near miss among its siblings (as the
  // bare name, or the full path when `full_path`), else a key of that name in another section; "" if none.
  static std::string Suggest(const std::string& section, const std::string& name, bool full_path) {
    std::vector<std::string> children = RecipeSectionChildren(section);
    std::string alias = Alias(name);
    std::string hint =
        std::find(children.begin(), children.end(), alias) != children.end() ? alias : ClosestName(name, children);
    if (!hint.empty()) return full_path && !section.empty() ? section + "." + hint : hint;
    hint = PathEndingIn(name);
    return hint.empty() ? PathEndingIn(alias) : hint;
  }

  void ReadValue(const RecipeKey& key, const YAML::Node& node, const OriginFn& origin_of) {
    Origin origin = origin_of(node);
    origins_[std::string(key.path)] = origin;
    RecipeValueKind kind = KindOf(key);
    if (kind == RecipeValueKind::kIntegerList) {
      if (!node.IsSequence()) {
        Error(origin, key.path, "expected " + ExpectedText(kind) + ", got " + Describe(node));
        return;
      }
      std::vector<int64_t> items;
      bool ok = true;
      for (size_t i = 0; i < node.size(); ++i) {
        const YAML::Node& item = node[i];
        std::string item_path = std::string(key.path) + "[" + std::to_string(i) + "]";
        int64_t value = 0;
        std::string problem = item.IsScalar() ? ParseRecipeListItem(key, item.Scalar(), &value)
                                              : "expected an integer, got " + Describe(item);
        if (!problem.empty()) {
          Error(origin_of(item), item_path, problem);
          bad_paths_.insert(std::string(key.path));
          ok = false;
        }
        items.push_back(value);
      }
      if (ok) {
        std::string problem = SetRecipeList(key, items, &recipe_);
        if (!problem.empty()) Error(origin, key.path, problem);
      }
      return;
    }
    if (node.IsNull() && kind != RecipeValueKind::kString) {
      Error(origin, key.path, "expected " + ExpectedText(kind) + ", got an empty value");
      return;
    }
    if (!node.IsNull() && !node.IsScalar()) {
      Error(origin, key.path, "expected " + ExpectedText(kind) + ", got " + Describe(node));
      return;
    }
    bool quoted = node.IsScalar() && node.Tag() == "!";
    if (quoted && kind != RecipeValueKind::kString && kind != RecipeValueKind::kPartition) {
      Error(origin, key.path,
            "expected " + ExpectedText(kind) + ", got the quoted string '" + node.Scalar() + "' (remove the quotes)");
      return;
    }
    std::string problem = SetRecipeScalar(key, node.IsNull() ? "" : node.Scalar(), &recipe_);
    if (!problem.empty()) Error(origin, key.path, problem);
  }

  bool Clean(std::initializer_list<std::string_view> paths) const {
    for (auto p : paths) {
      if (bad_paths_.count(std::string(p))) return false;
    }
    return true;
  }

  // The origin of the first of `paths` that was given, else of the nearest given section, else the file start.
  Origin OriginOf(std::initializer_list<std::string_view> paths) const {
    for (auto p : paths) {
      if (auto it = origins_.find(std::string(p)); it != origins_.end()) return it->second;
    }
    std::string section(*paths.begin());
    for (size_t dot = section.rfind('.'); dot != std::string::npos; dot = section.rfind('.')) {
      section.resize(dot);
      if (auto it = origins_.find(section); it != origins_.end()) return it->second;
    }
    return FileOrigin(YAML::Mark());
  }

  std::string source_;
  Recipe recipe_;
  std::vector<Issue> issues_;
  std::map<std::string, Origin> origins_;  // path -> where its value (or section) was given; flags win
  std::set<std::string> bad_paths_;        // paths that already have an error
};

}  // namespace

Result<Recipe> ParseRecipe(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides) {
  RecipeReader reader(source);
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(yaml_text);
    if (docs.size() > 1) {
      reader.Error(reader.FileOrigin(docs[1].Mark()), "",
                   "a recipe file holds one YAML document; remove the second '---' and what follows");
    }
    reader.ReadDocument(docs.empty() ? YAML::Node() : docs[0]);
  } catch (const YAML::Exception& e) {
    // Syntax errors stop the reading of the file; the flags are still checked.
    reader.Error(reader.FileOrigin(e.mark), "", "YAML syntax error: " + e.msg);
  } catch (const std::exception& e) {
    return Status::Internal(source + ": unexpected error while reading the recipe: " + e.what());
  }
  try {
    for (size_t i = 0; i < overrides.size(); ++i) reader.ApplyOverride(overrides[i], static_cast<int>(i));
    reader.CrossCheck();
  } catch (const std::exception& e) {
    return Status::Internal(source + ": unexpected error while applying --set: " + e.what());
  }
  return reader.Finish();
}

Result<Recipe> LoadRecipe(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound("recipe file '" + path + "' not found");
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument("'" + path + "' is a directory, not a recipe file");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status::NotFound("cannot read recipe file '" + path + "'");
  return ParseRecipe(text.str(), path, overrides);
}

std::string RecipeToYaml(const Recipe& recipe) {
  std::string source = recipe.source;
  std::replace(source.begin(), source.end(), '\n', ' ');
  std::string out = "# every key with its value" + (source.empty() ? std::string() : ", resolved from " + source) +
                    " (keys: docs/recipes.md)\n";
  std::vector<std::string> open;  // the sections printed so far, outermost first
  for (const RecipeKey& key : RecipeKeys()) {
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
    out += std::string(2 * parts.size(), ' ') + std::string(p) + ": " + RecipeValueText(key, recipe) + "\n";
  }
  return out;
}

}  // namespace geomx::cli
