// A server aggregating compressed frames ("gx_sum" in a SyncAggregator) over a loopback tier: mixed frame kinds
// from two workers sum correctly, and a corrupted frame is refused with an error answer, without a crash and
// without consuming the round.
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "comm/compression/compressor.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::FastOptions;
using testing::MakeSpec;
using testing::MakeTransport;
using testing::RunConcurrently;
using testing::TestTier;

TEST(GxServer, SumsFramesAndRefusesCorruptOnes) {
  auto t = MakeTransport("loopback");
  TestTier tier(*t, MakeSpec(*t, "dc-a", 1, 2));
  const KeyLayout layout = KeyLayout::Build({{0, 3000}}, 1, 1 << 20).value();
  // The sink answers with the sum as a kRaw frame (what a compressed tier's answer is).
  FunctionSink sink(
      [](uint64_t, int64_t, Bytes sum, int, AggregateDone done) {
        done(Status::Ok(), RawFrame(std::span<const float>(sum.as<float>(), sum.count<float>())));
      },
      nullptr);
  auto agg = SyncAggregator::Create(layout, {.expected_senders = 2, .reducer = "gx_sum"}, &sink).value();
  auto server = std::make_unique<KvServer>(&tier.server(0), 0, agg.get());
  auto k0 = std::make_unique<KvWorker>(&tier.worker(0), 0, layout);
  auto k1 = std::make_unique<KvWorker>(&tier.worker(1), 0, layout);
  KvWorker& w0 = *k0;
  KvWorker& w1 = *k1;
  ASSERT_TRUE(tier.Start().ok());
  std::vector<std::function<Status()>> barrier;
  for (Postoffice* po : tier.all()) barrier.push_back([po] { return po->Barrier("all"); });
  for (const Status& s : RunConcurrently(barrier)) ASSERT_TRUE(s.ok()) << s.ToString();

  std::vector<float> g(3000, 0.0f);
  for (int i = 0; i < 3000; i += 100) g[i] = static_cast<float>(i);
  CompressorState st;
  const Bytes sparse = *(*MakeCompressor("sparse", {}))->Encode(g, st);
  const Bytes half = *(*MakeCompressor("fp16", {}))->Encode(std::vector<float>(3000, 0.5f), st);
  auto request = [&](Bytes payload) {
    RawRequest req;
    req.command = Command::kPushPull;
    req.codec = kCompressedCodec;
    req.round = 0;
    req.wire_keys = {layout.slices(0)[0].wire_key};
    req.payloads = {std::move(payload)};
    return req;
  };
  // Corrupted: an index out of range. Refused with an error naming the problem; the round stays open.
  Bytes bad = Bytes::Copy(sparse.data(), sparse.size());
  const uint32_t huge = 5000;
  std::memcpy(bad.mutable_data() + 16 + 8, &huge, 4);
  Result<std::vector<Bytes>> refused = w0.RequestRaw(request(bad));
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("out of range"), std::string::npos) << refused.status().ToString();
  Result<std::vector<Bytes>> dense_refused = w0.RequestRaw(request(Bytes::CopyVector(g)));  // not a frame
  EXPECT_FALSE(dense_refused.ok());

  std::vector<Result<std::vector<Bytes>>> answers(2, Status::Internal("unset"));
  std::vector<std::function<Status()>> fns = {
      [&] { answers[0] = w0.RequestRaw(request(sparse)); return answers[0].status(); },
      [&] { answers[1] = w1.RequestRaw(request(half)); return answers[1].status(); }};
  for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<float> sum(3000);
  ASSERT_TRUE(DecodeFrame((*answers[0])[0], sum).ok());
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(sum[i], g[i] + 0.5f) << i;
  k0.reset();
  k1.reset();
  server.reset();
  EXPECT_TRUE(tier.Finalize().ok());
}

}  // namespace
}  // namespace geomx::comm
