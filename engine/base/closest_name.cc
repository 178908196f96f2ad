#include "engine/base/closest_name.h"

#include <algorithm>
#include <cctype>

namespace geomx {

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

size_t EditDistanceAtMost(std::string_view a, std::string_view b, size_t bound) {
  const size_t over = bound + 1;
  const size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > bound) return over;
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  // Three rows of the table (i - 2, i - 1, i); cells outside the band hold `over` (every true value there is
  // larger than bound, and `over` stands for "too far").
  thread_local std::vector<size_t> back2, back1, row;  // reused: ClosestName calls this for every candidate
  back2.assign(b.size() + 1, over);
  back1.assign(b.size() + 1, over);
  row.assign(b.size() + 1, over);
  for (size_t j = 0; j <= std::min(b.size(), bound); ++j) back1[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    std::fill(row.begin(), row.end(), over);
    const size_t lo = i > bound ? i - bound : 0, hi = std::min(b.size(), i + bound);
    size_t row_min = over;
    for (size_t j = lo; j <= hi; ++j) {
      size_t d = i;  // column 0: delete all of a's first i letters
      if (j > 0) {
        d = std::min({back1[j] + 1, row[j - 1] + 1, back1[j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      }
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) d = std::min(d, back2[j - 2] + 1);
      row[j] = std::min(d, over);
      row_min = std::min(row_min, row[j]);
    }
    if (row_min >= over) return over;  // every path goes through this row
    std::swap(back2, back1);
    std::swap(back1, row);
  }
  return std::min(back1[b.size()], over);
}

std::string ClosestName(std::string_view word, const std::vector<std::string>& candidates) {
  size_t limit = word.size() <= 3 ? 1 : word.size() <= 6 ? 2 : 3;
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    // The distance is at least the difference in length: skip the quadratic table for words that cannot match
    // (a long garbage key against every recipe key would cost its length times theirs, each time).
    const size_t gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (gap >= best_distance) continue;
    const size_t d = EditDistanceAtMost(word, c, best_distance - 1);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace geomx
