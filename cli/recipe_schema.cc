#include "cli/recipe_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>

#include "engine/base/check.h"

namespace geomx::cli {
namespace {

// ---- range helpers for the table ----
RecipeRange AtLeast(double v) { return {.has_min = true, .min = v}; }
RecipeRange Above(double v) { return {.has_min = true, .min = v, .min_open = true}; }
RecipeRange Between(double lo, bool lo_open, double hi, bool hi_open) {
  return {.has_min = true, .min = lo, .min_open = lo_open, .has_max = true, .max = hi, .max_open = hi_open};
}
const RecipeRange kUnitOpenAbove = Between(0, false, 1, true);  // [0, 1)

// ---- extra syntax checks ----
std::string CheckRunName(std::string_view v) {
  if (v.empty()) return "must not be empty";
  for (char c : v) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return "'" + std::string(v) + "' may only contain letters, digits, '.', '_' and '-' (it names the run folder)";
    }
  }
  return "";
}

std::string CheckDevice(std::string_view v) {
  if (v == "cpu" || v == "cuda" || v == "auto") return "";
  if (v.substr(0, 5) == "cuda:" && v.size() > 5 && v.size() <= 8 &&
      std::all_of(v.begin() + 5, v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return "";
  }
  return "unknown device '" + std::string(v) + "' (allowed: cpu, cuda, cuda:N, auto)";
}

std::string CheckNonEmpty(std::string_view v) { return v.empty() ? "must not be empty" : ""; }

// One key per row reads as a table; clang-format would give every field its own line.
// clang-format off
std::vector<RecipeKey> BuildTable() {
  using R = Recipe&;
  using F = RecipeField;
  return {
      {.path = "name", .field = [](R r) -> F { return &r.name; }, .help = "Run name; names the run folder.",
       .allowed_doc = "letters, digits, `.`, `_`, `-`", .check = CheckRunName},
      {.path = "seed", .field = [](R r) -> F { return &r.seed; },
       .help = "Seed of every random choice (weights, shuffling, augmentation, synthetic data).",
       .allowed_doc = "0 .. 2^64-1"},
      {.path = "device", .field = [](R r) -> F { return &r.device; },
       .help = "Where to compute. `auto` picks the first GPU when there is one, else the CPU.",
       .allowed_doc = "cpu, cuda, cuda:N, auto", .check = CheckDevice},
      {.path = "threads", .field = [](R r) -> F { return &r.threads; }, .range = AtLeast(0),
       .help = "Compute threads; 0 = all cores."},

      {.path = "model.name", .field = [](R r) -> F { return &r.model.name; },
       .allowed = {"geomx-cnn", "mlp", "lenet5", "resnet20"}, .noun = "model", .help = "The network."},
      {.path = "model.hidden", .field = [](R r) -> F { return &r.model.hidden; }, .range = AtLeast(1),
       .help = "mlp: hidden layer widths ([] = a linear model)."},
      {.path = "model.activation", .field = [](R r) -> F { return &r.model.activation; },
       .allowed = {"relu", "tanh", "sigmoid", "gelu"}, .noun = "activation",
       .help = "mlp: activation after each hidden layer."},
      {.path = "model.dropout", .field = [](R r) -> F { return &r.model.dropout; }, .range = kUnitOpenAbove,
       .help = "mlp: dropout probability after each hidden layer."},
      {.path = "model.init", .field = [](R r) -> F { return &r.model.init; }, .allowed = {"kaiming", "xavier"},
       .noun = "init", .help = "Weight initialisation of conv and linear layers."},

      {.path = "data.name", .field = [](R r) -> F { return &r.data.name; },
       .allowed = {"mnist", "fashion-mnist", "cifar10", "csv", "libsvm", "image-folder", "synthetic"},
       .noun = "dataset", .help = "The dataset (its format)."},
      {.path = "data.path", .field = [](R r) -> F { return &r.data.path; },
       .help = "Directory of the dataset (idx, cifar10; image-folder: holding train/ and test/), or `auto` "
       "(well-known places such as /usr/share/datasets/<name>). csv, libsvm: the training file.",
       .allowed_doc = "a path or `auto`", .check = CheckNonEmpty},
      {.path = "data.test_path", .field = [](R r) -> F { return &r.data.test_path; },
       .help = "csv, libsvm: the test file; empty = split `test_fraction` off the training file.",
       .allowed_doc = "a path, or empty"},
      {.path = "data.test_fraction", .field = [](R r) -> F { return &r.data.test_fraction; },
       .range = Between(0, true, 1, true), .help = "csv, libsvm without test_path: share held out for testing."},
      {.path = "data.batch_size", .field = [](R r) -> F { return &r.data.batch_size; }, .range = AtLeast(1),
       .help = "Examples per training step."},
      {.path = "data.partition", .field = [](R r) -> F {
       return PartitionField{&r.data.partition, &r.data.dirichlet_alpha}; },
       .help = "How the training set is split across workers: at random (iid), by label (each worker sees "
       "few classes), or with label proportions drawn from Dirichlet(ALPHA) (smaller = more skewed). "
       "No effect with one worker.", .allowed_doc = "iid, by-class, dirichlet(ALPHA) with ALPHA > 0"},
      {.path = "data.shuffle", .field = [](R r) -> F { return &r.data.shuffle; },
       .help = "Reshuffle the training set every epoch."},
      {.path = "data.prefetch", .field = [](R r) -> F { return &r.data.prefetch; }, .range = AtLeast(0),
       .help = "Batches prepared ahead by the loader thread; 0 = no loader thread."},
      {.path = "data.normalize", .field = [](R r) -> F { return &r.data.normalize; },
       .help = "Images: (x/255 - mean)/std with the dataset's constants."},
      {.path = "data.augment", .field = [](R r) -> F { return &r.data.augment; },
       .help = "Images: random crop (pad 4 for cifar10, 2 otherwise) and horizontal flip while training."},
      {.path = "data.label_column", .field = [](R r) -> F { return &r.data.label_column; }, .range = AtLeast(-1),
       .help = "csv: index of the label column; -1 = the last column."},
      {.path = "data.header", .field = [](R r) -> F { return &r.data.header; },
       .help = "csv: the first row is a header."},
      {.path = "data.num_features", .field = [](R r) -> F { return &r.data.num_features; }, .range = AtLeast(0),
       .help = "libsvm: number of features; 0 = the largest feature index seen (indices are 1-based)."},
      {.path = "data.image_height", .field = [](R r) -> F { return &r.data.image_height; },
       .range = Between(1, false, 4096, false), .help = "image-folder: images are resized to this height."},
      {.path = "data.image_width", .field = [](R r) -> F { return &r.data.image_width; },
       .range = Between(1, false, 4096, false), .help = "image-folder: images are resized to this width."},
      {.path = "data.image_channels", .field = [](R r) -> F { return &r.data.image_channels; },
       .range = Between(1, false, 3, false), .help = "image-folder: 1 = grayscale, 3 = colour."},
      {.path = "data.synthetic_train", .field = [](R r) -> F { return &r.data.synthetic_train; },
       .range = AtLeast(1), .help = "synthetic: training examples (deterministic Gaussian blobs)."},
      {.path = "data.synthetic_test", .field = [](R r) -> F { return &r.data.synthetic_test; }, .range = AtLeast(1),
       .help = "synthetic: test examples."},
      {.path = "data.synthetic_classes", .field = [](R r) -> F { return &r.data.synthetic_classes; },
       .range = AtLeast(2), .help = "synthetic: number of classes."},
      {.path = "data.synthetic_shape", .field = [](R r) -> F { return &r.data.synthetic_shape; },
       .range = AtLeast(1), .help = "synthetic: shape of one example, e.g. [1, 8, 8] (CHW) or [64].",
       .min_items = 1, .max_items = 3},
      {.path = "data.synthetic_seed", .field = [](R r) -> F { return &r.data.synthetic_seed; },
       .help = "synthetic: seed of the class centres and examples (the same seed gives the same data; "
       "independent of `seed`).", .allowed_doc = "0 .. 2^64-1"},

      {.path = "optimizer.name", .field = [](R r) -> F { return &r.optimizer.name; },
       .allowed = {"sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adadelta", "adam", "adamw"},
       .noun = "optimizer", .help = "The update rule."},
      {.path = "optimizer.lr", .field = [](R r) -> F { return &r.optimizer.lr; }, .range = Above(0),
       .help = "Base learning rate (see optimizer.schedule)."},
      {.path = "optimizer.weight_decay", .field = [](R r) -> F { return &r.optimizer.weight_decay; },
       .range = AtLeast(0), .help = "L2 penalty; decoupled weight decay for adamw."},
      {.path = "optimizer.momentum", .field = [](R r) -> F { return &r.optimizer.momentum; },
       .range = kUnitOpenAbove, .help = "momentum, nesterov: momentum factor."},
      {.path = "optimizer.beta1", .field = [](R r) -> F { return &r.optimizer.beta1; }, .range = kUnitOpenAbove,
       .help = "adam, adamw: decay of the first moment."},
      {.path = "optimizer.beta2", .field = [](R r) -> F { return &r.optimizer.beta2; }, .range = kUnitOpenAbove,
       .help = "adam, adamw: decay of the second moment."},
      {.path = "optimizer.rho", .field = [](R r) -> F { return &r.optimizer.rho; }, .range = kUnitOpenAbove,
       .help = "rmsprop, adadelta: decay of the squared-gradient average."},
      {.path = "optimizer.eps", .field = [](R r) -> F { return &r.optimizer.eps; }, .range = Above(0),
       .help = "Added to denominators for numerical stability."},

      {.path = "optimizer.schedule.name", .field = [](R r) -> F { return &r.lr_schedule.name; },
       .allowed = {"constant", "step", "cosine"}, .noun = "schedule",
       .help = "Learning-rate schedule: constant, step decay, or cosine decay to min_lr over the run."},
      {.path = "optimizer.schedule.step_epochs", .field = [](R r) -> F { return &r.lr_schedule.step_epochs; },
       .range = AtLeast(1), .help = "step: multiply the lr by gamma every this many epochs."},
      {.path = "optimizer.schedule.gamma", .field = [](R r) -> F { return &r.lr_schedule.gamma; },
       .range = Between(0, true, 1, false), .help = "step: decay factor."},
      {.path = "optimizer.schedule.min_lr", .field = [](R r) -> F { return &r.lr_schedule.min_lr; },
       .range = AtLeast(0), .help = "cosine: final learning rate (at most optimizer.lr)."},
      {.path = "optimizer.schedule.warmup_iterations",
       .field = [](R r) -> F { return &r.lr_schedule.warmup_iterations; }, .range = AtLeast(0),
       .help = "Linear warm-up from 0 over this many iterations (any schedule)."},

      {.path = "training.epochs", .field = [](R r) -> F { return &r.training.epochs; }, .range = AtLeast(1),
       .help = "Passes over the training set."},
      {.path = "training.max_iterations", .field = [](R r) -> F { return &r.training.max_iterations; },
       .range = AtLeast(0), .help = "Stop after this many iterations in total; 0 = no limit."},
      {.path = "training.eval_every", .field = [](R r) -> F { return &r.training.eval_every; }, .range = AtLeast(0),
       .help = "Also evaluate every N iterations; 0 = at epoch ends only."},
      {.path = "training.eval_limit", .field = [](R r) -> F { return &r.training.eval_limit; }, .range = AtLeast(0),
       .help = "Intermediate evaluations use at most N test examples; 0 = all."},
      {.path = "training.target_accuracy", .field = [](R r) -> F { return &r.training.target_accuracy; },
       .range = Between(0, false, 1, false),
       .help = "Records the time to reach this test accuracy; 0 = none. Training continues."},
      {.path = "training.stop_at_target", .field = [](R r) -> F { return &r.training.stop_at_target; },
       .help = "Stop as soon as target_accuracy is reached (needs target_accuracy > 0)."},
      {.path = "training.checkpoint_every", .field = [](R r) -> F { return &r.training.checkpoint_every; },
       .range = AtLeast(0), .help = "Also checkpoint every N iterations; 0 = at epoch ends only."},
      {.path = "training.log_every", .field = [](R r) -> F { return &r.training.log_every; }, .range = AtLeast(1),
       .help = "A progress line every N iterations when stdout is not a terminal."},
  };
}
// clang-format on

// ---- scalar parsing ----
std::string Quoted(std::string_view text) {
  std::string out(1, '\'');  // built by appending: GCC 12 gives a false -Wrestrict for "'" + std::string(...)
  out.append(text);
  out += '\'';
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Parses all of `text` as T (an integer or floating type). False on any leftover or a bad format.
template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string NumberText(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

bool InRange(const RecipeRange& r, double v) {
  if (r.has_min && (r.min_open ? v <= r.min : v < r.min)) return false;
  if (r.has_max && (r.max_open ? v >= r.max : v > r.max)) return false;
  return true;
}

std::string RangeText(const RecipeRange& r) {
  if (r.has_min && r.has_max) {
    return std::string(r.min_open ? "(" : "[") + NumberText(r.min) + ", " + NumberText(r.max) +
           (r.max_open ? ")" : "]");
  }
  if (r.has_min) return (r.min_open ? "> " : ">= ") + NumberText(r.min);
  if (r.has_max) return (r.max_open ? "< " : "<= ") + NumberText(r.max);
  return "";
}

std::string RangeProblem(const RecipeRange& r, std::string_view text) {
  std::string range = RangeText(r);
  if (r.has_min && r.has_max) return "must be in " + range + ", got " + std::string(text);
  return "must be " + range + ", got " + std::string(text);
}

// An integer of type T within the key's range.
template <typename T>
std::string ParseInteger(const RecipeKey& key, std::string_view text, T* out) {
  T value{};
  if (!ParseNumber(text, &value)) {
    // Distinguish "not an integer" from "an integer that does not fit T".
    std::string_view digits = text;
    bool negative = !digits.empty() && digits.front() == '-';
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
    bool numeric = !digits.empty() && std::all_of(digits.begin(), digits.end(),
                                                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric && std::is_unsigned_v<T> && negative) return "must be >= 0, got " + std::string(text);
    if (numeric && negative) {
      return "must be >= " + std::to_string(std::numeric_limits<T>::min()) + ", got " + std::string(text);
    }
    if (numeric) {
      return "must be <= " + std::to_string(std::numeric_limits<T>::max()) + ", got " + std::string(text);
    }
    return std::string(std::is_unsigned_v<T> ? "expected a non-negative integer" : "expected an integer") + ", got " +
           Quoted(text);
  }
  if (!InRange(key.range, static_cast<double>(value))) return RangeProblem(key.range, text);
  *out = value;
  return "";
}

std::string ParseFloat(const RecipeKey& key, std::string_view text, float* out) {
  double value = 0;
  if (!ParseNumber(text, &value) || !std::isfinite(value)) return "expected a number, got " + Quoted(text);
  if (!InRange(key.range, value)) return RangeProblem(key.range, text);
  float narrowed = 0;
  if (!ParseNumber(text, &narrowed) || !std::isfinite(narrowed)) {
    return "must fit a 32-bit float, got " + std::string(text);
  }
  *out = narrowed;
  return "";
}

std::string ParseBool(std::string_view text, bool* out) {
  static const std::vector<std::string_view> kTrue = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const std::vector<std::string_view> kFalse = {"false", "False", "FALSE", "no", "No",
                                                       "NO",    "off",   "Off",   "OFF"};
  if (std::find(kTrue.begin(), kTrue.end(), text) != kTrue.end()) {
    *out = true;
    return "";
  }
  if (std::find(kFalse.begin(), kFalse.end(), text) != kFalse.end()) {
    *out = false;
    return "";
  }
  return "expected a boolean (true or false), got " + Quoted(text);
}

std::string ParsePartition(std::string_view text, PartitionField f) {
  const std::string kSyntax = "expected iid, by-class or dirichlet(ALPHA), got " + Quoted(text);
  if (text == "iid") {
    *f.kind = data::PartitionKind::kIid;
    return "";
  }
  if (text == "by-class") {
    *f.kind = data::PartitionKind::kByClass;
    return "";
  }
  std::string_view rest = text;
  if (rest.substr(0, 9) != "dirichlet") return kSyntax;
  rest = Trim(rest.substr(9));
  if (rest.empty()) return "dirichlet needs its concentration, e.g. dirichlet(0.5)";
  if (rest.front() != '(' || rest.back() != ')') return kSyntax;
  std::string_view alpha_text = Trim(rest.substr(1, rest.size() - 2));
  float alpha = 0;
  if (!ParseNumber(alpha_text, &alpha) || !std::isfinite(alpha)) {
    return "dirichlet(ALPHA): expected a number for ALPHA, got " + Quoted(alpha_text);
  }
  if (alpha <= 0) return "dirichlet(ALPHA): ALPHA must be > 0, got " + std::string(alpha_text);
  *f.kind = data::PartitionKind::kDirichlet;
  *f.alpha = alpha;
  return "";
}

std::string ParseString(const RecipeKey& key, std::string_view text, std::string* out) {
  if (!key.allowed.empty() && std::find(key.allowed.begin(), key.allowed.end(), text) == key.allowed.end()) {
    std::vector<std::string> names(key.allowed.begin(), key.allowed.end());
    std::string hint = ClosestName(text, names);
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return "unknown " + std::string(key.noun.empty() ? "value" : key.noun) + " " + Quoted(text) +
           (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; known: " + known;
  }
  if (key.check != nullptr) {
    std::string problem = key.check(text);
    if (!problem.empty()) return problem;
  }
  *out = std::string(text);
  return "";
}

// Shortest text that reads back as the same float; plain decimals for everyday magnitudes (0.0001, not 1e-04).
std::string FloatText(float v) {
  char buf[64];
  float mag = std::fabs(v);
  bool fixed = mag == 0 || (mag >= 1e-5f && mag < 1e7f);
  auto [end, ec] = fixed ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
                         : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

// Plain YAML when unambiguous, else a double-quoted scalar.
std::string YamlString(const std::string& s) {
  bool plain = !s.empty() && s != "~" && s != "null" && s != "Null" && s != "NULL" && s.back() != ':' &&
               s.find(": ") == std::string::npos && s.find(" #") == std::string::npos &&
               (std::isalnum(static_cast<unsigned char>(s.front())) || s.front() == '/' || s.front() == '.' ||
                s.front() == '_') &&
               s.back() != ' ';
  for (char c : s) {
    if (!std::isprint(static_cast<unsigned char>(c)) ||
        std::string_view("{}[],&*!|>'\"%@`").find(c) != std::string_view::npos) {
      plain = false;
    }
  }
  if (plain) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {  // "\x0a": YAML's escape for control characters
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[(c >> 4) & 0xf];
      out += kHex[c & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <typename T>
std::string ListText(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

const std::vector<RecipeKey>& RecipeKeys() {
  static const std::vector<RecipeKey> kKeys = BuildTable();
  return kKeys;
}

const RecipeKey* FindRecipeKey(std::string_view path) {
  for (const RecipeKey& key : RecipeKeys()) {
    if (key.path == path) return &key;
  }
  return nullptr;
}

bool IsRecipeSection(std::string_view path) {
  if (path.empty()) return true;
  for (const RecipeKey& key : RecipeKeys()) {
    if (key.path.size() > path.size() && key.path.substr(0, path.size()) == path && key.path[path.size()] == '.') {
      return true;
    }
  }
  return false;
}

std::vector<std::string> RecipeSectionChildren(std::string_view section) {
  std::vector<std::string> out;
  for (const RecipeKey& key : RecipeKeys()) {
    std::string_view rest = key.path;
    if (!section.empty()) {
      if (rest.size() <= section.size() || rest.substr(0, section.size()) != section || rest[section.size()] != '.') {
        continue;
      }
      rest.remove_prefix(section.size() + 1);
    }
    std::string child(rest.substr(0, rest.find('.')));
    if (std::find(out.begin(), out.end(), child) == out.end()) out.push_back(child);
  }
  return out;
}

bool IsDistributedOnlyPath(std::string_view path) {
  std::string_view first = path.substr(0, path.find('.'));
  if (first == "topology" || first == "sync" || first == "accelerators") return true;
  return path == "optimizer.where" || path.substr(0, 16) == "optimizer.where.";
}

RecipeValueKind KindOf(const RecipeKey& key) {
  Recipe probe;
  RecipeField f = key.field(probe);
  if (std::holds_alternative<std::string*>(f)) return RecipeValueKind::kString;
  if (std::holds_alternative<bool*>(f)) return RecipeValueKind::kBool;
  if (std::holds_alternative<float*>(f)) return RecipeValueKind::kNumber;
  if (std::holds_alternative<PartitionField>(f)) return RecipeValueKind::kPartition;
  if (std::holds_alternative<std::vector<int>*>(f) || std::holds_alternative<std::vector<int64_t>*>(f)) {
    return RecipeValueKind::kIntegerList;
  }
  return RecipeValueKind::kInteger;
}

std::string SetRecipeScalar(const RecipeKey& key, std::string_view text, Recipe* recipe) {
  RecipeField f = key.field(*recipe);
  if (auto* p = std::get_if<std::string*>(&f)) return ParseString(key, text, *p);
  if (auto* p = std::get_if<bool*>(&f)) return ParseBool(text, *p);
  if (auto* p = std::get_if<int*>(&f)) return ParseInteger(key, text, *p);
  if (auto* p = std::get_if<int64_t*>(&f)) return ParseInteger(key, text, *p);
  if (auto* p = std::get_if<uint64_t*>(&f)) return ParseInteger(key, text, *p);
  if (auto* p = std::get_if<float*>(&f)) return ParseFloat(key, text, *p);
  if (auto* p = std::get_if<PartitionField>(&f)) return ParsePartition(Trim(text), *p);
  GEOMX_CHECK(false) << key.path << " is a list key; use ParseRecipeListItem";
  return "";
}

std::string ParseRecipeListItem(const RecipeKey& key, std::string_view text, int64_t* value) {
  Recipe probe;
  if (std::holds_alternative<std::vector<int>*>(key.field(probe))) {
    int narrow = 0;
    std::string problem = ParseInteger(key, text, &narrow);
    *value = narrow;
    return problem;
  }
  return ParseInteger(key, text, value);
}

std::string SetRecipeList(const RecipeKey& key, const std::vector<int64_t>& items, Recipe* recipe) {
  int n = static_cast<int>(items.size());
  if (n < key.min_items || n > key.max_items) {
    std::string want = key.min_items == key.max_items ? std::to_string(key.min_items)
                       : key.max_items == (1 << 20)
                           ? "at least " + std::to_string(key.min_items)
                           : std::to_string(key.min_items) + " to " + std::to_string(key.max_items);
    return "expected " + want + " elements, got " + std::to_string(n);
  }
  RecipeField f = key.field(*recipe);
  if (auto* p = std::get_if<std::vector<int>*>(&f)) {
    (*p)->assign(items.begin(), items.end());
  } else {
    *std::get<std::vector<int64_t>*>(f) = items;
  }
  return "";
}

std::string RecipeValueText(const RecipeKey& key, const Recipe& recipe) {
  RecipeField f = key.field(const_cast<Recipe&>(recipe));  // read only
  if (auto* p = std::get_if<std::string*>(&f)) return YamlString(**p);
  if (auto* p = std::get_if<bool*>(&f)) return **p ? "true" : "false";
  if (auto* p = std::get_if<int*>(&f)) return std::to_string(**p);
  if (auto* p = std::get_if<int64_t*>(&f)) return std::to_string(**p);
  if (auto* p = std::get_if<uint64_t*>(&f)) return std::to_string(**p);
  if (auto* p = std::get_if<float*>(&f)) return FloatText(**p);
  if (auto* p = std::get_if<std::vector<int>*>(&f)) return ListText(**p);
  if (auto* p = std::get_if<std::vector<int64_t>*>(&f)) return ListText(**p);
  const PartitionField& part = std::get<PartitionField>(f);
  switch (*part.kind) {
    case data::PartitionKind::kIid:
      return "iid";
    case data::PartitionKind::kByClass:
      return "by-class";
    case data::PartitionKind::kDirichlet:
      return "dirichlet(" + FloatText(*part.alpha) + ")";
  }
  return "iid";
}

std::string RecipeTypeText(const RecipeKey& key) {
  switch (KindOf(key)) {
    case RecipeValueKind::kString:
      return "string";
    case RecipeValueKind::kBool:
      return "boolean";
    case RecipeValueKind::kInteger:
      return "integer";
    case RecipeValueKind::kNumber:
      return "number";
    case RecipeValueKind::kIntegerList:
      return "list of integers";
    case RecipeValueKind::kPartition:
      return "string";
  }
  return "string";
}

std::string RecipeAllowedText(const RecipeKey& key) {
  if (!key.allowed.empty()) {
    std::string out;
    for (auto v : key.allowed) out += (out.empty() ? "" : ", ") + std::string(v);
    return out;
  }
  if (!key.allowed_doc.empty()) return std::string(key.allowed_doc);
  if (KindOf(key) == RecipeValueKind::kBool) return "true, false";
  std::string range = RangeText(key.range);
  if (KindOf(key) == RecipeValueKind::kIntegerList) {
    std::string out = range.empty() ? "" : "each " + range;
    if (key.min_items > 0) {
      out += (out.empty() ? "" : ", ") + std::to_string(key.min_items) + " to " + std::to_string(key.max_items) +
             " elements";
    }
    return out;
  }
  return range;
}

std::string RecipeSchemaMarkdown() {
  Recipe defaults;
  std::string out;
  std::string section = "-";
  for (const RecipeKey& key : RecipeKeys()) {
    size_t dot = key.path.rfind('.');
    std::string key_section(dot == std::string_view::npos ? "" : key.path.substr(0, dot));
    if (key_section != section) {
      section = key_section;
      out += std::string(out.empty() ? "" : "\n") + "### " +
             (section.empty() ? std::string("Top level") : "`" + section + "`") + "\n\n";
      out += "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
    }
    auto cell = [](std::string s) {
      std::string escaped;
      for (char c : s) escaped += (c == '|') ? std::string("\\|") : std::string(1, c);
      return escaped;
    };
    out += "| `" + std::string(key.path) + "` | " + RecipeTypeText(key) + " | `" +
           cell(RecipeValueText(key, defaults)) + "` | " + cell(RecipeAllowedText(key)) + " | " +
           cell(std::string(key.help)) + " |\n";
  }
  return out;
}

std::string ClosestName(std::string_view word, const std::vector<std::string>& candidates) {
  size_t limit = word.size() <= 3 ? 1 : word.size() <= 6 ? 2 : 3;
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace geomx::cli
