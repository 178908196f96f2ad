#include "cli/recipe_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>

#include "cli/recipe_units.h"
#include "engine/base/check.h"

namespace geomx::cli {
namespace {

// ---- scalar parsing ----
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

// A recipe whose lists of mappings have one default item, so that item keys have a field to point at.
Recipe Probe() {
  Recipe probe;
  probe.topology.datacentres.resize(1);
  probe.topology.direct_links.resize(1);
  return probe;
}

RecipeField FieldOf(const RecipeKey& key, Recipe& recipe, size_t index) {
  if (key.item_field == nullptr) return key.field(recipe);
  GEOMX_CHECK_LT(index, RecipeListSize(RecipeListKeyOf(key), recipe)) << key.path;
  return key.item_field(recipe, index);
}

// The value of a link field that may say `wan` (nullptr for every other field).
double* InheritedValue(const RecipeField& f) {
  if (auto* p = std::get_if<BandwidthField>(&f); p != nullptr && p->inherit) return p->bits_per_second;
  if (auto* p = std::get_if<DurationField>(&f); p != nullptr && p->inherit) return p->seconds;
  if (auto* p = std::get_if<LossField>(&f); p != nullptr && p->inherit) return p->rate;
  return nullptr;
}

// True (and the field set to kInheritLink) when the field may inherit and `text` is the word `wan`.
bool InheritsAndSaysSo(const RecipeField& f, std::string_view text) {
  double* value = InheritedValue(f);
  if (value == nullptr || Trim(text) != kInheritWord) return false;
  *value = comm::DataCentre::kInheritLink;
  return true;
}

std::string ParseDuration(const RecipeKey& key, std::string_view text, DurationField f) {
  double seconds = 0;
  int millis = 0;
  std::string problem = f.millis != nullptr ? ParseDurationMillis(text, &millis) : ParseDurationSeconds(text, &seconds);
  if (!problem.empty()) return problem;
  if (f.millis != nullptr) seconds = millis / 1e3;
  if (!InRange(key.range, seconds)) return RangeProblem(key.range, Trim(text));
  if (f.millis != nullptr) {
    *f.millis = millis;
  } else {
    *f.seconds = seconds;
  }
  return "";
}

std::string RecordListText(const RecipeKey& key, const Recipe& recipe) {
  std::string out = "[";
  std::vector<const RecipeKey*> item_keys = RecipeItemKeys(key);
  for (size_t i = 0; i < RecipeListSize(key, recipe); ++i) {
    out += i ? ", {" : "{";
    for (size_t k = 0; k < item_keys.size(); ++k) {
      std::string_view leaf = item_keys[k]->path.substr(item_keys[k]->path.rfind('.') + 1);
      out += (k ? ", " : "") + std::string(leaf) + ": " + RecipeValueText(*item_keys[k], recipe, i);
    }
    out += "}";
  }
  return out + "]";
}

}  // namespace

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
    if (child.size() > 2 && child.substr(child.size() - 2) == "[]") child.resize(child.size() - 2);
    if (std::find(out.begin(), out.end(), child) == out.end()) out.push_back(child);
  }
  return out;
}

bool IsTopologyPath(std::string_view path) {
  std::string_view first = path.substr(0, path.find_first_of(".["));
  return first == "topology";
}

bool IsRecipeItemKey(const RecipeKey& key) { return key.item_field != nullptr; }

const RecipeKey& RecipeListKeyOf(const RecipeKey& item_key) {
  size_t brackets = item_key.path.find("[]");
  GEOMX_CHECK(brackets != std::string_view::npos) << item_key.path << " is not an item key";
  const RecipeKey* list = FindRecipeKey(item_key.path.substr(0, brackets));
  GEOMX_CHECK(list != nullptr) << item_key.path << " has no list key";
  return *list;
}

size_t RecipeListSize(const RecipeKey& list_key, const Recipe& recipe) {
  RecipeField f = list_key.field(const_cast<Recipe&>(recipe));  // read only
  if (auto* links = std::get_if<std::vector<comm::DirectLink>*>(&f)) return (*links)->size();
  return std::get<std::vector<comm::DataCentre>*>(f)->size();
}

void ResetRecipeList(const RecipeKey& list_key, size_t n, Recipe* recipe) {
  RecipeField f = list_key.field(*recipe);
  if (auto* links = std::get_if<std::vector<comm::DirectLink>*>(&f)) return (*links)->assign(n, comm::DirectLink{});
  std::get<std::vector<comm::DataCentre>*>(f)->assign(n, comm::DataCentre{});
}

std::string RecipeItemPath(const RecipeKey& item_key, size_t index) {
  std::string path(item_key.path);
  size_t brackets = path.find("[]");
  return path.replace(brackets, 2, "[" + std::to_string(index) + "]");
}

std::vector<const RecipeKey*> RecipeItemKeys(const RecipeKey& list_key) {
  std::vector<const RecipeKey*> out;
  std::string prefix = std::string(list_key.path) + "[].";
  for (const RecipeKey& key : RecipeKeys()) {
    if (key.path.substr(0, prefix.size()) == prefix) out.push_back(&key);
  }
  return out;
}

RecipeValueKind KindOf(const RecipeKey& key) {
  Recipe probe = Probe();
  RecipeField f = FieldOf(key, probe, 0);
  if (std::holds_alternative<std::string*>(f)) return RecipeValueKind::kString;
  if (std::holds_alternative<bool*>(f)) return RecipeValueKind::kBool;
  if (std::holds_alternative<float*>(f)) return RecipeValueKind::kNumber;
  if (std::holds_alternative<PartitionField>(f)) return RecipeValueKind::kPartition;
  if (std::holds_alternative<BandwidthField>(f)) return RecipeValueKind::kBandwidth;
  if (std::holds_alternative<DurationField>(f)) return RecipeValueKind::kDuration;
  if (std::holds_alternative<LossField>(f)) return RecipeValueKind::kLoss;
  if (std::holds_alternative<std::vector<comm::DataCentre>*>(f) ||
      std::holds_alternative<std::vector<comm::DirectLink>*>(f)) {
    return RecipeValueKind::kRecordList;
  }
  if (std::holds_alternative<std::vector<int>*>(f) || std::holds_alternative<std::vector<int64_t>*>(f)) {
    return RecipeValueKind::kIntegerList;
  }
  return RecipeValueKind::kInteger;
}

std::string SetRecipeScalar(const RecipeKey& key, std::string_view text, Recipe* recipe, size_t index) {
  RecipeField f = FieldOf(key, *recipe, index);
  if (auto* p = std::get_if<std::string*>(&f)) return ParseString(key, text, *p);
  if (auto* p = std::get_if<bool*>(&f)) return ParseBool(text, *p);
  if (auto* p = std::get_if<int*>(&f)) return ParseInteger(key, text, *p);
  if (auto* p = std::get_if<int64_t*>(&f)) return ParseInteger(key, text, *p);
  if (auto* p = std::get_if<uint64_t*>(&f)) return ParseInteger(key, text, *p);
  if (auto* p = std::get_if<float*>(&f)) return ParseFloat(key, text, *p);
  if (auto* p = std::get_if<PartitionField>(&f)) return ParsePartition(Trim(text), *p);
  if (InheritsAndSaysSo(f, text)) return "";
  if (auto* p = std::get_if<BandwidthField>(&f)) return ParseBandwidth(text, p->bits_per_second);
  if (auto* p = std::get_if<DurationField>(&f)) return ParseDuration(key, text, *p);
  if (auto* p = std::get_if<LossField>(&f)) return ParseLoss(text, p->rate);
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

std::string RecipeValueText(const RecipeKey& key, const Recipe& recipe, size_t index) {
  RecipeField f = FieldOf(key, const_cast<Recipe&>(recipe), index);  // read only
  if (auto* p = std::get_if<std::string*>(&f)) return YamlString(**p);
  if (auto* p = std::get_if<bool*>(&f)) return **p ? "true" : "false";
  if (auto* p = std::get_if<int*>(&f)) return std::to_string(**p);
  if (auto* p = std::get_if<int64_t*>(&f)) return std::to_string(**p);
  if (auto* p = std::get_if<uint64_t*>(&f)) return std::to_string(**p);
  if (auto* p = std::get_if<float*>(&f)) return FloatText(**p);
  if (auto* p = std::get_if<std::vector<int>*>(&f)) return ListText(**p);
  if (auto* p = std::get_if<std::vector<int64_t>*>(&f)) return ListText(**p);
  if (double* inherited = InheritedValue(f); inherited != nullptr && *inherited == comm::DataCentre::kInheritLink) {
    return std::string(kInheritWord);
  }
  if (auto* p = std::get_if<BandwidthField>(&f)) return BandwidthText(*p->bits_per_second);
  if (auto* p = std::get_if<DurationField>(&f)) {
    return p->millis != nullptr ? DurationMillisText(*p->millis) : DurationSecondsText(*p->seconds);
  }
  if (auto* p = std::get_if<LossField>(&f)) return LossText(*p->rate);
  if (std::holds_alternative<std::vector<comm::DataCentre>*>(f) ||
      std::holds_alternative<std::vector<comm::DirectLink>*>(f)) {
    return RecordListText(key, recipe);
  }
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
    case RecipeValueKind::kBandwidth:
      return "bandwidth";
    case RecipeValueKind::kDuration:
      return "duration";
    case RecipeValueKind::kLoss:
      return "loss rate";
    case RecipeValueKind::kRecordList:
      return "list of mappings";
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
  Recipe defaults = Probe();  // item keys show the defaults of a new item
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
           cell(RecipeValueText(key, KindOf(key) == RecipeValueKind::kRecordList ? Recipe{} : defaults)) + "` | " +
           cell(RecipeAllowedText(key)) + " | " + cell(std::string(key.help)) + " |\n";
  }
  return out;
}

}  // namespace geomx::cli
