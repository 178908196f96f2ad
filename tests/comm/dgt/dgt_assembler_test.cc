// DGT's receiving half (comm/dgt/dgt_assembler.h): complete rounds, rounds closed at the deadline with zeros for
// the missing blocks, late blocks carried into the next round, and bad blocks refused.
#include "comm/dgt/dgt_assembler.h"

#include <vector>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

// A key of 7 values in blocks of 3: blocks 0 [0, 3), 1 [3, 6), 2 [6, 7) (the end marker).
constexpr size_t kElements = 7;

TEST(DgtAssemblerTest, ACompleteRoundIsReadyAtOnceInAnyOrder) {
  DgtAssembler a(3, /*deadline_s=*/0.5);
  ASSERT_TRUE(a.Add(1, 4, 0, 2, std::vector<float>{7}, kElements, 0.0).ok());
  EXPECT_FALSE(a.TakeIfReady(1, 4, 0, 0.0).has_value());  // blocks 0 and 1 may still come
  ASSERT_TRUE(a.Add(1, 4, 0, 1, std::vector<float>{4, 5, 6}, kElements, 0.1).ok());
  ASSERT_TRUE(a.Add(1, 4, 0, 0, std::vector<float>{1, 2, 3}, kElements, 0.2).ok());
  auto v = a.TakeIfReady(1, 4, 0, 0.2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(a.TakeIfReady(1, 4, 0, 0.2).has_value());  // taken once
  EXPECT_EQ(a.missing_blocks(), 0u);
}

// Block 1 (low priority) is lost: the round waits for it until the deadline after the end marker, then closes with
// zeros there. Without the end marker it never closes on its own (the reliable channel always brings it).
TEST(DgtAssemblerTest, TheDeadlineClosesARoundWithZerosForMissingBlocks) {
  DgtAssembler a(3, 0.5);
  ASSERT_TRUE(a.Add(2, 4, 3, 0, std::vector<float>{1, 2, 3}, kElements, 10.0).ok());
  EXPECT_FALSE(a.TakeIfReady(2, 4, 3, 100.0).has_value());  // no end marker yet
  ASSERT_TRUE(a.Add(2, 4, 3, 2, std::vector<float>{7}, kElements, 100.0).ok());
  EXPECT_FALSE(a.TakeIfReady(2, 4, 3, 100.4).has_value());
  auto v = a.TakeIfReady(2, 4, 3, 100.5);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, (std::vector<float>{1, 2, 3, 0, 0, 0, 7}));
  EXPECT_EQ(a.missing_blocks(), 1u);
}

// The lost block turns up after its round closed: it is added into the next round of the same sender and key (not
// into another sender's or key's), so its gradient is delayed, not dropped.
TEST(DgtAssemblerTest, ALateBlockGoesIntoTheNextRound) {
  DgtAssembler a(3, 0.5);
  for (size_t b : {0, 2}) {
    ASSERT_TRUE(a.Add(2, 4, 3, b, b == 0 ? std::vector<float>{1, 1, 1} : std::vector<float>{1}, kElements, 0).ok());
  }
  ASSERT_TRUE(a.TakeIfReady(2, 4, 3, 1.0).has_value());
  ASSERT_TRUE(a.Add(2, 4, 3, 1, std::vector<float>{10, 20, 30}, kElements, 1.1).ok());  // round 3's block 1, late
  EXPECT_EQ(a.late_blocks(), 1u);
  for (size_t b : {0, 1, 2}) {
    const std::vector<float> v = b == 2 ? std::vector<float>{2} : std::vector<float>{2, 2, 2};
    ASSERT_TRUE(a.Add(2, 4, 4, b, v, kElements, 2.0).ok());
    ASSERT_TRUE(a.Add(3, 4, 4, b, v, kElements, 2.0).ok());  // another sender: no carry
  }
  EXPECT_EQ(*a.TakeIfReady(2, 4, 4, 2.0), (std::vector<float>{2, 2, 2, 12, 22, 32, 2}));
  EXPECT_EQ(*a.TakeIfReady(3, 4, 4, 2.0), (std::vector<float>{2, 2, 2, 2, 2, 2, 2}));
}

TEST(DgtAssemblerTest, BadBlocksAreRefused) {
  DgtAssembler a(3, 0.5);
  EXPECT_EQ(a.Add(1, 4, 0, 3, std::vector<float>{1}, kElements, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Add(1, 4, 0, 2, std::vector<float>{1, 2}, kElements, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Add(1, 4, 0, 0, std::vector<float>{1, 2}, kElements, 0).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(a.Add(1, 4, 0, 0, std::vector<float>{1, 2, 3}, kElements, 0).ok());
  EXPECT_EQ(a.Add(1, 4, 1, 0, std::vector<float>{1, 2, 3}, 9, 0).code(), StatusCode::kInvalidArgument);
  // A duplicate of an open round's block changes nothing.
  ASSERT_TRUE(a.Add(1, 4, 0, 0, std::vector<float>{9, 9, 9}, kElements, 0).ok());
  ASSERT_TRUE(a.Add(1, 4, 0, 1, std::vector<float>{4, 5, 6}, kElements, 0).ok());
  ASSERT_TRUE(a.Add(1, 4, 0, 2, std::vector<float>{7}, kElements, 0).ok());
  EXPECT_EQ(*a.TakeIfReady(1, 4, 0, 0), (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace geomx::comm
