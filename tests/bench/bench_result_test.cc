// The table math of `geomx bench RECIPE`: time and bytes to target from a run's curve, medians over repeats,
// speed-up and byte reduction against flat-ps and ddp (lower bounds when the baseline never reached the target),
// and the CSV/JSON forms. No timing: every figure is synthetic.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "bench/bench_result.h"
#include "tests/testutil.h"

namespace geomx::bench {
namespace {

RunResult MakeRun(const std::string& config, std::vector<CurvePoint> curve, double wan_total, double wall) {
  RunResult r;
  r.config = config;
  r.target = 0.85;
  r.curve = std::move(curve);
  r.wan_total = wan_total;
  r.lan_total = 0.0;
  r.wall_s = wall;
  r.final_accuracy = r.curve.empty() ? 0.0 : r.curve.back().accuracy;
  DeriveTargetFigures(&r);
  return r;
}

TEST(BenchResult, TargetFiguresComeFromTheFirstEvaluationAtOrAboveTheTarget) {
  RunResult r = MakeRun("hips", {{10, 100, 0.80, 1e6, 0}, {20, 200, 0.85, 2e6, 0}, {30, 300, 0.90, 3e6, 0}}, 3e6, 30);
  ASSERT_TRUE(r.time_to_target_s);
  EXPECT_DOUBLE_EQ(*r.time_to_target_s, 20);
  EXPECT_DOUBLE_EQ(*r.wan_to_target, 2e6);
  RunResult never = MakeRun("x", {{10, 100, 0.5, 1e6, 0}}, 1e6, 10);
  EXPECT_FALSE(never.time_to_target_s);
  EXPECT_FALSE(never.wan_to_target);
}

// Regression: summary.json holds the recipe's float target (0.8500000238); an evaluation of exactly 0.85 reached it.
TEST(BenchResult, AnEvaluationEqualToTheFloatTargetReachesIt) {
  RunResult r;
  r.target = static_cast<double>(0.85f);
  r.curve = {{1.0, 50, 0.8495, 1e6, 0}, {2.0, 100, 0.85, 2e6, 0}, {3.0, 150, 0.86, 3e6, 0}};
  r.wan_total = 3e6;
  DeriveTargetFigures(&r);
  ASSERT_TRUE(r.time_to_target_s);
  EXPECT_DOUBLE_EQ(*r.time_to_target_s, 2.0);
  EXPECT_DOUBLE_EQ(*r.wan_to_target, 2e6);
}

TEST(BenchResult, SpeedupAndByteReductionAgainstFlatPs) {
  std::vector<RunResult> runs = {
      MakeRun("flat-ps", {{100, 100, 0.80, 50e6, 0}, {400, 400, 0.86, 200e6, 0}}, 300e6, 600),
      MakeRun("hips+bsc", {{5, 100, 0.84, 0.1e6, 0}, {10, 200, 0.87, 0.2e6, 0}}, 1e6, 30),
      MakeRun("slow", {{5, 100, 0.5, 1e6, 0}}, 1e6, 30),
  };
  const auto rows = BuildTable(runs);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].speedup_vs_flat);  // not against itself
  ASSERT_TRUE(rows[1].speedup_vs_flat);
  EXPECT_DOUBLE_EQ(rows[1].speedup_vs_flat->value, 40.0);  // 400 s / 10 s
  EXPECT_FALSE(rows[1].speedup_vs_flat->lower_bound);
  ASSERT_TRUE(rows[1].bytes_vs_flat);
  EXPECT_DOUBLE_EQ(rows[1].bytes_vs_flat->value, 1000.0);  // 200 MB / 0.2 MB
  EXPECT_FALSE(rows[2].speedup_vs_flat);                   // never reached the target
  EXPECT_FALSE(rows[1].speedup_vs_ddp);                    // no ddp row
}

TEST(BenchResult, BaselineThatNeverReachedTheTargetGivesLowerBounds) {
  std::vector<RunResult> runs = {
      MakeRun("flat-ps", {{100, 100, 0.70, 50e6, 0}}, 100e6, 120),  // stopped by --max-time
      MakeRun("hips", {{6, 100, 0.86, 1e6, 0}}, 2e6, 30),
  };
  runs[0].status = "timeout";
  const auto rows = BuildTable(runs);
  ASSERT_TRUE(rows[1].speedup_vs_flat);
  EXPECT_TRUE(rows[1].speedup_vs_flat->lower_bound);
  EXPECT_DOUBLE_EQ(rows[1].speedup_vs_flat->value, 20.0);  // >= 120 s / 6 s
  ASSERT_TRUE(rows[1].bytes_vs_flat);
  EXPECT_TRUE(rows[1].bytes_vs_flat->lower_bound);
  EXPECT_DOUBLE_EQ(rows[1].bytes_vs_flat->value, 100.0);
  EXPECT_NE(FormatTable(rows, 0.85).find(">=20.0x"), std::string::npos) << FormatTable(rows, 0.85);
}

TEST(BenchResult, FailedBaselineGivesNoRatio) {
  std::vector<RunResult> runs = {MakeRun("flat-ps", {}, 0, 0), MakeRun("hips", {{6, 100, 0.86, 1e6, 0}}, 2e6, 30)};
  runs[0].status = "failed";
  runs[0].error = "boom";
  const auto rows = BuildTable(runs);
  EXPECT_EQ(rows[0].status, "failed");
  EXPECT_FALSE(rows[1].speedup_vs_flat);
  EXPECT_NE(FormatTable(rows, 0.85).find("flat-ps: boom"), std::string::npos);
}

TEST(BenchResult, RepeatsAreSummarisedByTheirMedian) {
  std::vector<RunResult> runs = {
      MakeRun("hips", {{10, 100, 0.86, 1e6, 0}}, 2e6, 30), MakeRun("hips", {{30, 100, 0.86, 3e6, 0}}, 4e6, 30),
      MakeRun("hips", {{20, 100, 0.86, 2e6, 0}}, 3e6, 30),
      MakeRun("ddp", {{40, 100, 0.86, 0, 0}}, 0, 50),
  };
  runs[3].wan_total.reset();  // unshaped ddp: bytes not measured
  runs[3].lan_total.reset();
  DeriveTargetFigures(&runs[3]);
  const auto rows = BuildTable(runs);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].repeats, 3);
  EXPECT_DOUBLE_EQ(*rows[0].median.time_to_target_s, 20);
  EXPECT_DOUBLE_EQ(*rows[0].median.wan_total, 3e6);
  ASSERT_TRUE(rows[0].speedup_vs_ddp);
  EXPECT_DOUBLE_EQ(rows[0].speedup_vs_ddp->value, 2.0);
  EXPECT_FALSE(rows[0].bytes_vs_ddp);  // ddp's bytes unknown
  EXPECT_FALSE(rows[1].median.wan_to_target);
}

TEST(BenchResult, CsvAndJsonHaveOneRowPerConfiguration) {
  std::vector<RunResult> runs = {MakeRun("flat-ps", {{40, 100, 0.86, 8e6, 0}}, 9e6, 50),
                                 MakeRun("hips", {{10, 100, 0.86, 1e6, 0}}, 2e6, 30)};
  const auto rows = BuildTable(runs);
  const std::string csv = TableCsv(rows);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_NE(csv.find("hips,completed,1,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",4,8,,,false"), std::string::npos) << csv;  // 4x faster, 8x fewer WAN bytes
  const std::string json = ResultsJson(rows, runs, "{\"recipe\": \"r.yaml\"}");
  EXPECT_NE(json.find("\"speedup_vs_flat_ps\": {\"value\": 4"), std::string::npos) << json;
  EXPECT_NE(json.find("\"curve_time_iteration_accuracy_wan_lan\": [[10.000, 100"), std::string::npos) << json;
}

TEST(BenchResult, ReadsAGeomxRunFolder) {
  testing::ScratchDir dir;
  testing::WriteFile(dir / "metrics.csv",
                     "time_s,iteration,epoch,loss,train_accuracy,test_loss,test_accuracy,test_examples,"
                     "samples_per_second,lr,lan_bytes,wan_bytes\n"
                     "5.0,50,0,1.0,0.5,0.9,0.70,2000,100,0.05,1000,2000\n"
                     "9.5,100,0,0.5,0.8,0.4,0.86,2000,100,0.05,3000,4000\n");
  testing::WriteFile(dir / "summary.json",
                     "{\"status\": \"completed\", \"iterations\": 100, \"wall_seconds\": 10, \"train_seconds\": 8, "
                     "\"final_test_accuracy\": 0.87, \"traffic\": {\"wan_bytes\": 5000, \"lan_bytes\": 3500}}\n");
  RunResult r;
  r.target = 0.85;
  ASSERT_TRUE(ReadGeomxRun(dir.path(), &r).ok());
  ASSERT_EQ(r.curve.size(), 2u);
  EXPECT_DOUBLE_EQ(*r.time_to_target_s, 9.5);
  EXPECT_DOUBLE_EQ(*r.wan_to_target, 4000);
  EXPECT_DOUBLE_EQ(*r.lan_to_target, 3000);
  EXPECT_DOUBLE_EQ(*r.wan_total, 5000);
  EXPECT_DOUBLE_EQ(*r.final_accuracy, 0.87);
  EXPECT_DOUBLE_EQ(r.seconds_per_iteration, 0.08);

  testing::WriteFile(dir / "metrics.csv", "time_s,iteration,test_accuracy\nsoon,1,0.5\n");
  RunResult bad;
  EXPECT_FALSE(ReadGeomxRun(dir.path(), &bad).ok());
}

TEST(BenchResult, ParsesTheDdpPeersOutput) {
  RunResult r;
  r.target = 0.85;
  ParseDdpOutput("noise\n{\"event\": \"eval\", \"time_s\": 3.5, \"iteration\": 50, \"test_accuracy\": 0.8}\n"
                 "{\"event\": \"eval\", \"time_s\": 7.0, \"iteration\": 100, \"test_accuracy\": 0.86}\n"
                 "{\"event\": \"done\", \"final_accuracy\": 0.88, \"iterations\": 120, \"train_seconds\": 6.0}\n",
                 &r);
  DeriveTargetFigures(&r);
  ASSERT_EQ(r.curve.size(), 2u);
  EXPECT_DOUBLE_EQ(*r.time_to_target_s, 7.0);
  EXPECT_DOUBLE_EQ(*r.final_accuracy, 0.88);
  EXPECT_DOUBLE_EQ(r.seconds_per_iteration, 0.05);
  EXPECT_FALSE(r.wan_to_target);  // no byte counters without netns
}

TEST(BenchResult, PeerBytesAreSpreadByIteration) {
  // A completed run: its own iteration count.
  RunResult done = MakeRun("ddp", {{10, 100, 0.80, 0, 0}, {20, 200, 0.86, 0, 0}}, 0, 25);
  done.iterations = 400;
  ApportionPeerWanBytes(8e6, 30, &done);
  DeriveTargetFigures(&done);
  EXPECT_DOUBLE_EQ(*done.wan_total, 8e6);
  ASSERT_TRUE(done.wan_to_target);
  EXPECT_DOUBLE_EQ(*done.wan_to_target, 4e6);  // iteration 200 of 400
  EXPECT_DOUBLE_EQ(done.curve[0].wan_bytes, 2e6);

  // Stopped by --max-time: no iteration count (regression: every point got 0 bytes, so no ratio against ddp).
  // The 10 s after the last evaluation at 0.1 s per iteration add 100 iterations: 300 in all.
  RunResult stopped = MakeRun("ddp", {{10, 100, 0.80, 0, 0}, {20, 200, 0.86, 0, 0}}, 0, 20);
  stopped.seconds_per_iteration = 0.1;
  ApportionPeerWanBytes(6e6, 30, &stopped);
  DeriveTargetFigures(&stopped);
  ASSERT_TRUE(stopped.wan_to_target);
  EXPECT_DOUBLE_EQ(*stopped.wan_to_target, 4e6);  // 200 of 300
  EXPECT_GT(*stopped.wan_to_target, 0);
}

TEST(BenchResult, ChartsAreWritten) {
  testing::ScratchDir scratch;
  // GEOMX_CHART_TEST_OUT=DIR keeps the charts there, to look at them.
  const char* keep = std::getenv("GEOMX_CHART_TEST_OUT");
  const std::filesystem::path dir = keep != nullptr ? std::filesystem::path(keep) : scratch.path();
  // Long configuration names (overrides) are shrunk or broken into lines, not clipped.
  std::vector<RunResult> runs = {
      MakeRun("flat-ps", {{0, 0, 0.1, 0, 0}, {40, 100, 0.86, 8e6, 0}}, 9e6, 50),
      MakeRun("hips", {{10, 100, 0.86, 1e6, 0}}, 2e6, 30),
      MakeRun("hfa+bsc[sync.k1=5;sync.k2=2;accelerators.bsc.ratio=0.005]", {{5, 100, 0.87, 1e5, 0}}, 2e5, 10)};
  ASSERT_TRUE(DrawAccuracyChart(runs, 0.85, "t", dir / "a.png").ok());
  ASSERT_TRUE(DrawWanBytesChart(BuildTable(runs), "t", dir / "w.png").ok());
  const std::string png = testing::ReadFile(dir / "a.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_GT(testing::ReadFile(dir / "w.png").size(), 1000u);
  EXPECT_FALSE(DrawAccuracyChart(runs, 0.85, "t", dir / "missing-dir" / "a.png").ok());
  ASSERT_TRUE(DrawFrontierChart(BuildTable(runs), "t", dir / "f.png").ok());
  EXPECT_GT(testing::ReadFile(dir / "f.png").size(), 1000u);
}

// The frontier: rows that no other row beats on both WAN bytes and final accuracy, by increasing bytes.
TEST(BenchResult, FrontierKeepsOnlyUndominatedConfigurations) {
  auto row = [](const std::string& name, std::optional<double> bytes, std::optional<double> accuracy) {
    TableRow r;
    r.config = name;
    r.median.wan_total = bytes;
    r.median.final_accuracy = accuracy;
    return r;
  };
  const std::vector<TableRow> rows = {
      row("flat-ps", 9e9, 0.86),     // most bytes, not the best accuracy: dominated by hips
      row("hips", 2e9, 0.87),        // the most accurate
      row("hips+bsc", 2e7, 0.86),    // fewer bytes than hips, less accurate: on the frontier
      row("hfa+bsc", 2e7, 0.85),     // same bytes as hips+bsc, less accurate: dominated
      row("hfa+sign", 5e6, 0.80),    // the fewest bytes: on the frontier
      row("ddp", std::nullopt, 0.9), // no WAN figure: never on it
      row("failed", 1e6, std::nullopt)};
  EXPECT_EQ(FrontierRows(rows), (std::vector<size_t>{4, 2, 1}));
  EXPECT_TRUE(FrontierRows({}).empty());
  // Two identical rows dominate neither each other.
  EXPECT_EQ(FrontierRows({row("a", 1e6, 0.8), row("b", 1e6, 0.8)}), (std::vector<size_t>{0, 1}));
}

}  // namespace
}  // namespace geomx::bench
