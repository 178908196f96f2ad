#include "cli/progress.h"

#include <cmath>

namespace geomx::cli {

std::string Progress::FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long total = static_cast<long>(s + 0.5);
  if (total >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", total / 3600, (total / 60) % 60);
  } else if (total >= 60) {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", total / 60, total % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lds", total);
  }
  return buf;
}

void Progress::Update(const ProgressInfo& p) {
  if (interactive_) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.epoch_iteration == p.epoch_iterations;
    if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;  // ~10 redraws/s
    last_draw_ = now;
    constexpr int kWidth = 24;
    const double frac = p.epoch_iterations > 0 ? double(p.epoch_iteration) / p.epoch_iterations : 0.0;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    std::fprintf(out_, "\r\033[Kepoch %d/%d [%s] %lld/%lld  loss %.4f  acc %.3f  %.0f samples/s  ETA %s",
                 p.epoch, p.epochs, bar.c_str(), static_cast<long long>(p.epoch_iteration),
                 static_cast<long long>(p.epoch_iterations), p.loss, p.accuracy, p.samples_per_second,
                 FormatDuration(p.eta_seconds).c_str());
    std::fflush(out_);
    line_open_ = true;
    return;
  }
  if (log_every_ <= 0 || p.iteration % log_every_ != 0) return;
  std::fprintf(out_, "epoch %d/%d  iter %lld/%lld  loss %.4f  acc %.3f  %.0f samples/s  ETA %s\n", p.epoch,
               p.epochs, static_cast<long long>(p.iteration), static_cast<long long>(p.total_iterations), p.loss,
               p.accuracy, p.samples_per_second, FormatDuration(p.eta_seconds).c_str());
  std::fflush(out_);
}

void Progress::Message(const std::string& line) {
  Finish();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void Progress::Finish() {
  if (line_open_) {
    std::fprintf(out_, "\n");
    line_open_ = false;
  }
}

}  // namespace geomx::cli
