// How `geomx bench` stops a configuration's run (bench/bench_runner.h RunChildren): SIGINT, then SIGTERM and
// SIGKILL kChildStopGraceMs apart. A `geomx train` child needs two of its own Launcher's graces to stop its
// processes before it writes summary.json; stopped with the default grace, a run blocked in a long round lost its
// summary (noticed under --netns with CUBIC).
#include "bench/bench_runner.h"

#include <chrono>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx::bench {
namespace {

TEST(BenchRunnerTest, AStoppedRunHasTimeToStopItsOwnProcessesFirst) {
  EXPECT_GT(kChildStopGraceMs, 2 * cli::kDefaultGracePeriodMs);
  testing::ScratchDir dir;
  const std::filesystem::path written = dir / "summary.json";
  // A child that, like `geomx train`, spends two default graces (10 s, and one more) stopping after its SIGINT,
  // then writes its summary; it does not handle SIGTERM.
  const std::string script = "trap 'sleep 11; echo done > " + written.string() + "; exit 0' INT; "
                             "while :; do sleep 0.1; done";
  const auto t0 = std::chrono::steady_clock::now();
  ChildOutcome o = RunChildren({cli::ChildSpec{"child", {"/bin/sh", "-c", script}}}, /*max_time_s=*/0.3,
                               dir / "child.log", nullptr, false);
  EXPECT_TRUE(o.timed_out);
  EXPECT_TRUE(std::filesystem::exists(written)) << "the child was killed before it wrote its summary";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(14));  // it did not wait for SIGTERM
}

}  // namespace
}  // namespace geomx::bench
