#include "cli/recipe_units.h"

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <vector>

namespace geomx::cli {

std::string Quoted(std::string_view s) {
  std::string out(1, '\'');  // appended: GCC 12 warns falsely (-Wrestrict) on "'" + std::string(s)
  out.append(s);
  out += '\'';
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "50mbit" into 50 and "mbit". The number is plain decimal (no exponent: "1e3" would be ambiguous next to
// unit letters). Returns false when there is no number in front.
bool SplitNumber(std::string_view text, double* value, std::string* unit) {
  size_t end = 0;
  if (end < text.size() && (text[end] == '+' || text[end] == '-')) ++end;
  bool digits = false;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
    digits |= text[end] != '.';
    ++end;
  }
  if (!digits) return false;
  std::string_view number = text.substr(0, end);
  if (number.front() == '+') number.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), *value);
  if (ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(*value)) return false;
  *unit = Lower(Trim(text.substr(end)));
  return true;
}

// Shortest plain decimal (never an exponent: SplitNumber reads none) that reads back as the same double.
std::string Shortest(double v) {
  char buf[512];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  return std::string(buf, end);
}

// Plain decimal text of a whole number held in a double (to_chars would switch to 1e+15 for large values).
std::string Whole(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed, 0);
  return std::string(buf, end);
}

struct Unit {
  std::string_view name;
  double factor;  // value in the base unit = number * factor (or / divisor when `divide`)
  bool divide;    // divide by factor instead (exact decimal fractions: 25ms = 25 / 1000 s)
};

}  // namespace

std::string ParseBandwidth(std::string_view text, double* bits_per_second) {
  text = Trim(text);
  const std::string kExpected = "expected a bandwidth such as 50mbit, 1gbit or 800kbit (bits per second), got ";
  double number = 0;
  std::string unit;
  if (!SplitNumber(text, &number, &unit)) return kExpected + Quoted(text);
  if (unit.size() > 2 && unit.substr(unit.size() - 2) == "/s") unit.resize(unit.size() - 2);
  static const std::vector<Unit> kUnits = {{"", 1, false},       {"bit", 1, false},    {"kbit", 1e3, false},
                                           {"mbit", 1e6, false}, {"gbit", 1e9, false}, {"tbit", 1e12, false}};
  const Unit* found = nullptr;
  for (const Unit& u : kUnits) {
    if (u.name == unit) found = &u;
  }
  if (found == nullptr) {
    static const std::vector<std::string_view> kBytes = {"bps", "kbps", "mbps", "gbps", "tbps",  "b",     "kb",
                                                         "mb",  "gb",   "tb",   "byte", "kbyte", "mbyte", "gbyte",
                                                         "kib", "mib",  "gib",  "k",    "m",     "g"};
    for (std::string_view b : kBytes) {
      if (b == unit) {
        std::string prefix = unit.substr(0, 1) == "b" ? "" : unit.substr(0, 1);
        return "ambiguous unit " + Quoted(unit) + " in " + Quoted(text) + ": write bits per second, e.g. " +
               Shortest(number) + prefix + "bit (tc reads '" + prefix + "bps' as bytes per second, that is " +
               Shortest(number * 8) + prefix + "bit)";
      }
    }
    return "unknown bandwidth unit " + Quoted(unit) + " in " + Quoted(text) +
           " (use bit, kbit, mbit or gbit: bits per second)";
  }
  if (number < 0) return "must be >= 0 (0 = unlimited), got " + std::string(text);
  *bits_per_second = number * found->factor;
  if (!std::isfinite(*bits_per_second)) return kExpected + Quoted(text);
  return "";
}

std::string BandwidthText(double bps) {
  if (bps == 0) return "0";
  for (const Unit& u : {Unit{"gbit", 1e9, false}, Unit{"mbit", 1e6, false}, Unit{"kbit", 1e3, false}}) {
    double n = bps / u.factor;
    if (n >= 1 && n == std::floor(n) && n * u.factor == bps && n < 1e15) return Whole(n) + std::string(u.name);
  }
  return (bps == std::floor(bps) && bps < 1e15 ? Whole(bps) : Shortest(bps)) + "bit";
}

std::string ParseDurationSeconds(std::string_view text, double* seconds) {
  text = Trim(text);
  const std::string kExpected = "expected a duration such as 25ms, 2s or 1.5min, got ";
  double number = 0;
  std::string unit;
  if (!SplitNumber(text, &number, &unit)) return kExpected + Quoted(text);
  static const std::vector<Unit> kUnits = {
      {"us", 1e6, true}, {"ms", 1e3, true}, {"s", 1, false}, {"min", 60, false}, {"h", 3600, false}};
  const Unit* found = nullptr;
  for (const Unit& u : kUnits) {
    if (u.name == unit) found = &u;
  }
  if (unit.empty()) {
    if (number != 0) {
      return "a duration needs a unit: " + std::string(text) + "ms or " + std::string(text) + "s? (us, ms, s, min, h)";
    }
  } else if (found == nullptr) {
    std::string hint = unit == "sec" || unit == "secs" || unit == "second" || unit == "seconds" ? " (did you mean 's'?)"
                       : unit == "m" || unit == "mins" || unit == "minute" || unit == "minutes"
                           ? " (did you mean 'min'?)"
                       : unit == "msec" || unit == "millis" ? " (did you mean 'ms'?)"
                                                            : "";
    return "unknown duration unit " + Quoted(unit) + " in " + Quoted(text) + hint + " (use us, ms, s, min or h)";
  }
  if (number < 0) return "must be >= 0, got " + std::string(text);
  *seconds = found == nullptr ? 0 : found->divide ? number / found->factor : number * found->factor;
  return "";
}

std::string ParseDurationMillis(std::string_view text, int* millis) {
  double seconds = 0;
  std::string problem = ParseDurationSeconds(text, &seconds);
  if (!problem.empty()) return problem;
  // Milliseconds straight from the number where possible: 0.001 * 25 is not exactly 25 / 1000 * 1000.
  double number = 0;
  std::string unit;
  SplitNumber(Trim(text), &number, &unit);
  double ms = unit == "us" ? number / 1e3 : unit == "ms" ? number : seconds * 1e3;
  double whole = std::round(ms);
  if (std::fabs(ms - whole) > 1e-9 * std::max(1.0, std::fabs(ms))) {
    return "must be a whole number of milliseconds, got " + std::string(Trim(text));
  }
  if (whole > INT_MAX) return "must be at most " + std::to_string(INT_MAX / 1000) + "s, got " + std::string(Trim(text));
  *millis = static_cast<int>(whole);
  return "";
}

std::string DurationSecondsText(double seconds) {
  if (seconds == 0) return "0";
  double ms = std::round(seconds * 1e3);
  if (ms / 1e3 == seconds && ms < 1e15) {
    return std::fmod(ms, 1000) == 0 ? Whole(ms / 1000) + "s" : Whole(ms) + "ms";
  }
  double us = std::round(seconds * 1e6);
  if (us / 1e6 == seconds && us < 1e15) return Whole(us) + "us";
  return Shortest(seconds) + "s";
}

std::string DurationMillisText(int millis) {
  if (millis == 0) return "0";
  return millis % 1000 == 0 ? std::to_string(millis / 1000) + "s" : std::to_string(millis) + "ms";
}

std::string ParseLoss(std::string_view text, double* rate) {
  text = Trim(text);
  const std::string kExpected = "expected a loss rate such as 2% or 0.02, got ";
  double number = 0;
  std::string unit;
  if (!SplitNumber(text, &number, &unit) || !(unit.empty() || unit == "%")) return kExpected + Quoted(text);
  const double value = unit == "%" ? number / 100 : number;
  if (!(value >= 0 && value < 1)) {
    return "a loss rate must be at least 0 and below 1 (100%), got " + Quoted(text);
  }
  *rate = value;
  return "";
}

std::string LossText(double rate) { return Shortest(rate); }

}  // namespace geomx::cli
