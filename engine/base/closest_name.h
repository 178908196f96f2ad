// "Did you mean": the closest of a set of names to a misspelt word, for every error that names an unknown key,
// flag value, algorithm or parameter. Pure and thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace geomx {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), case-insensitive.
size_t EditDistance(std::string_view a, std::string_view b);
// min(EditDistance(a, b), bound + 1), in O((|a| + |b|) * bound) time: only the diagonal band of the table within
// `bound` of the main diagonal can hold a distance <= bound.
size_t EditDistanceAtMost(std::string_view a, std::string_view b, size_t bound);

// The candidate closest to `word` by EditDistance, if close enough to be a plausible typo (1 edit for words of up to
// 3 letters, 2 up to 6, else 3); "" otherwise.
std::string ClosestName(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace geomx
