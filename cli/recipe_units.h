// Recipe values with units: link bandwidths ("50mbit") and durations ("25ms", "2s"), as written in the recipe's
// `topology` section (docs/recipes.md, "Units"). Parsing returns "" or the problem, in the style of
// cli/recipe_schema.h; printing gives the shortest text that parses back to the same value.
//
// Bandwidth is in bits per second, with decimal prefixes: `800kbit` = 800e3, `50mbit` = 50e6, `1gbit` = 1e9,
// `bit` or no unit = bit/s; `/s` may follow the unit (`50mbit/s`). Units are case-insensitive. Byte-based spellings
// (`mbps`, `mb`, `mbyte`) are refused: tc reads `mbps` as megabytes per second, people often mean megabits.
// `0` means unlimited (no shaping).
//
// Durations take a unit: `us`, `ms`, `s`, `min`, `h` (`1.5s` is fine); `0` needs none.
//
// Loss rates are a fraction in [0, 1) or a percentage below 100: `0.02` = `2%`.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace geomx::cli {

// Small text helpers shared by the recipe parser: `text` in single quotes for messages, and `s` without leading
// and trailing whitespace.
std::string Quoted(std::string_view text);
std::string_view Trim(std::string_view s);

// "50mbit" -> 5e7. Rejects negative, non-finite and unit-less text that is not a number.
std::string ParseBandwidth(std::string_view text, double* bits_per_second);
// 5e7 -> "50mbit", 0 -> "0", 1.5e9 -> "1500mbit", 12.5 -> "12.5bit".
std::string BandwidthText(double bits_per_second);

// "25ms" -> 0.025 (seconds). Negative durations and unit-less non-zero numbers are errors.
std::string ParseDurationSeconds(std::string_view text, double* seconds);
// "2s" -> 2000 (milliseconds); a duration that is not a whole number of milliseconds, or that does not fit an int,
// is an error.
std::string ParseDurationMillis(std::string_view text, int* millis);
// 0.025 -> "25ms", 2 -> "2s", 0 -> "0", 1e-4 -> "100us".
std::string DurationSecondsText(double seconds);
// 2000 -> "2s", 1500 -> "1500ms", 0 -> "0".
std::string DurationMillisText(int millis);

// "2%" -> 0.02, "0.02" -> 0.02. Rates outside [0, 1) are errors.
std::string ParseLoss(std::string_view text, double* rate);
// 0.02 -> "0.02" (the shortest decimal that reads back exactly).
std::string LossText(double rate);

}  // namespace geomx::cli
