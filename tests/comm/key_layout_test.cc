#include "comm/key_layout.h"

#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

TEST(KeyLayoutTest, BalancesBytesLargestFirst) {
  // Alternating weight/bias keys: GeoMX's (key * 9973) mod n hash put every weight on server 0.
  std::vector<KeySpec> keys;
  for (uint64_t k = 0; k < 20; ++k) keys.push_back({k, k % 2 == 0 ? 1000u + 10 * k : 10u});
  Result<KeyLayout> layout = KeyLayout::Build(keys, 2, int64_t{1} << 20);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  const auto& bytes = layout->bytes_per_server();
  uint64_t total = 0;
  for (const auto& k : keys) total += k.elems * 4;
  EXPECT_EQ(bytes[0] + bytes[1], total);
  const uint64_t diff = bytes[0] > bytes[1] ? bytes[0] - bytes[1] : bytes[1] - bytes[0];
  EXPECT_LE(diff, 1180u * 4) << "imbalance above the largest key";
  EXPECT_LT(static_cast<double>(diff) / static_cast<double>(total), 0.05);
}

TEST(KeyLayoutTest, LptIsWithinLargestItemOfPerfect) {
  std::mt19937 rng(7);
  std::vector<KeySpec> keys;
  uint64_t largest = 0;
  for (uint64_t k = 0; k < 200; ++k) {
    keys.push_back({k, 1 + rng() % 5000});
    largest = std::max(largest, keys.back().elems * 4);
  }
  for (int servers : {1, 3, 4, 7}) {
    Result<KeyLayout> layout = KeyLayout::Build(keys, servers, int64_t{1} << 30);
    ASSERT_TRUE(layout.ok());
    const auto& b = layout->bytes_per_server();
    ASSERT_EQ(static_cast<int>(b.size()), servers);
    EXPECT_LE(*std::max_element(b.begin(), b.end()) - *std::min_element(b.begin(), b.end()), largest);
  }
}

TEST(KeyLayoutTest, SplitSlicesCoverEveryElementExactlyOnce) {
  const std::vector<KeySpec> keys = {{0, 10}, {1, 1000}, {2, 64}, {3, 65}, {4, 0}, {5, 1000, false}};
  Result<KeyLayout> layout = KeyLayout::Build(keys, 3, 256);  // 64 floats per slice at most
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  for (const KeySpec& spec : keys) {
    const auto& slices = layout->slices(spec.key);
    ASSERT_FALSE(slices.empty());
    std::vector<int> covered(spec.elems, 0);
    for (size_t i = 0; i < slices.size(); ++i) {
      const KeySlice& s = slices[i];
      EXPECT_EQ(s.key, spec.key);
      EXPECT_EQ(s.slice, i);
      EXPECT_EQ(s.wire_key, WireKey(spec.key, static_cast<uint32_t>(i)));
      EXPECT_EQ(layout->FindWireKey(s.wire_key), &s);
      EXPECT_GE(s.server_rank, 0);
      EXPECT_LT(s.server_rank, 3);
      if (spec.splittable) {
        EXPECT_LE(s.length, 64u);
      }
      for (uint64_t j = s.offset; j < s.offset + s.length; ++j) covered[j]++;
    }
    for (uint64_t j = 0; j < spec.elems; ++j) ASSERT_EQ(covered[j], 1) << "key " << spec.key << " element " << j;
    EXPECT_EQ(layout->length(spec.key), spec.elems);
  }
  EXPECT_EQ(layout->slices(1).size(), 16u);  // ceil(1000 / 64)
  EXPECT_EQ(layout->slices(3).size(), 2u);
  EXPECT_EQ(layout->slices(5).size(), 1u);   // not splittable
  // Alone, the slices of a split key are spread evenly over every server.
  Result<KeyLayout> alone = KeyLayout::Build({{1, 1000}}, 3, 256);
  ASSERT_TRUE(alone.ok());
  std::vector<int> per_server(3, 0);
  for (const auto& s : alone->slices(1)) per_server[s.server_rank]++;
  for (int n : per_server) EXPECT_GE(n, 5);
}

TEST(KeyLayoutTest, SlicingDoesNotDependOnServerCount) {
  const std::vector<KeySpec> keys = {{0, 1000}, {1, 333}, {2, 5}};
  Result<KeyLayout> a = KeyLayout::Build(keys, 1, 256);
  Result<KeyLayout> b = KeyLayout::Build(keys, 5, 256);
  ASSERT_TRUE(a.ok() && b.ok());
  for (const auto& k : keys) {
    ASSERT_EQ(a->slices(k.key).size(), b->slices(k.key).size());
    for (size_t i = 0; i < a->slices(k.key).size(); ++i) {
      EXPECT_EQ(a->slices(k.key)[i].offset, b->slices(k.key)[i].offset);
      EXPECT_EQ(a->slices(k.key)[i].length, b->slices(k.key)[i].length);
    }
  }
}

TEST(KeyLayoutTest, Deterministic) {
  std::vector<KeySpec> keys;
  for (uint64_t k = 0; k < 50; ++k) keys.push_back({k * 3, 100 + (k * 37) % 400});
  Result<KeyLayout> a = KeyLayout::Build(keys, 4, 512);
  std::reverse(keys.begin(), keys.end());
  Result<KeyLayout> b = KeyLayout::Build(keys, 4, 512);
  ASSERT_TRUE(a.ok() && b.ok());
  for (uint64_t k : a->keys()) {
    for (size_t i = 0; i < a->slices(k).size(); ++i) EXPECT_EQ(a->slices(k)[i].server_rank, b->slices(k)[i].server_rank);
  }
}

TEST(KeyLayoutTest, RefusesBadInput) {
  EXPECT_EQ(KeyLayout::Build({{1, 10}, {1, 20}}, 2, 256).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KeyLayout::Build({{1, 10}}, 0, 256).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KeyLayout::Build({{kMaxKey + 1, 10}}, 1, 256).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KeyLayout::Build({{1, uint64_t{1} << 40}}, 1, 4).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KeyLayout::Build({{1, 10}}, 1, 2).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::comm
