// What the Trainer reports to its listener (algorithms/train/trainer.h): one ProgressInfo per iteration and one
// MetricsRow per evaluation. cli/ prints them (cli/progress.h) and writes them to the run folder (cli/run_dir.h).
// Value types.
#pragma once

#include <cstdint>

namespace geomx::train {

struct ProgressInfo {
  int epoch = 1;              // 1-based
  int epochs = 1;
  int64_t iteration = 0;      // completed, global
  int64_t total_iterations = 0;
  int64_t epoch_iteration = 0;  // completed within this epoch
  int64_t epoch_iterations = 0;
  double loss = 0;            // smoothed training loss
  double accuracy = 0;        // smoothed training accuracy
  double samples_per_second = 0;
  double eta_seconds = 0;
};

// One evaluation row: the columns of metrics.jsonl and metrics.csv.
struct MetricsRow {
  double time_s = 0;          // seconds since training started (cumulative over resumes)
  int64_t iteration = 0;      // completed iterations
  int epoch = 0;              // 1-based epoch the row belongs to
  double loss = 0;            // mean training loss since the previous row
  double train_accuracy = 0;  // training accuracy since the previous row
  double test_loss = 0;
  double test_accuracy = 0;
  int64_t test_examples = 0;
  double samples_per_second = 0;  // training throughput since the previous row
  double lr = 0;
  uint64_t lan_bytes = 0;  // traffic counters (zero in single-process runs; filled by the listener)
  uint64_t wan_bytes = 0;
};

}  // namespace geomx::train
