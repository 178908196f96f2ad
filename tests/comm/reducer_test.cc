#include "comm/handlers/reducer.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/payloads.h"
#include "comm/key_layout.h"

namespace geomx::comm {
namespace {

Bytes Floats(std::vector<float> v) { return Bytes::CopyVector(v); }
std::vector<float> ToFloats(const Bytes& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

std::unique_ptr<Reducer> Make(const std::string& name, uint64_t length = 0) {
  auto r = MakeReducer(name, ReducerConfig{length});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(*r);
}

TEST(ReducerTest, RegistryKnowsBuiltIns) {
  for (const char* name : {"sum", "row_sparse", "concat", "topk_merge", "weighted_average"}) {
    EXPECT_TRUE(MakeReducer(name, {}).ok()) << name;
  }
  const Status unknown = MakeReducer("mean", {}).status();
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("row_sparse"), std::string::npos) << unknown.message();
}

TEST(ReducerTest, SumIsOrderIndependentAndChecksLength) {
  auto a = Make("sum", 3);
  auto b = Make("sum", 3);
  EXPECT_EQ(a->codec(), "");
  EXPECT_EQ(a->Validate(Floats({1, 2})).code(), StatusCode::kInvalidArgument);
  a->Combine(0, Floats({0.1f, 1e8f, 3}));
  a->Combine(1, Floats({0.2f, 1, 4}));
  a->Combine(2, Floats({0.3f, -1e8f, 5}));
  b->Combine(2, Floats({0.3f, -1e8f, 5}));
  b->Combine(0, Floats({0.1f, 1e8f, 3}));
  b->Combine(1, Floats({0.2f, 1, 4}));
  auto ra = a->Finish();
  auto rb = b->Finish();
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ToFloats(*ra), ToFloats(*rb));  // bit-identical whatever the arrival order
  EXPECT_EQ(ToFloats(*ra)[2], 12.0f);
}

TEST(ReducerTest, RowSparseSumsSameRowsAndUnitesTheRest) {
  auto r = Make("row_sparse");
  const std::vector<uint64_t> rows_a = {5, 2};
  const std::vector<float> vals_a = {1, 1, 2, 2};
  const std::vector<uint64_t> rows_b = {2, 9};
  const std::vector<float> vals_b = {10, 10, 3, 3};
  ASSERT_TRUE(r->Validate(EncodeRowSparse(2, rows_a, vals_a)).ok());
  r->Combine(0, EncodeRowSparse(2, rows_a, vals_a));
  const std::vector<uint64_t> rows_w = {1};
  const std::vector<float> vals_w = {1, 1, 1};
  EXPECT_EQ(r->Validate(EncodeRowSparse(3, rows_w, vals_w)).code(), StatusCode::kInvalidArgument);
  r->Combine(1, EncodeRowSparse(2, rows_b, vals_b));
  auto out = r->Finish();
  ASSERT_TRUE(out.ok());
  auto rs = DecodeRowSparse(*out);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->rows, (std::vector<uint64_t>{2, 5, 9}));
  EXPECT_EQ(rs->values, (std::vector<float>{12, 12, 1, 1, 3, 3}));
}

TEST(ReducerTest, ConcatOrdersByContributor) {
  auto r = Make("concat");
  const std::vector<Bytes> late = {Bytes::Copy("tree-from-1")};
  const std::vector<Bytes> early = {Bytes::Copy("tree-from-0a"), Bytes::Copy("tree-from-0b")};
  r->Combine(1, EncodeRecords(late));
  r->Combine(0, EncodeRecords(early));
  auto out = r->Finish();
  ASSERT_TRUE(out.ok());
  auto records = DecodeRecords(*out);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].view(), "tree-from-0a");
  EXPECT_EQ((*records)[2].view(), "tree-from-1");
}

TEST(ReducerTest, TopKMergeKeepsKSmallest) {
  auto r = Make("topk_merge");
  const std::vector<Neighbor> a = {{0.5f, 10, 1}, {0.1f, 11, 0}, {0.9f, 12, 1}};
  const std::vector<Neighbor> b = {{0.3f, 20, 2}, {0.05f, 21, 2}};
  r->Combine(0, EncodeTopK(3, a));
  r->Combine(1, EncodeTopK(3, b));
  EXPECT_EQ(r->Validate(EncodeTopK(4, b)).code(), StatusCode::kInvalidArgument);
  auto out = r->Finish();
  ASSERT_TRUE(out.ok());
  auto top = DecodeTopK(*out);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->neighbors.size(), 3u);
  EXPECT_EQ(top->neighbors[0].id, 21u);
  EXPECT_EQ(top->neighbors[1].id, 11u);
  EXPECT_EQ(top->neighbors[2].id, 20u);
  EXPECT_EQ(top->neighbors[2].label, 2);
}

TEST(ReducerTest, WeightedAverageComposesAcrossTiers) {
  // Two tiers: (w=1: [1], w=3: [5]) then with (w=4: [3]) must equal the flat weighted mean.
  auto low = Make("weighted_average", 1);
  const std::vector<float> one = {1}, five = {5}, three = {3};
  low->Combine(0, EncodeWeighted(1, one));
  low->Combine(1, EncodeWeighted(3, five));
  auto mid = low->Finish();
  ASSERT_TRUE(mid.ok());
  auto top = Make("weighted_average", 1);
  top->Combine(0, *mid);
  top->Combine(1, EncodeWeighted(4, three));
  auto out = top->Finish();
  ASSERT_TRUE(out.ok());
  auto w = DecodeWeighted(*out);
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->weight, 8);
  EXPECT_FLOAT_EQ(w->values[0], (1 * 1 + 3 * 5 + 4 * 3) / 8.0f);
  EXPECT_EQ(top->Validate(EncodeWeighted(0, one)).code(), StatusCode::kDataLoss);
}

TEST(ReducerTest, DecodersRefuseGarbage) {
  const Bytes junk = Bytes::Copy("\xff\xff\xff\xff\xff\xff\xff\x7f garbage");
  EXPECT_FALSE(DecodeRowSparse(junk).ok());
  EXPECT_FALSE(DecodeRecords(junk).ok());
  EXPECT_FALSE(DecodeTopK(junk).ok());
  EXPECT_FALSE(DecodeRowSparse(Bytes()).ok());
  // Truncations of valid payloads.
  const std::vector<uint64_t> rows = {1, 2};
  const std::vector<float> vals = {1, 2, 3, 4};
  const Bytes rs = EncodeRowSparse(2, rows, vals);
  for (size_t n = 0; n < rs.size(); ++n) EXPECT_FALSE(DecodeRowSparse(rs.Slice(0, n)).ok()) << n;
  const std::vector<Bytes> recs = {Bytes::Copy("abc"), Bytes::Copy("de")};
  const Bytes rec = EncodeRecords(recs);
  for (size_t n = 0; n < rec.size(); ++n) EXPECT_FALSE(DecodeRecords(rec.Slice(0, n)).ok()) << n;
}

TEST(SinkTest, StoreSinkDividesByContributors) {
  StoreSink sink;
  Bytes value;
  Status status;
  sink.OnComplete(WireKey(3, 0), 7, Floats({4, -8, 1}), 4, [&](Status s, Bytes v) {
    status = s;
    value = v;
  });
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(ToFloats(value), (std::vector<float>{1, -2, 0.25f}));
  sink.OnComplete(0, 0, Bytes::Copy("abc"), 1, [&](Status s, Bytes) { status = s; });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geomx::comm
