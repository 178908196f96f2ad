// Results of `geomx bench RECIPE`: what one configuration's run measured (read back from its run folder, or from
// the DDP peer's output), the comparison table (speed-up and byte reduction against flat-ps and ddp), and its
// CSV and JSON forms. Pure functions of their inputs, so the table math is testable without running anything.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::bench {

struct CurvePoint {
  double time_s = 0;        // wall seconds since training started
  int64_t iteration = 0;
  double accuracy = 0;      // test accuracy at this evaluation
  double wan_bytes = 0;     // cumulative, the whole job
  double lan_bytes = 0;
};

struct RunResult {
  std::string config;
  int repeat = 0;                      // 0-based
  std::string status = "completed";    // completed | failed | timeout | skipped
  std::string error;                   // why it failed / what to know
  std::string run_dir;
  std::vector<CurvePoint> curve;       // every evaluation, in order
  double target = 0;                   // target accuracy; 0 = none
  int64_t iterations = 0;
  double wall_s = 0;                   // how long training ran
  double seconds_per_iteration = 0;    // 0 = unknown
  std::optional<double> time_to_target_s;
  std::optional<double> wan_to_target, lan_to_target;
  std::optional<double> wan_total, lan_total;  // nullopt = not measurable (ddp without --netns)
  std::optional<double> final_accuracy;
  std::optional<double> netns_wan_bytes;  // --netns: bytes on the shaped links (kernel counters, headers included)
};

// Fills the derived fields (time and bytes to target from the curve) of a result whose curve, totals and target
// are set. The first evaluation at or above the target counts.
void DeriveTargetFigures(RunResult* r);

// Reads a geomx run folder: metrics.csv (the curve) and summary.json (iterations, times, final accuracy, traffic).
// Missing files leave the fields empty; a malformed metrics.csv is an error.
Status ReadGeomxRun(const std::filesystem::path& run_dir, RunResult* r);

// Parses the DDP peer's stdout: JSON lines {"event": "eval", "time_s", "iteration", "test_accuracy"} and one
// {"event": "done", "final_accuracy", "iterations", "train_seconds"}. Other lines are ignored.
void ParseDdpOutput(const std::string& output, RunResult* r);

// Spreads `total_bytes`, measured on the shaped links over a whole run of the DDP peer (whose evaluations carry no
// byte counts), over its curve by iteration: bytes at an evaluation = total * its iteration / the run's iterations,
// and sets wan_total. A run stopped by --max-time reports no iteration count: its iterations at the stop are
// estimated as the last evaluation's plus (elapsed_s - that evaluation's time) / seconds per iteration, where
// elapsed_s is the whole child run (start-up included), so the estimate errs high and the bytes to the target err
// low: ratios against ddp are then conservative.
void ApportionPeerWanBytes(double total_bytes, double elapsed_s, RunResult* r);

// A ratio against a baseline. lower_bound: the baseline never reached the target, so its figure is only a lower
// bound (its whole run) and so is the ratio.
struct Ratio {
  double value = 0;
  bool lower_bound = false;
};

// One row of the table: the median over the repeats of a configuration, plus the comparison.
struct TableRow {
  std::string config;
  std::string status;  // of the repeats: completed if any completed
  int repeats_ok = 0;
  int repeats = 0;
  RunResult median;    // medians of each figure over the repeats that produced it
  std::optional<Ratio> speedup_vs_flat, bytes_vs_flat, speedup_vs_ddp, bytes_vs_ddp;
};

// Groups results by configuration (in first-seen order), takes medians, and compares with "flat-ps" and "ddp"
// when they are present.
std::vector<TableRow> BuildTable(const std::vector<RunResult>& results);

// Speed-up of `r` against `base` on time to target (nullopt when `r` never reached it or `base` has no run
// time), and WAN byte reduction to target.
std::optional<Ratio> SpeedupToTarget(const RunResult& base, const RunResult& r);
std::optional<Ratio> WanReductionToTarget(const RunResult& base, const RunResult& r);

std::string FormatTable(const std::vector<TableRow>& rows, double target);
std::string TableCsv(const std::vector<TableRow>& rows);
std::string ResultsJson(const std::vector<TableRow>& rows, const std::vector<RunResult>& runs,
                        const std::string& header_json);

// Charts (bench_chart.cc, OpenCV): accuracy against wall time for every run, and WAN bytes per configuration.
Status DrawAccuracyChart(const std::vector<RunResult>& runs, double target, const std::string& title,
                         const std::filesystem::path& png);
Status DrawWanBytesChart(const std::vector<TableRow>& rows, const std::string& title,
                         const std::filesystem::path& png);
// The frontier of a bench run: the rows (indices into `rows`, by increasing WAN bytes) with a final accuracy and
// WAN bytes that no other row beats on both (fewer or equal bytes and higher or equal accuracy, one strictly).
std::vector<size_t> FrontierRows(const std::vector<TableRow>& rows);
// Final accuracy against the whole run's WAN bytes (log scale), one dot per configuration, the frontier dashed.
Status DrawFrontierChart(const std::vector<TableRow>& rows, const std::string& title,
                         const std::filesystem::path& png);

}  // namespace geomx::bench
