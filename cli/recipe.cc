#include "cli/recipe.h"

#include <yaml-cpp/eventhandler.h>
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

#include "algorithms/estimators/estimator.h"
#include "cli/recipe_schema.h"
#include "cli/sync_rules.h"
#include "cli/topology_rules.h"

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

// At most this many problems are listed (the rest are counted), and did-you-mean hints are looked for only while
// fewer have been found: a file of garbage gets a readable answer, and quickly.
constexpr size_t kListedIssues = 20;


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
    case RecipeValueKind::kBandwidth:
      return "a bandwidth such as 50mbit";
    case RecipeValueKind::kDuration:
      return "a duration such as 25ms or 2s";
    case RecipeValueKind::kLoss:
      return "a loss rate such as 2% or 0.02";
    case RecipeValueKind::kRecordList:
      return "a list of mappings, e.g. [{name: dc-a, workers: 2}, {name: dc-b, workers: 2}]";
  }
  return "a value";
}

// An example value of a list of mappings, for "set the whole list" hints.
std::string ListExample(std::string_view list_path) {
  if (list_path == "topology.links.direct") return "[{from: dc-a, to: dc-b, latency: 2ms}]";
  return "[{name: dc-a, workers: 2}, {name: dc-b, workers: 2}]";
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
const std::vector<std::string>& AllPaths() {
  static const std::vector<std::string> kPaths = [] {  // the table is immutable: build the list once
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
  }();
  return kPaths;
}

// Names people reach for that the schema spells differently.
std::string Alias(const std::string& word) {
  static const std::map<std::string, std::string> kAliases = {
      {"learning_rate", "lr"},  {"lr_schedule", "schedule"}, {"scheduler", "schedule"},
      {"batch", "batch_size"},  {"batchsize", "batch_size"}, {"dataset", "data"},
      {"optim", "optimizer"},   {"train", "training"},       {"iterations", "max_iterations"},
      {"num_epochs", "epochs"}, {"workers", "threads"},      {"num_threads", "threads"},
      {"port", "scheduler_port"}, {"num_workers", "workers"}, {"num_servers", "servers"},
      {"datacenters", "datacentres"}, {"data_centres", "datacentres"}, {"dcs", "datacentres"}};
  auto it = kAliases.find(word);
  return it == kAliases.end() ? "" : it->second;
}

// A path elsewhere in the schema whose last segment is `word` (a key put in the wrong section).
std::string PathEndingIn(const std::string& word) {
  if (word.empty()) return "";
  for (const std::string& p : AllPaths()) {
    const size_t dot = p.rfind('.');
    if (std::string_view(p).substr(dot == std::string::npos ? 0 : dot + 1) == word) return p;
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
    if (root.IsNull() || (root.IsMap() && root.size() == 0)) {
      Error(FileOrigin(root.Mark()), "",
            "the recipe is empty: it needs at least a `model` or an `algorithm` section and a `data` section "
            "(docs/recipes.md; recipes/quickstart.yaml is a complete example)");
      return;
    }
    if (!root.IsMap()) {
      Error(FileOrigin(root.Mark()), "",
            "a recipe is a mapping of sections (" + Join(RecipeSectionChildren("")) + "), got " + Describe(root));
      return;
    }
    ReadSection(root, "");
  }

  // Applies one --set flag ("key.path=value") on top of what was read so far.
  void ApplyOverride(const std::string& flag, int flag_index) {
    Origin o;
    o.group = 1;
    o.line = flag_index;
    o.where = "--set " + flag;
    size_t eq = flag.find('=');
    std::string path = eq == std::string::npos ? "" : flag.substr(0, eq);
    path.erase(0, path.find_first_not_of(" \t"));
    path.erase(path.find_last_not_of(" \t") + 1);
    if (path.empty()) {
      Error(o, "", "expected key.path=value, e.g. --set data.batch_size=64");
      return;
    }
    if (path.rfind("algorithm.", 0) == 0) {
      recipe_.has_algorithm = true;
      const std::string name = path.substr(10);
      if (!name.empty() && name.find('.') == std::string::npos && FindRecipeKey(path) == nullptr) {
        origins_[path] = o;
        std::string text = flag.substr(eq + 1);
        text.erase(0, text.find_first_not_of(" \t"));
        text.erase(text.find_last_not_of(" \t") + 1);
        recipe_.algorithm.params[name] = text;
        return;
      }
    }
    if (IsTopologyPath(path)) {
      origins_.emplace("topology", o);  // a flag that gives the recipe its topology is where topology errors point
      recipe_.has_topology = true;
    }
    size_t index = 0;
    if (path.find('[') != std::string::npos) {  // an item of a list of mappings: topology.datacentres[1].workers
      std::string plain;
      if (!SplitIndex(path, &plain, &index)) {
        Error(o, "", "malformed index in '" + path + "'; expected e.g. topology.datacentres[1].workers=4");
        return;
      }
      ApplyItemOverride(flag.substr(eq + 1), o, path, plain, index);
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
      std::string hint = !Hinting()                 ? ""
                         : IsRecipeSection(section) ? Suggest(section, LastSegment(path), /*full_path=*/true)
                                                    : ClosestName(path, AllPaths());
      if (hint.empty()) hint = Suggest("", LastSegment(path), /*full_path=*/true);
      Error(o, "", "unknown key '" + path + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      return;
    }
    SetFromFlag(*key, flag.substr(eq + 1), o, 0);
  }

  // Rules that involve more than one key; skipped when one of the keys already has an error.
  void CrossCheck() {
    if (recipe_.has_topology) CheckTopology();
    // The sync rules are about a model's parameters (optimizer placement, momentum, averaging); an algorithm has
    // its own (CheckAlgorithm).
    if (recipe_.has_algorithm) {
      CheckAlgorithm();
    } else {
      ApplySyncDefaults(&recipe_, [this](const std::string& path) { return origins_.count(path) > 0; });
      auto has_error = [this](const std::string& path) { return bad_paths_.count(path) > 0; };
      for (const TopologyRuleViolation& v : CheckSyncRules(recipe_, has_error)) Error(OriginOf(v.at), v.path, v.message);
    }
    const Recipe& r = recipe_;
    if (r.training.stop_at_target && r.training.target_accuracy <= 0 &&
        Clean({"training.stop_at_target", "training.target_accuracy"})) {
      Error(OriginOf({"training.stop_at_target"}), "training.stop_at_target",
            "needs training.target_accuracy > 0 (the accuracy to stop at)");
    }
    if (r.data.score_within_classes && r.data.classes.empty() &&
        Clean({"data.score_within_classes", "data.classes"})) {
      Error(OriginOf({"data.score_within_classes"}), "data.score_within_classes",
            "needs data.classes, the classes to predict among (e.g. data.classes: [0, 1, 2, 3, 4])");
    }
    data::TableTask generated_task = data::TableTask::kClassification;
    if (data::GeneratedTableTask(r.data.name, &generated_task) && !r.has_algorithm && Clean({"data.name"})) {
      Error(OriginOf({"data.name"}), "data.name",
            r.data.name + " is a generated table for classical algorithms; add an `algorithm` section");
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
    if (issues_.empty()) {
      for (const auto& [path, origin] : origins_) recipe_.origins[path] = origin.where;
      return std::move(recipe_);
    }
    std::stable_sort(issues_.begin(), issues_.end(), [](const Issue& a, const Issue& b) {
      return std::tie(a.origin.group, a.origin.line, a.origin.column) <
             std::tie(b.origin.group, b.origin.line, b.origin.column);
    });
    std::string text;
    for (size_t i = 0; i < issues_.size() && i < kListedIssues; ++i) {
      text += (text.empty() ? "" : "\n") + issues_[i].text;
    }
    if (issues_.size() > kListedIssues) {
      const size_t more = issues_.size() - kListedIssues;
      text += "\n... and " + std::to_string(more) + " more problem" + (more == 1 ? "" : "s") + " after these";
    }
    return Status::InvalidArgument(text);
  }

 private:
  using OriginFn = std::function<Origin(const YAML::Node&)>;

  // "topology.datacentres[12].workers" -> "topology.datacentres[].workers", 12. False when the index is malformed.
  static bool SplitIndex(const std::string& path, std::string* plain, size_t* index) {
    size_t open = path.find('[');
    size_t close = path.find(']', open);
    if (close == std::string::npos || close == open + 1 || close - open > 7 ||
        path.find('[', close) != std::string::npos) {
      return false;
    }
    std::string digits = path.substr(open + 1, close - open - 1);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    *index = std::stoul(digits);
    *plain = path.substr(0, open) + "[]" + path.substr(close + 1);
    return true;
  }

  // --set LIST[i].key=value: one key of one existing item.
  void ApplyItemOverride(const std::string& text, const Origin& o, const std::string& path, const std::string& plain,
                         size_t index) {
    const RecipeKey* key = FindRecipeKey(plain);
    std::string list_path = plain.substr(0, plain.find("[]"));
    const RecipeKey* list = FindRecipeKey(list_path);
    if (list == nullptr || KindOf(*list) != RecipeValueKind::kRecordList) {
      Error(o, "", "unknown key '" + path + "' (" + list_path + " is not a list of mappings)");
      return;
    }
    std::string item_path = list_path + "[" + std::to_string(index) + "]";
    size_t size = RecipeListSize(*list, recipe_);
    if (index >= size) {
      Error(o, item_path,
            "no such item: " + list_path + " has " + std::to_string(size) + " item" + (size == 1 ? "" : "s") +
                (size == 0 ? "" : " (indices 0.." + std::to_string(size - 1) + ")") +
                "; to add one, set the whole list: --set '" + list_path + "=" + ListExample(list_path) + "'");
      return;
    }
    std::string section = list_path + "[]";
    if (key == nullptr) {
      if (plain == section) {
        Error(o, item_path, "is one item; set one of its keys, e.g. --set " + item_path + "." +
                                RecipeSectionChildren(section).front() + "=..., or the whole list");
        return;
      }
      std::string hint = Suggest(section, LastSegment(plain), /*full_path=*/false);
      Error(o, "", "unknown key '" + path + "'" + (hint.empty() ? "" : " (did you mean '" + item_path + "." + hint +
                                                                             "'?)"));
      return;
    }
    SetFromFlag(*key, text, o, index);
  }

  // The value of a --set flag, read as YAML (a scalar or a flow list/mapping).
  void SetFromFlag(const RecipeKey& key, const std::string& text, const Origin& o, size_t index) {
    bool is_string = KindOf(key) == RecipeValueKind::kString;
    YAML::Node value;
    bool literal = false;
    try {
      value = YAML::Load(text);
      literal = is_string && !value.IsNull() && !value.IsScalar();
    } catch (const YAML::Exception& e) {
      if (!is_string) {
        Error(o, DisplayPath(key, index), "invalid YAML value '" + text + "': " + e.msg);
        return;
      }
      literal = true;
    }
    // A string key takes text that YAML does not read as one scalar ("/data/a: b.csv", "[x") literally.
    if (literal) value = YAML::Node(text);
    ReadValue(key, value, [&o](const YAML::Node&) { return o; }, index);
  }

  static std::string DisplayPath(const RecipeKey& key, size_t index) {
    return IsRecipeItemKey(key) ? RecipeItemPath(key, index) : std::string(key.path);
  }

  void ReadSection(const YAML::Node& map, const std::string& section) {
    std::map<std::string, int> seen;  // key -> line
    for (auto it = map.begin(); it != map.end(); ++it) {
      const auto entry = *it;  // a copy: `it->first` is a member of a temporary proxy (dangles)
      const YAML::Node& k = entry.first;
      const YAML::Node& v = entry.second;
      Origin key_origin = FileOrigin(k.Mark());
      std::string name = k.IsScalar() ? k.Scalar() : Describe(k);
      std::string path = section.empty() ? name : section + "." + name;
      if (auto [pos, fresh] = seen.emplace(name, key_origin.line); !fresh) {
        Error(key_origin, path, "duplicate key (first given at line " + std::to_string(pos->second) + ")");
        continue;
      }
      if (name.find_first_of(".[]") != std::string::npos) {  // a path, not a key: nest the sections instead
        Error(key_origin, path,
              "'" + name + "' is not a key: write one key per level (e.g. topology: {links: {wan: ...}}); dotted "
              "paths are for --set");
        continue;
      }
      if (IsTopologyPath(path)) recipe_.has_topology = true;
      if (path == "algorithm") recipe_.has_algorithm = true;
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
      if (section == "algorithm") {  // the estimator's parameters, checked against it in CrossCheck
        ReadAlgorithmParam(name, v, key_origin);
        continue;
      }
      Error(key_origin, path, UnknownKeyMessage(section, name));
    }
  }

  // One parameter of the `algorithm` section: a scalar, kept as text until the estimator is known.
  void ReadAlgorithmParam(const std::string& name, const YAML::Node& v, const Origin& key_origin) {
    const std::string path = "algorithm." + name;
    const Origin origin = v.IsNull() ? key_origin : FileOrigin(v.Mark());
    origins_[path] = origin;
    if (!v.IsScalar()) {
      Error(origin, path, "expected a single value, got " + Describe(v));
      return;
    }
    recipe_.algorithm.params[name] = v.Scalar();
  }

  std::string UnknownKeyMessage(const std::string& section, const std::string& name) const {
    if (section == "data" && name == "dirichlet_alpha") {
      return "unknown key; the alpha is part of the partition, e.g. partition: dirichlet(0.5)";
    }
    if (!Hinting()) return "unknown key";
    std::string hint = Suggest(section, name, /*full_path=*/false);
    if (!hint.empty()) return "unknown key (did you mean '" + hint + "'?)";
    return "unknown key (" + (section.empty() ? std::string("sections and keys") : section + " has") + ": " +
           Join(RecipeSectionChildren(section)) + ")";
  }

  // The key meant by an unknown `name` in `section`: a common alias or a near miss among its siblings (as the
  // bare name, or the full path when `full_path`), else a key of that name in another section; "" if none.
  // None once kListedIssues problems are found.
  std::string Suggest(const std::string& section, const std::string& name, bool full_path) const {
    if (!Hinting()) return "";
    std::vector<std::string> children = RecipeSectionChildren(section);
    std::string alias = Alias(name);
    std::string hint =
        std::find(children.begin(), children.end(), alias) != children.end() ? alias : ClosestName(name, children);
    if (!hint.empty()) return full_path && !section.empty() ? section + "." + hint : hint;
    hint = PathEndingIn(name);
    return hint.empty() ? PathEndingIn(alias) : hint;
  }

  // Reads one key's value (of item `index`, for item keys).
  void ReadValue(const RecipeKey& key, const YAML::Node& node, const OriginFn& origin_of, size_t index = 0) {
    Origin origin = origin_of(node);
    std::string path = DisplayPath(key, index);
    origins_[path] = origin;
    RecipeValueKind kind = KindOf(key);
    if (kind == RecipeValueKind::kRecordList) {
      ReadRecordList(key, node, origin_of);
      return;
    }
    if (kind == RecipeValueKind::kIntegerList) {
      if (!node.IsSequence()) {
        Error(origin, path, "expected " + ExpectedText(kind) + ", got " + Describe(node));
        return;
      }
      std::vector<int64_t> items;
      bool ok = true;
      for (size_t i = 0; i < node.size(); ++i) {
        const YAML::Node& item = node[i];
        std::string item_path = path + "[" + std::to_string(i) + "]";
        int64_t value = 0;
        std::string problem = item.IsScalar() ? ParseRecipeListItem(key, item.Scalar(), &value)
                                              : "expected an integer, got " + Describe(item);
        if (!problem.empty()) {
          Error(origin_of(item), item_path, problem);
          bad_paths_.insert(path);
          ok = false;
        }
        items.push_back(value);
      }
      if (ok) {
        std::string problem = SetRecipeList(key, items, &recipe_);
        if (!problem.empty()) Error(origin, path, problem);
      }
      return;
    }
    if (node.IsNull() && kind != RecipeValueKind::kString) {
      Error(origin, path, "expected " + ExpectedText(kind) + ", got an empty value");
      return;
    }
    if (!node.IsNull() && !node.IsScalar()) {
      Error(origin, path, "expected " + ExpectedText(kind) + ", got " + Describe(node));
      return;
    }
    bool quoted = node.IsScalar() && node.Tag() == "!";
    bool text_kind = kind == RecipeValueKind::kString || kind == RecipeValueKind::kPartition ||
                     kind == RecipeValueKind::kBandwidth || kind == RecipeValueKind::kDuration ||
                     kind == RecipeValueKind::kLoss;
    if (quoted && !text_kind) {
      Error(origin, path,
            "expected " + ExpectedText(kind) + ", got the quoted string '" + node.Scalar() + "' (remove the quotes)");
      return;
    }
    std::string problem = SetRecipeScalar(key, node.IsNull() ? "" : node.Scalar(), &recipe_, index);
    if (!problem.empty()) Error(origin, path, problem);
  }

  // A list of mappings replaces the whole list; each item's keys are read against the item keys of the table.
  void ReadRecordList(const RecipeKey& list, const YAML::Node& node, const OriginFn& origin_of) {
    std::string path(list.path);
    if (!node.IsSequence()) {
      Error(origin_of(node), path,
            "expected a list of mappings, e.g. " + ListExample(path) + ", got " + Describe(node));
      return;
    }
    ResetRecipeList(list, node.size(), &recipe_);
    std::string section = path + "[]";
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node& item = node[i];
      std::string item_path = path + "[" + std::to_string(i) + "]";
      origins_[item_path] = origin_of(item);
      if (!item.IsMap()) {
        Error(origin_of(item), item_path,
              "expected a mapping of keys (" + Join(RecipeSectionChildren(section)) + "), got " + Describe(item));
        bad_paths_.insert(path);
        continue;
      }
      std::map<std::string, int> seen;  // key -> line
      for (auto it = item.begin(); it != item.end(); ++it) {
        const auto entry = *it;  // a copy: `it->first` is a member of a temporary proxy
        Origin key_origin = origin_of(entry.first);
        std::string name = entry.first.IsScalar() ? entry.first.Scalar() : Describe(entry.first);
        if (auto [pos, fresh] = seen.emplace(name, key_origin.line); !fresh) {
          Error(key_origin, item_path + "." + name,
                "duplicate key" + (key_origin.group == 0 ? " (first given at line " + std::to_string(pos->second) + ")"
                                                         : std::string()));
          continue;
        }
        if (const RecipeKey* key = FindRecipeKey(section + "." + name)) {
          ReadValue(*key, entry.second, [&](const YAML::Node& n) { return n.IsNull() ? key_origin : origin_of(n); },
                    i);
          continue;
        }
        Error(key_origin, item_path + "." + name, UnknownKeyMessage(section, name));
      }
    }
  }

  // An `algorithm` recipe: the parameters against the estimator's specs (each error at its key), no `model`
  // section beside it, data that fits the estimator's task. On success the params hold every parameter.
  void CheckAlgorithm() {
    if (origins_.count("model") > 0) {
      Error(OriginOf({"model"}), "model",
            "a recipe trains either a neural `model` or a classical `algorithm`; remove one of the two sections");
    }
    if (!Clean({"algorithm.name"})) return;
    const algorithms::EstimatorDef* def = algorithms::EstimatorRegistry::Find(recipe_.algorithm.name);
    if (def == nullptr) return;  // the allowed-values check has reported it
    std::vector<algorithms::ParamProblem> problems;
    algorithms::ParamValues values = algorithms::ResolveParams(def->params, recipe_.algorithm.params, &problems);
    for (const algorithms::ParamProblem& p : problems) {
      std::string message = p.message;
      if (message.rfind("unknown parameter", 0) == 0) message += " for " + def->name;
      Error(OriginOf({"algorithm." + p.name, "algorithm"}), "algorithm." + p.name, message);
    }
    if (problems.empty()) recipe_.algorithm.params = values.texts();
    if (recipe_.has_topology && recipe_.sync.mode != "fsa" && Clean({"sync.mode"})) {
      Error(OriginOf({"sync.mode", "sync", "topology"}), "sync.mode",
            "an algorithm fits across data centres in lock-step rounds of sums and gathers; use fsa (got " +
                recipe_.sync.mode + ")");
    }
    // An estimator's compressible sums (gradients, deltas) take fp16 on every link, or the bsc preset (top-k with
    // error feedback from the workers, the same sparse sum on every link); nothing else has a meaning for them.
    const comm::LinkSchemes links = ResolveLinks(recipe_.accelerators);
    const comm::LinkScheme kinds[] = {links.worker_to_local, links.local_to_global, links.global_to_local,
                                      links.local_to_worker};
    bool all_none = true, all_fp16 = true;
    for (comm::LinkScheme k : kinds) {
      all_none = all_none && k == comm::LinkScheme::kNone;
      all_fp16 = all_fp16 && k == comm::LinkScheme::kFp16;
    }
    const bool bsc_preset = !links.lan() && links.local_to_global == comm::LinkScheme::kBsc &&
                            links.global_to_local == comm::LinkScheme::kBsc;
    const auto& a = recipe_.accelerators;
    if (!recipe_.has_topology && (!all_none || a.p3) && Clean({"accelerators.compression", "accelerators.links"})) {
      Error(OriginOf({"accelerators.compression", "accelerators.links", "accelerators.p3.enabled", "accelerators"}),
            "accelerators", "compression acts on the links between workers and servers: it needs a topology section");
    } else if (!all_none && !all_fp16 && !bsc_preset && Clean({"accelerators.compression", "accelerators.links"})) {
      Error(OriginOf({"accelerators.compression", "accelerators.links", "accelerators"}), "accelerators.compression",
            "an algorithm's sums take compression: fp16 (every link) or compression: bsc (top-k with error feedback "
            "from the workers); mpq and per-link mixes act on a model's parameter keys, and " + def->name +
                " has none");
    } else if (bsc_preset && (a.bsc_momentum > 0 || a.bsc_selection != "exact") &&
               Clean({"accelerators.bsc.momentum", "accelerators.bsc.selection"})) {
      Error(OriginOf({"accelerators.bsc.momentum", "accelerators.bsc.selection", "accelerators.bsc"}),
            "accelerators.bsc", "an algorithm's top-k sums use exact selection without momentum correction (set "
                                "accelerators.bsc.momentum: 0 and selection: exact)");
    }
    if (recipe_.has_topology && a.p3 && Clean({"accelerators.p3.enabled"})) {
      Error(OriginOf({"accelerators.p3.enabled", "accelerators"}), "accelerators.p3.enabled",
            "P3 slices a model's gradients by layer; an algorithm has no layers to prioritise");
    }
    const data::TableTask task = def->task;
    const std::string& d = recipe_.data.name;
    const bool numeric_targets = task == data::TableTask::kRegression || task == data::TableTask::kRanking;
    const bool table_file = d == "csv" || d == "libsvm" || d == "ratings";
    data::TableTask generated_task = data::TableTask::kClassification;
    const bool generated = data::GeneratedTableTask(d, &generated_task);
    const bool control = task == data::TableTask::kControl;
    if (Clean({"data.name"}) && ((numeric_targets && !table_file && !generated) || (control && !generated) ||
                                 (generated && !data::TableTaskSuits(generated_task, task)))) {
      Error(OriginOf({"data.name", "data"}), "data.name",
            d + " does not suit " + def->name + ", a " + data::TableTaskName(task) + " algorithm" +
                (task == data::TableTask::kRegression  ? " (use csv, libsvm or friedman1)"
                 : task == data::TableTask::kRanking ? " (use libsvm with qid:, or letor-synthetic)"
                 : control                           ? " (use the environment cartpole)"
                                                     : ""));
    }
  }

  // The topology rules (cli/topology_rules.h), each at the YAML position of the key at fault; then the library's
  // own comm::Topology::Validate() as a safety net for anything they do not cover.
  void CheckTopology() {
    const size_t issues_before = issues_.size();
    auto has_error = [this](const std::string& path) { return bad_paths_.count(path) > 0; };
    for (const TopologyRuleViolation& v : CheckTopologyRules(recipe_, has_error)) {
      Error(OriginOf(v.at), v.path, v.message);
    }

    bool topology_clean = issues_.size() == issues_before &&
                          std::none_of(bad_paths_.begin(), bad_paths_.end(),
                                       [](const std::string& p) { return IsTopologyPath(p); });
    if (topology_clean) {
      Status valid = recipe_.topology.Validate();
      if (!valid.ok()) Error(OriginOf({"topology"}), "topology", valid.message());
    }
  }

  bool Clean(std::initializer_list<std::string_view> paths) const {
    for (auto p : paths) {
      if (bad_paths_.count(std::string(p))) return false;
    }
    return true;
  }

  // The origin of the first of `paths` that was given, else of the nearest given section, else the file start.
  Origin OriginOf(std::initializer_list<std::string_view> paths) const {
    return OriginOf(std::vector<std::string>(paths.begin(), paths.end()));
  }
  Origin OriginOf(const std::vector<std::string>& paths) const {
    for (const std::string& p : paths) {
      if (auto it = origins_.find(p); it != origins_.end()) return it->second;
    }
    std::string section(paths.front());
    for (size_t cut = section.find_last_of(".["); cut != std::string::npos; cut = section.find_last_of(".[")) {
      section.resize(cut);
      if (auto it = origins_.find(section); it != origins_.end()) return it->second;
    }
    return FileOrigin(YAML::Mark());
  }

  std::string source_;
  Recipe recipe_;
  bool Hinting() const { return issues_.size() < kListedIssues; }

  std::vector<Issue> issues_;
  std::map<std::string, Origin> origins_;  // path -> where its value (or section) was given; flags win
  std::set<std::string> bad_paths_;        // paths that already have an error
};

}  // namespace

// Where the first `limit` documents of `text` start. Counted with yaml-cpp's event parser instead of LoadAll:
// the LoadAll of yaml-cpp 0.7 (Debian 12) never returns on a stray top-level ',' (its parser reports an empty
// document there again and again without moving on, allocating each time: jbeder/yaml-cpp#1040), which turned a
// one-byte recipe into a process that ate all memory. Throws YAML::Exception on a syntax error.
std::vector<YAML::Mark> DocumentStarts(const std::string& text, size_t limit) {
  struct Starts final : YAML::EventHandler {
    std::vector<YAML::Mark> marks;
    void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } starts;
  std::istringstream in(text);
  YAML::Parser parser(in);
  while (starts.marks.size() < limit && parser.HandleNextDocument(starts)) {
  }
  return starts.marks;
}

Result<Recipe> ParseRecipe(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides) {
  RecipeReader reader(source);
  try {
    const std::vector<YAML::Mark> starts = DocumentStarts(yaml_text, 2);
    if (starts.size() == 2 && starts[1].pos == starts[0].pos) {  // the parser did not move on (see DocumentStarts)
      const size_t at = static_cast<size_t>(std::max(0, starts[0].pos));
      const std::string what = at < yaml_text.size() && yaml_text[at] > ' ' && yaml_text[at] < 127
                                   ? std::string("'") + yaml_text[at] + "'"
                                   : std::string("character");
      throw YAML::ParserException(starts[0], "unexpected " + what + " outside a [...] or {...} list");
    }
    if (starts.size() > 1) {
      reader.Error(reader.FileOrigin(starts[1]), "",
                   "a recipe file holds one YAML document; remove the second '---' and what follows");
    }
    reader.ReadDocument(YAML::Load(yaml_text));
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

std::string WhereOf(const Recipe& recipe, const std::string& path) {
  auto it = recipe.origins.find(path);
  return (it != recipe.origins.end() ? it->second : recipe.source) + ": " + path + ": ";
}

Status AtRecipeKey(const Recipe& recipe, const std::string& path, const Status& status) {
  std::string message = status.message();
  for (const std::string& prefix : {path + ": ", path.substr(0, path.find('.')) + ": "}) {
    if (message.rfind(prefix, 0) == 0) {
      message.erase(0, prefix.size());
      break;
    }
  }
  return Status(status.code(), WhereOf(recipe, path) + message);
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

}  // namespace geomx::cli
