// Typed, validated parameters of an estimator (the keys of a recipe's `algorithm:` section besides `name`).
//
// Each estimator lists its ParamSpecs (name, type, default, range or choices, help). ResolveParams checks what a
// user gave against them, with a "did you mean" for unknown names, and fills in the defaults; estimators then read
// typed values (Int, Number, Bool, Choice) that are known to be valid. Values travel as text (YAML scalars, --set
// flags, the model file), so a resolved ParamValues prints back to text that resolves to the same values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::algorithms {

// kText: free text such as a path (the gan's classifier run folder), one line of letters, digits and / . _ - + ~ =
// (so that it round-trips through YAML and the model file unquoted); never empty.
enum class ParamType : uint8_t { kInt, kNumber, kBool, kChoice, kText };

struct ParamSpec {
  std::string name;           // "C", "max_iter", "kernel"
  ParamType type = ParamType::kNumber;
  std::string default_value;  // as text: "1", "0.001", "true", "rbf"; for kNumber also "auto"-style words listed
                              // in `words` (e.g. gamma: "scale")
  std::string help;           // one line for `geomx algos NAME` and docs/algorithms.md
  // kInt / kNumber bounds; unset sides are unbounded.
  bool has_min = false, min_open = false;
  double min = 0;
  bool has_max = false, max_open = false;
  double max = 0;
  std::vector<std::string> choices;  // kChoice: the allowed values; kNumber: extra words allowed instead of a number
};

// Spec builders for the estimators' tables.
ParamSpec IntParam(std::string name, int64_t def, int64_t min, int64_t max, std::string help);
ParamSpec NumberParam(std::string name, double def, std::string help);            // unbounded
ParamSpec PositiveParam(std::string name, double def, std::string help);          // (0, inf)
ParamSpec NonNegativeParam(std::string name, double def, std::string help);       // [0, inf)
ParamSpec RangeParam(std::string name, double def, double min, bool min_open, double max, bool max_open,
                     std::string help);
ParamSpec BoolParam(std::string name, bool def, std::string help);
ParamSpec ChoiceParam(std::string name, std::string def, std::vector<std::string> choices, std::string help);
ParamSpec TextParam(std::string name, std::string def, std::string help);

// "integer >= 1", "number in (0, 1]", "one of: l1, l2", "boolean"; for docs and errors.
std::string ParamAllowedText(const ParamSpec& spec);

class ParamValues {
 public:
  // Typed access to a resolved value. Asking for a name the estimator did not declare, or with the wrong type, is a
  // programmer error (GEOMX_CHECK).
  int64_t Int(const std::string& name) const;
  double Number(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& Choice(const std::string& name) const;
  const std::string& TextValue(const std::string& name) const;  // kText
  // True when a kNumber parameter holds one of its words instead of a number ("scale" for gamma).
  bool IsWord(const std::string& name) const;
  const std::string& Text(const std::string& name) const;
  // Every value as text, by name (sorted).
  const std::map<std::string, std::string>& texts() const { return text_; }

 private:
  friend struct ParamResolver;
  std::map<std::string, std::string> text_;
  std::map<std::string, ParamType> type_;
};

struct ParamProblem {
  std::string name;     // the parameter as given (unknown names too)
  std::string message;  // "expected an integer, got 'x'", "unknown parameter (did you mean 'C'?)"
};

// Resolves `given` (name -> value text) against `specs`. Every problem is appended to `problems` (all of them, not
// only the first); the result is valid only when none was found.
ParamValues ResolveParams(const std::vector<ParamSpec>& specs, const std::map<std::string, std::string>& given,
                          std::vector<ParamProblem>* problems);

// One problem list as a single kInvalidArgument Status, "<where>: algorithm.<name>: <message>" per line.
Status ParamProblemsStatus(const std::string& where, const std::vector<ParamProblem>& problems);

}  // namespace geomx::algorithms
