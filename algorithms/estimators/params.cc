#include "algorithms/estimators/params.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "engine/base/check.h"
#include "engine/base/closest_name.h"

namespace geomx::algorithms {
namespace {

std::string NumberText(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));  // "10", not "1e+01"
  std::ostringstream out;
  out.precision(17);
  out << v;
  std::string s = out.str();
  // Shortest text that reads back to the same double.
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream t;
    t.precision(p);
    t << v;
    if (std::strtod(t.str().c_str(), nullptr) == v) return t.str();
  }
  return s;
}

bool ParseDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE) return false;
  *out = v;
  return true;
}

std::string BoundText(const ParamSpec& s) {
  auto num = [&s](double v) { return s.type == ParamType::kInt ? std::to_string(static_cast<int64_t>(v)) : NumberText(v); };
  if (s.has_min && s.has_max) {
    return std::string("in ") + (s.min_open ? "(" : "[") + num(s.min) + ", " + num(s.max) + (s.max_open ? ")" : "]");
  }
  if (s.has_min) return (s.min_open ? "> " : ">= ") + num(s.min);
  if (s.has_max) return (s.max_open ? "< " : "<= ") + num(s.max);
  return "";
}

bool InRange(const ParamSpec& s, double v) {
  if (s.has_min && (s.min_open ? v <= s.min : v < s.min)) return false;
  if (s.has_max && (s.max_open ? v >= s.max : v > s.max)) return false;
  return true;
}

std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace

ParamSpec IntParam(std::string name, int64_t def, int64_t min, int64_t max, std::string help) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = ParamType::kInt;
  s.default_value = std::to_string(def);
  s.help = std::move(help);
  s.has_min = true;
  s.min = static_cast<double>(min);
  s.has_max = true;
  s.max = static_cast<double>(max);
  return s;
}
ParamSpec NumberParam(std::string name, double def, std::string help) {
  ParamSpec s;
  s.name = std::move(name);
  s.default_value = NumberText(def);
  s.help = std::move(help);
  return s;
}
ParamSpec PositiveParam(std::string name, double def, std::string help) {
  ParamSpec s = NumberParam(std::move(name), def, std::move(help));
  s.has_min = true;
  s.min_open = true;
  return s;
}
ParamSpec NonNegativeParam(std::string name, double def, std::string help) {
  ParamSpec s = NumberParam(std::move(name), def, std::move(help));
  s.has_min = true;
  return s;
}
ParamSpec RangeParam(std::string name, double def, double min, bool min_open, double max, bool max_open,
                     std::string help) {
  ParamSpec s = NumberParam(std::move(name), def, std::move(help));
  s.has_min = s.has_max = true;
  s.min = min;
  s.min_open = min_open;
  s.max = max;
  s.max_open = max_open;
  return s;
}
ParamSpec BoolParam(std::string name, bool def, std::string help) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = ParamType::kBool;
  s.default_value = def ? "true" : "false";
  s.help = std::move(help);
  return s;
}
ParamSpec ChoiceParam(std::string name, std::string def, std::vector<std::string> choices, std::string help) {
  return {.name = std::move(name), .type = ParamType::kChoice, .default_value = std::move(def),
          .help = std::move(help), .choices = std::move(choices)};
}

ParamSpec TextParam(std::string name, std::string def, std::string help) {
  return {.name = std::move(name), .type = ParamType::kText, .default_value = std::move(def), .help = std::move(help)};
}

std::string ParamAllowedText(const ParamSpec& s) {
  switch (s.type) {
    case ParamType::kText:
      return "a path (letters, digits and / . _ - + ~ =)";
    case ParamType::kBool:
      return "boolean";
    case ParamType::kChoice:
      return "one of: " + JoinWords(s.choices);
    case ParamType::kInt: {
      std::string b = BoundText(s);
      return "integer" + (b.empty() ? "" : " " + b);
    }
    case ParamType::kNumber: {
      std::string b = BoundText(s);
      std::string text = "number" + (b.empty() ? "" : " " + b);
      if (!s.choices.empty()) text += ", or " + JoinWords(s.choices);
      return text;
    }
  }
  return "";
}

struct ParamResolver {
  static void Set(ParamValues* v, const std::string& name, ParamType type, std::string text) {
    v->text_[name] = std::move(text);
    v->type_[name] = type;
  }
};

// Checks one value; returns its canonical text via *canonical, or the problem.
static std::string CheckValue(const ParamSpec& s, const std::string& raw, std::string* canonical) {
  switch (s.type) {
    case ParamType::kText:
      if (raw.empty()) return "expected a path, got nothing";
      for (char c : raw) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("/._-+~=").find(c) == std::string::npos) {
          return "expected a path of letters, digits and / . _ - + ~ =, got '" + raw + "'";
        }
      }
      *canonical = raw;
      return "";
    case ParamType::kBool:
      if (raw == "true" || raw == "false") {
        *canonical = raw;
        return "";
      }
      return "expected a boolean (true or false), got '" + raw + "'";
    case ParamType::kChoice:
      for (const auto& c : s.choices) {
        if (c == raw) {
          *canonical = raw;
          return "";
        }
      }
      {
        std::string hint = ClosestName(raw, s.choices);
        return "unknown value '" + raw + "' (allowed: " + JoinWords(s.choices) + ")" +
               (hint.empty() ? "" : "; did you mean '" + hint + "'?");
      }
    case ParamType::kInt: {
      int64_t v = 0;
      double d = 0;
      if (!ParseInt(raw, &v)) {
        if (ParseDouble(raw, &d) && d == std::floor(d) && std::fabs(d) < 9e15) {
          v = static_cast<int64_t>(d);
        } else {
          return "expected an integer, got '" + raw + "'";
        }
      }
      if (!InRange(s, static_cast<double>(v))) return "must be " + BoundText(s) + ", got " + raw;
      *canonical = std::to_string(v);
      return "";
    }
    case ParamType::kNumber: {
      for (const auto& w : s.choices) {
        if (w == raw) {
          *canonical = raw;
          return "";
        }
      }
      double d = 0;
      if (!ParseDouble(raw, &d)) {
        return "expected a number" + (s.choices.empty() ? std::string() : " or " + JoinWords(s.choices)) + ", got '" +
               raw + "'";
      }
      if (!InRange(s, d)) return "must be " + BoundText(s) + ", got " + raw;
      *canonical = NumberText(d);
      return "";
    }
  }
  return "unsupported parameter type";
}

ParamValues ResolveParams(const std::vector<ParamSpec>& specs, const std::map<std::string, std::string>& given,
                          std::vector<ParamProblem>* problems) {
  ParamValues values;
  std::vector<std::string> names;
  for (const ParamSpec& s : specs) names.push_back(s.name);
  for (const auto& [name, raw] : given) {
    bool known = false;
    for (const ParamSpec& s : specs) known = known || s.name == name;
    if (!known) {
      std::string hint = ClosestName(name, names);
      problems->push_back({name, hint.empty() ? "unknown parameter (this algorithm has: " + JoinWords(names) + ")"
                                              : "unknown parameter (did you mean '" + hint + "'?)"});
    }
  }
  for (const ParamSpec& s : specs) {
    auto it = given.find(s.name);
    const std::string& raw = it == given.end() ? s.default_value : it->second;
    std::string canonical;
    std::string problem = CheckValue(s, raw, &canonical);
    GEOMX_CHECK(it != given.end() || problem.empty()) << "bad default for parameter " << s.name << ": " << problem;
    if (!problem.empty()) {
      problems->push_back({s.name, problem});
      canonical = s.default_value;
    }
    ParamResolver::Set(&values, s.name, s.type, canonical);
  }
  return values;
}

Status ParamProblemsStatus(const std::string& where, const std::vector<ParamProblem>& problems) {
  if (problems.empty()) return Status::Ok();
  std::string text;
  for (const ParamProblem& p : problems) {
    if (!text.empty()) text += '\n';
    if (!where.empty()) text.append(where).append(": ");
    text.append("algorithm.").append(p.name).append(": ").append(p.message);
  }
  return Status::InvalidArgument(text);
}

const std::string& ParamValues::Text(const std::string& name) const {
  auto it = text_.find(name);
  GEOMX_CHECK(it != text_.end()) << "parameter '" << name << "' was not declared";
  return it->second;
}

int64_t ParamValues::Int(const std::string& name) const {
  GEOMX_CHECK(type_.at(name) == ParamType::kInt) << name << " is not an integer parameter";
  return std::strtoll(Text(name).c_str(), nullptr, 10);
}

double ParamValues::Number(const std::string& name) const {
  GEOMX_CHECK(type_.at(name) == ParamType::kNumber || type_.at(name) == ParamType::kInt)
      << name << " is not a number parameter";
  GEOMX_CHECK(!IsWord(name)) << name << " holds the word '" << Text(name) << "', not a number";
  return std::strtod(Text(name).c_str(), nullptr);
}

bool ParamValues::Bool(const std::string& name) const {
  GEOMX_CHECK(type_.at(name) == ParamType::kBool) << name << " is not a boolean parameter";
  return Text(name) == "true";
}

const std::string& ParamValues::Choice(const std::string& name) const {
  GEOMX_CHECK(type_.at(name) == ParamType::kChoice) << name << " is not a choice parameter";
  return Text(name);
}

const std::string& ParamValues::TextValue(const std::string& name) const {
  GEOMX_CHECK(type_.at(name) == ParamType::kText) << name << " is not a text parameter";
  return Text(name);
}

bool ParamValues::IsWord(const std::string& name) const {
  if (type_.at(name) != ParamType::kNumber) return false;
  double d = 0;
  return !ParseDouble(Text(name), &d);
}

}  // namespace geomx::algorithms
