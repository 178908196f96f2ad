#include "engine/base/closest_name.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace geomx {
namespace {

TEST(ClosestNameTest, EditDistanceOfKnownPairs) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("abc", "ABC"), 0u);     // case-insensitive
  EXPECT_EQ(EditDistance("workres", "workers"), 1u);  // one transposition
  EXPECT_EQ(EditDistance("ca", "abc"), 3u);     // optimal string alignment, not full Damerau (which gives 2)
}

// The banded version agrees with the full table whenever the distance is within the bound, and says bound + 1
// otherwise: random words over a small alphabet (many near misses and transpositions), every bound 0..4.
TEST(ClosestNameTest, BandedDistanceMatchesTheFullTable) {
  std::mt19937 rng(11);
  auto word = [&](size_t max_len) {
    std::string w(rng() % (max_len + 1), 'a');
    for (char& c : w) c = "abcAB"[rng() % 5];
    return w;
  };
  for (int trial = 0; trial < 20000; ++trial) {
    const std::string a = word(9);
    std::string b = a;
    if (trial % 2 == 0) {
      b = word(9);
    } else {
      for (int e = 0; e < static_cast<int>(rng() % 4); ++e) {  // a few edits of a
        const size_t pos = b.empty() ? 0 : rng() % b.size();
        switch (rng() % 3) {
          case 0: b.insert(b.begin() + static_cast<long>(pos), 'c'); break;
          case 1: if (!b.empty()) b.erase(b.begin() + static_cast<long>(pos)); break;
          default: if (pos + 1 < b.size()) std::swap(b[pos], b[pos + 1]);
        }
      }
    }
    const size_t full = EditDistance(a, b);
    for (size_t bound = 0; bound <= 4; ++bound) {
      ASSERT_EQ(EditDistanceAtMost(a, b, bound), std::min(full, bound + 1)) << a << " / " << b << " bound " << bound;
    }
  }
}

TEST(ClosestNameTest, ClosestNameSuggestsPlausibleTyposOnly) {
  const std::vector<std::string> keys = {"workers", "servers", "bandwidth", "latency", "loss"};
  EXPECT_EQ(ClosestName("workres", keys), "workers");
  EXPECT_EQ(ClosestName("bandwith", keys), "bandwidth");
  EXPECT_EQ(ClosestName("los", keys), "loss");
  EXPECT_EQ(ClosestName("gpu", keys), "");
  EXPECT_EQ(ClosestName(std::string(5000, 'x'), keys), "");
}

}  // namespace
}  // namespace geomx
