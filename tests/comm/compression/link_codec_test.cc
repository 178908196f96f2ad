// LinkEncoder schemes and the "gx_sum" reducer (comm/compression/link_codec.h, gx_reducer.h).
#include "comm/compression/link_codec.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "comm/compression/compressor.h"
#include "comm/handlers/reducer.h"

namespace geomx::comm {
namespace {

FrameKind KindOf(const Bytes& f) { return static_cast<FrameKind>(f.data()[4]); }

std::unique_ptr<LinkEncoder> Encoder(LinkScheme scheme, bool push, bool wan, uint64_t bound = 1000) {
  LinkCodecConfig c;
  c.scheme = scheme;
  c.push = push;
  c.wan = wan;
  c.size_lower_bound = bound;
  Result<std::unique_ptr<LinkEncoder>> e = LinkEncoder::Create(c);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return std::move(e).value();
}

TEST(LinkScheme, Parses) {
  EXPECT_EQ(*ParseLinkScheme("mpq"), LinkScheme::kMpq);
  EXPECT_EQ(ParseLinkScheme("zip").status().code(), StatusCode::kInvalidArgument);
}

TEST(LinkEncoder, SchemesPickTheFrameKindBySize) {
  const std::vector<float> small(999, 1.0f), large(1000, 1.0f);
  struct Case {
    LinkScheme scheme;
    bool push, wan;
    FrameKind small_kind, large_kind;
  };
  const Case cases[] = {
      {LinkScheme::kNone, true, true, FrameKind::kRaw, FrameKind::kRaw},
      {LinkScheme::kFp16, true, false, FrameKind::kFp16, FrameKind::kFp16},
      {LinkScheme::kBsc, true, true, FrameKind::kRaw, FrameKind::kSparse},
      {LinkScheme::kBsc, false, true, FrameKind::kRaw, FrameKind::kRaw},  // pull of a dense value: raw is smaller
      {LinkScheme::kMpq, true, true, FrameKind::kFp16, FrameKind::kSparse},
      {LinkScheme::kMpq, true, false, FrameKind::kFp16, FrameKind::kRaw},
  };
  for (const Case& c : cases) {
    auto e = Encoder(c.scheme, c.push, c.wan);
    EXPECT_EQ(KindOf(*e->Encode(1, small)), c.small_kind) << static_cast<int>(c.scheme);
    EXPECT_EQ(KindOf(*e->Encode(2, large)), c.large_kind) << static_cast<int>(c.scheme);
  }
  std::vector<float> sparse(5000, 0.0f);
  sparse[42] = 3.0f;
  EXPECT_EQ(KindOf(*Encoder(LinkScheme::kBsc, false, true)->Encode(3, sparse)), FrameKind::kSparse);
}

TEST(LinkEncoder, ResidualsArePerWireKey) {
  LinkCodecConfig c;
  c.scheme = LinkScheme::kBsc;
  c.size_lower_bound = 10;
  c.bsc.ratio = 0.1f;
  auto e = std::move(LinkEncoder::Create(c)).value();
  std::vector<float> g(100, 0.0f);
  for (int i = 0; i < 100; ++i) g[i] = static_cast<float>(i);
  // Key 1 first sends indices 90..99; key 2 (fresh residual) must send the same, not 80..89.
  std::vector<float> a(100), b(100);
  ASSERT_TRUE(DecodeFrame(*e->Encode(1, g), a).ok());
  ASSERT_TRUE(DecodeFrame(*e->Encode(2, g), b).ok());
  EXPECT_EQ(a, b);
  ASSERT_TRUE(DecodeFrame(*e->Encode(1, std::vector<float>(100, 0.0f)), a).ok());
  EXPECT_EQ(a[89], 89.0f);  // the residual of key 1 came out next
  EXPECT_EQ(e->Encode(1, std::vector<float>(50, 0.0f)).status().code(), StatusCode::kInvalidArgument);
}

TEST(GxSum, SumsMixedFramesInContributorOrder) {
  Result<std::unique_ptr<Reducer>> r = MakeReducer("gx_sum", ReducerConfig{4});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->codec(), kCompressedCodec);
  const std::vector<float> a = {1, 2, 3, 4};
  const Bytes raw = RawFrame(a);
  CompressorState st;
  const Bytes half = *(*MakeCompressor("fp16", {}))->Encode(a, st);
  ASSERT_TRUE((*r)->Validate(raw).ok());
  ASSERT_TRUE((*r)->Validate(half).ok());
  (*r)->Combine(1, half);
  (*r)->Combine(0, raw);
  Result<Bytes> sum = (*r)->Finish();
  ASSERT_TRUE(sum.ok());
  ASSERT_EQ(sum->size(), 16u);
  std::vector<float> out(4);
  std::memcpy(out.data(), sum->data(), 16);
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8}));
}

TEST(GxSum, RefusesMalformedOrWrongLengthFrames) {
  auto r = std::move(MakeReducer("gx_sum", ReducerConfig{4})).value();
  EXPECT_FALSE(r->Validate(RawFrame(std::vector<float>(5, 1.0f))).ok());
  EXPECT_FALSE(r->Validate(Bytes::CopyVector(std::vector<float>(4, 1.0f))).ok());  // dense f32, not a frame
  Bytes bad = RawFrame(std::vector<float>(4, 1.0f));
  bad.mutable_data()[4] = 77;
  EXPECT_EQ(r->Validate(bad).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace geomx::comm
