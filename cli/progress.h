// Progress: the training progress display. On a terminal, one line redrawn in place (epoch, iteration, loss,
// accuracy, samples/s, ETA, a bar); otherwise plain lines every `log_every` iterations, so logs stay readable.
// Writes to the FILE* it is given (stdout in the CLI). Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "algorithms/train/trainer_events.h"

namespace geomx::cli {

using train::ProgressInfo;

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
