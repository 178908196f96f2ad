// Progress: the training progress display. On a terminal, one line redrawn in place (epoch, iteration, loss,
// accuracy, samples/s, ETA, a bar); otherwise plain lines every `log_every` iterations, so logs stay readable.
// Writes to the FILE* it is given (stdout in the CLI). Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace geomx::cli {

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

class Progress {
 public:
  Progress(FILE* out, bool interactive, int64_t log_every) : out_(out), interactive_(interactive), log_every_(log_every) {}
  // Called after each iteration.
  void Update(const ProgressInfo& info);
  // A line that must not be overwritten (evaluation results, messages).
  void Message(const std::string& line);
  // Ends the in-place line, if any.
  void Finish();

  // "1h02m", "3m05s", "12s"
  static std::string FormatDuration(double seconds);

 private:
  FILE* out_;
  bool interactive_;
  int64_t log_every_;
  bool line_open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace geomx::cli
