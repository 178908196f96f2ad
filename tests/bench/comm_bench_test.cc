// The comm benchmark harness (bench/comm_bench.h): it runs over real tcp://127.0.0.1 sockets, shuts down cleanly
// and reports positive finite figures. No timing thresholds: the machines are shared and noisy.
#include "bench/comm_bench.h"

#include <cmath>

#include <gtest/gtest.h>

namespace geomx::bench {
namespace {

TEST(CommBenchTest, SmallSizesGivePositiveFiniteFigures) {
  CommBenchOptions o;
  o.sizes = {4096, 64 << 10, 4};
  o.iterations = 10;
  o.warmup = 2;
  o.repeats = 2;
  Result<std::vector<CommBenchRow>> rows = RunCommBench(o);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  for (size_t i = 0; i < rows->size(); ++i) {
    const CommBenchRow& r = (*rows)[i];
    EXPECT_EQ(r.bytes, o.sizes[i]);
    EXPECT_EQ(r.iterations, 10);
    for (double v : {r.raw_zmq_mb_s, r.raw_poll_mb_s, r.kv_mb_s, r.ratio, r.ratio_blocking, r.raw_us_per_roundtrip,
                     r.raw_poll_us_per_roundtrip, r.kv_us_per_roundtrip}) {
      EXPECT_TRUE(std::isfinite(v) && v > 0) << "size " << r.bytes << ": " << v;
    }
    EXPECT_LE(r.ratio_min, r.ratio);
    EXPECT_LE(r.ratio, r.ratio_max);
    EXPECT_GT(r.ratio_min, 0);
  }
}

TEST(CommBenchTest, SplitKeysWorkToo) {
  CommBenchOptions o;
  o.sizes = {16 << 10};
  o.iterations = 5;
  o.repeats = 1;
  o.split_bytes = 4096;  // four slices in one message
  Result<std::vector<CommBenchRow>> rows = RunCommBench(o);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_GT((*rows)[0].kv_mb_s, 0);
  EXPECT_EQ((*rows)[0].iterations, 5);
}

TEST(CommBenchTest, DefaultIterationsScaleWithSize) {
  CommBenchOptions o;
  o.sizes = {1 << 20};  // 200 MiB / 1 MiB = 200 round trips
  o.repeats = 1;
  o.warmup = 0;
  Result<std::vector<CommBenchRow>> rows = RunCommBench(o);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0].iterations, 200);
}

TEST(CommBenchTest, BadOptionsAreInvalidArgument) {
  auto code = [](CommBenchOptions o) { return RunCommBench(o).status().code(); };
  CommBenchOptions o;
  o.sizes = {};
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o.sizes = {4095};
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o.sizes = {0};
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o.sizes = {4096};
  o.repeats = 0;
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o.repeats = 1;
  o.iterations = -1;
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o.iterations = 1;
  o.split_bytes = 2;  // KeyLayout refuses it
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  const Status s = RunCommBench({.sizes = {6}}).status();
  EXPECT_NE(s.message().find("multiple of 4"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace geomx::bench
