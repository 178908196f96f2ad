#include "comm/handlers/reducer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
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
  for (const char* name :
       {"sum", "row_sparse", "concat", "topk_merge", "weighted_average", "half_sum", "sparse_sum", "topk_rows"}) {
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

TEST(ReducerTest, HalfSumCarriesFp16RelativeToTheLargestAndAnExactTail) {
  // FP16 has an 11-bit significand: a value v with |v| <= max goes through (v / scale) with scale = max / 32768,
  // so it comes back within max * 2^-12 (half an FP16 step at the top of the range).
  const std::vector<float> lossy = {1000.0f, -0.125f, 3.14159f, 0.0f, 999.9f, 1e-7f};
  const std::vector<float> exact = {123456.789f, 1e-30f, -7.0f};
  Result<Bytes> enc = EncodeHalfSum(lossy, exact);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(enc->size(), 20u + 3 * 4 + 6 * 2);  // header, exact f32, lossy f16
  Result<HalfSum> dec = DecodeHalfSum(*enc);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(dec->exact, exact);  // bit for bit
  ASSERT_EQ(dec->lossy.size(), lossy.size());
  for (size_t i = 0; i < lossy.size(); ++i) EXPECT_NEAR(dec->lossy[i], lossy[i], 1000.0 / 4096) << i;
  EXPECT_EQ(dec->lossy[3], 0.0f);
  EXPECT_NEAR(dec->lossy[1], -0.125, 1e-4);  // small values keep FP16's relative precision near their own size

  // Three contributions, summed across two tiers like a local and then a global server.
  auto low = Make("half_sum");
  EXPECT_EQ(low->codec(), "half_sum");
  const std::vector<float> a = {1, 2, 3}, b = {10, -20, 0.5f}, c = {-100, 0.25f, 4};
  const std::vector<float> ta = {1e9f}, tb = {1.0f}, tc = {2.0f};
  for (const auto& [who, v, t] : {std::tuple{0, a, ta}, std::tuple{1, b, tb}}) {
    Result<Bytes> p = EncodeHalfSum(v, t);
    ASSERT_TRUE(low->Validate(*p).ok());
    low->Combine(who, *p);
  }
  Result<Bytes> mid = low->Finish();
  ASSERT_TRUE(mid.ok());
  auto top = Make("half_sum");
  top->Combine(0, *mid);
  Result<Bytes> pc = EncodeHalfSum(c, tc);
  ASSERT_TRUE(top->Validate(*pc).ok());
  top->Combine(1, *pc);
  Result<Bytes> out = top->Finish();
  ASSERT_TRUE(out.ok());
  Result<HalfSum> sum = DecodeHalfSum(*out);
  ASSERT_TRUE(sum.ok());
  const std::vector<float> want = {1 + 10 - 100, 2 - 20 + 0.25f, 3 + 0.5f + 4};
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(sum->lossy[i], want[i], 3 * 100.0 / 4096) << i;
  EXPECT_EQ(sum->exact, (std::vector<float>{1e9f + 1.0f + 2.0f}));
  // A contribution of another shape, garbage, truncations and non-finite values are refused.
  EXPECT_EQ(top->Validate(*EncodeHalfSum(std::vector<float>{1, 2}, tc)).code(), StatusCode::kInvalidArgument);
  for (size_t n = 0; n < pc->size(); ++n) EXPECT_FALSE(DecodeHalfSum(pc->Slice(0, n)).ok()) << n;
  EXPECT_FALSE(DecodeHalfSum(Bytes::Copy("\xff\xff\xff\xff\xff\xff\xff\x7f garbage")).ok());
  Bytes bad_scale = *EncodeHalfSum(a, ta);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bad_scale.mutable_data() + 16, &nan, 4);
  EXPECT_EQ(DecodeHalfSum(bad_scale).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(EncodeHalfSum(std::vector<float>{1, nan}, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ReducerTest, TopKRowsMergesEachQueryAcrossTiers) {
  // 2 queries, k = 2. Query 0: worker lists {1.0/id 10, 3.0/id 11}, {0.5/id 20, pad}, {1.0/id 5, 9/id 6}:
  // the two smallest are 0.5 (id 20) then 1.0 with the smaller id (5). Query 1: only padding and one 2.0/id 7.
  const Neighbor pad{INFINITY, kNoNeighbor, -1};
  const std::vector<Neighbor> a = {{3.0f, 11, 1}, {1.0f, 10, 0}, pad, pad};  // any order within a query
  const std::vector<Neighbor> b = {{0.5f, 20, 2}, pad, pad, pad};
  const std::vector<Neighbor> c = {{1.0f, 5, 3}, {9.0f, 6, 4}, {2.0f, 7, 5}, pad};
  auto low = Make("topk_rows");
  EXPECT_EQ(low->codec(), "topk_rows");
  for (const auto& [who, v] : {std::pair{0, a}, std::pair{1, b}}) {
    Result<Bytes> p = EncodeTopKRows(2, 2, v);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(low->Validate(*p).ok());
    low->Combine(who, *p);
  }
  Result<Bytes> mid = low->Finish();
  ASSERT_TRUE(mid.ok());
  auto top = Make("topk_rows");
  top->Combine(0, *mid);
  top->Combine(1, *EncodeTopKRows(2, 2, c));
  Result<TopKRows> out = DecodeTopKRows(*top->Finish());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->entries.size(), 4u);
  EXPECT_EQ(out->entries[0].id, 20u);
  EXPECT_EQ(out->entries[1].id, 5u);
  EXPECT_EQ(out->entries[1].label, 3);
  EXPECT_EQ(out->entries[2].id, 7u);
  EXPECT_EQ(out->entries[2].distance, 2.0f);
  EXPECT_EQ(out->entries[3].id, kNoNeighbor);
  // Another shape, a wrong count, garbage and truncations are refused.
  EXPECT_EQ(top->Validate(*EncodeTopKRows(3, 2, std::vector<Neighbor>(6, pad))).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeTopKRows(2, 2, std::vector<Neighbor>(3, pad)).status().code(),
            StatusCode::kInvalidArgument);
  const Bytes good = *EncodeTopKRows(2, 2, a);
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(DecodeTopKRows(good.Slice(0, n)).ok()) << n;
  EXPECT_FALSE(DecodeTopKRows(Bytes::Copy("\xff\xff\xff\xff\xff\xff\xff\x7f\xff\xff\xff\xff\xff\xff\xff\x7f")).ok());
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
