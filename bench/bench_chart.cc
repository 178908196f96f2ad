// PNG charts of a recipe benchmark, drawn with OpenCV (core, imgproc, imgcodecs): self-explanatory on their own
// (title, axis names with units, tick labels, legend).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "bench/bench_result.h"

namespace geomx::bench {
namespace {

const cv::Scalar kWhite(255, 255, 255), kBlack(0, 0, 0), kGrid(225, 225, 225), kGrey(120, 120, 120);
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

cv::Scalar Colour(size_t i) {  // BGR, distinguishable (Tableau 10)
  static const cv::Scalar c[] = {{180, 119, 31}, {14, 127, 255}, {44, 160, 44},  {40, 39, 214},  {189, 103, 148},
                                 {75, 86, 140},  {194, 119, 227}, {127, 127, 127}, {34, 189, 188}, {207, 190, 23}};
  return c[i % 10];
}

void Text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.5, cv::Scalar colour = kBlack,
          int thickness = 1) {
  cv::putText(img, s, at, kFont, scale, colour, thickness, cv::LINE_AA);
}

int TextWidth(const std::string& s, double scale) {
  int base = 0;
  return cv::getTextSize(s, kFont, scale, 1, &base).width;
}

// Lays `s` out in at most `max_width` pixels: at `scale` when it fits, else at a smaller scale (down to 0.32), else
// broken into lines after a '[', ';' or ',' (configuration names with overrides are the long ones). Returns the
// lines and sets *used_scale.
std::vector<std::string> FitLines(const std::string& s, double scale, int max_width, double* used_scale) {
  for (double sc = scale; sc >= 0.32 - 1e-9; sc -= 0.04) {
    *used_scale = sc;
    if (TextWidth(s, sc) <= max_width) return {s};
  }
  std::vector<std::string> lines;
  std::string rest = s;
  while (!rest.empty()) {
    size_t cut = rest.size();
    if (TextWidth(rest, *used_scale) > max_width) {
      cut = 0;
      for (size_t i = 0; i < rest.size(); ++i) {
        const char ch = rest[i];
        if ((ch == '[' || ch == ';' || ch == ',') && TextWidth(rest.substr(0, i + 1), *used_scale) <= max_width) {
          cut = i + 1;
        }
      }
      if (cut == 0) {  // no break point fits: cut at the width
        cut = 1;
        while (cut < rest.size() && TextWidth(rest.substr(0, cut + 1), *used_scale) <= max_width) ++cut;
      }
    }
    lines.push_back(rest.substr(0, cut));
    rest.erase(0, cut);
  }
  return lines;
}

// A "nice" tick step for a range (1, 2 or 5 times a power of ten).
double NiceStep(double range, int ticks) {
  const double raw = range / std::max(1, ticks);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

std::string Fmt(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof(b), fmt, v);
  return b;
}

std::string BytesText(double b) {
  if (b >= 1e9) return Fmt("%.3g GB", b / 1e9);
  if (b >= 1e6) return Fmt("%.3g MB", b / 1e6);
  if (b >= 1e3) return Fmt("%.3g kB", b / 1e3);
  return Fmt("%.3g B", b);
}

Status Save(const cv::Mat& img, const std::filesystem::path& png) {
  try {
    if (!cv::imwrite(png.string(), img)) return Status::Internal("cannot write " + png.string());
  } catch (const cv::Exception& e) {
    return Status::Internal("cannot write " + png.string() + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace

Status DrawAccuracyChart(const std::vector<RunResult>& runs, double target, const std::string& title,
                         const std::filesystem::path& png) {
  const int W = 1100, H = 680, L = 80, R = 300, T = 60, B = 70;
  cv::Mat img(H, W, CV_8UC3, kWhite);
  double tmax = 1, amin = 1, amax = 0;
  for (const RunResult& r : runs) {
    for (const CurvePoint& p : r.curve) {
      tmax = std::max(tmax, p.time_s);
      amin = std::min(amin, p.accuracy);
      amax = std::max(amax, p.accuracy);
    }
  }
  if (amin > amax) amin = 0, amax = 1;
  amin = std::max(0.0, std::floor((std::min(amin, target > 0 ? target : amin) - 0.02) * 20) / 20);
  amax = std::min(1.0, std::ceil((amax + 0.01) * 20) / 20);
  if (amax <= amin) amax = amin + 0.05;
  const int pw = W - L - R, ph = H - T - B;
  auto X = [&](double t) { return L + static_cast<int>(std::lround(t / tmax * pw)); };
  auto Y = [&](double a) { return T + ph - static_cast<int>(std::lround((a - amin) / (amax - amin) * ph)); };

  Text(img, title, {L, 32}, 0.65, kBlack, 2);
  const double ts = NiceStep(tmax, 8);
  for (double t = 0; t <= tmax + 1e-9; t += ts) {
    cv::line(img, {X(t), T}, {X(t), T + ph}, kGrid);
    const std::string s = Fmt("%g", t);
    Text(img, s, {X(t) - TextWidth(s, 0.45) / 2, T + ph + 20}, 0.45);
  }
  const double as = NiceStep(amax - amin, 8);
  for (double a = std::ceil(amin / as) * as; a <= amax + 1e-9; a += as) {
    cv::line(img, {L, Y(a)}, {L + pw, Y(a)}, kGrid);
    const std::string s = Fmt("%.2f", a);
    Text(img, s, {L - 8 - TextWidth(s, 0.45), Y(a) + 5}, 0.45);
  }
  cv::rectangle(img, {L, T}, {L + pw, T + ph}, kBlack);
  Text(img, "wall time since training started (seconds)", {L + pw / 2 - 170, H - 22}, 0.55);
  cv::Mat ylabel(30, 260, CV_8UC3, kWhite);
  Text(ylabel, "test accuracy (fraction)", {10, 20}, 0.55);
  cv::rotate(ylabel, ylabel, cv::ROTATE_90_COUNTERCLOCKWISE);
  ylabel.copyTo(img(cv::Rect(8, T + ph / 2 - 130, 30, 260)));
  if (target > 0 && target >= amin && target <= amax) {
    for (int x = L; x < L + pw; x += 12) cv::line(img, {x, Y(target)}, {std::min(x + 6, L + pw), Y(target)}, kGrey, 1);
    // At the right end, where the curves have flattened above the target, so the label stays readable.
    const std::string label = Fmt("target %.2f", target);
    Text(img, label, {L + pw - 6 - TextWidth(label, 0.45), Y(target) + 18}, 0.45, kGrey);
  }

  int ly = T + 10;
  Text(img, "configuration (time to target)", {L + pw + 15, ly}, 0.5, kBlack, 1);
  ly += 10;
  size_t colour = 0;
  std::string last_config;
  for (const RunResult& r : runs) {
    if (r.config != last_config) {
      last_config = r.config;
      ++colour;
    }
    const cv::Scalar c = Colour(colour - 1);
    std::vector<cv::Point> pts;
    for (const CurvePoint& p : r.curve) pts.push_back({X(p.time_s), Y(std::clamp(p.accuracy, amin, amax))});
    if (pts.size() > 1) cv::polylines(img, pts, false, c, 2, cv::LINE_AA);
    for (const cv::Point& p : pts) cv::circle(img, p, 3, c, cv::FILLED, cv::LINE_AA);
    if (r.time_to_target_s) {
      const cv::Point p{X(*r.time_to_target_s), Y(target)};
      cv::drawMarker(img, p, c, cv::MARKER_DIAMOND, 14, 2);
    }
    ly += 24;
    cv::line(img, {L + pw + 15, ly - 5}, {L + pw + 45, ly - 5}, c, 3);
    std::string label = r.config;
    if (r.repeat > 0) label.append(" #").append(std::to_string(r.repeat + 1));
    if (r.time_to_target_s) {
      label += Fmt(" (%.1f s)", *r.time_to_target_s);
    } else if (r.status == "completed" || r.status == "timeout") {
      label += " (not reached)";
    } else {
      label.append(" (").append(r.status).append(")");
    }
    double sc = 0.45;
    const std::vector<std::string> lines = FitLines(label, 0.45, W - (L + pw + 52) - 8, &sc);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) ly += 16;
      Text(img, lines[i], {L + pw + 52, ly}, sc);
    }
  }
  Text(img, "diamond: first evaluation at or", {L + pw + 15, ly + 34}, 0.4, kGrey);
  Text(img, "above the target (dashed line)", {L + pw + 15, ly + 52}, 0.4, kGrey);
  return Save(img, png);
}

Status DrawWanBytesChart(const std::vector<TableRow>& rows, const std::string& title,
                         const std::filesystem::path& png) {
  const int W = 1100, H = 620, L = 120, R = 30, T = 90, B = 110;  // L: room for "100 MB" beside the axis title
  cv::Mat img(H, W, CV_8UC3, kWhite);
  double lo = 1e30, hi = 1;
  for (const TableRow& r : rows) {
    for (const auto& v : {r.median.wan_to_target, r.median.wan_total}) {
      if (v && *v > 0) lo = std::min(lo, *v), hi = std::max(hi, *v);
    }
  }
  if (lo > hi) lo = 1;
  const double e0 = std::floor(std::log10(lo)), e1 = std::max(e0 + 1, std::ceil(std::log10(hi)));
  const int pw = W - L - R, ph = H - T - B;
  auto Y = [&](double b) { return T + ph - static_cast<int>(std::lround((std::log10(b) - e0) / (e1 - e0) * ph)); };
  Text(img, title, {L, 32}, 0.65, kBlack, 2);
  Text(img, "WAN bytes of the whole job (both directions), log scale; dark bar: until the target accuracy, light "
            "bar: whole run",
       {L, 58}, 0.45, kGrey);
  for (double e = e0; e <= e1 + 1e-9; e += 1) {
    const double b = std::pow(10.0, e);
    cv::line(img, {L, Y(b)}, {L + pw, Y(b)}, kGrid);
    const std::string s = BytesText(b);
    Text(img, s, {L - 8 - TextWidth(s, 0.45), Y(b) + 5}, 0.45);
  }
  cv::rectangle(img, {L, T}, {L + pw, T + ph}, kBlack);
  cv::Mat ylabel(30, 220, CV_8UC3, kWhite);
  Text(ylabel, "WAN bytes (log scale)", {10, 20}, 0.55);
  cv::rotate(ylabel, ylabel, cv::ROTATE_90_COUNTERCLOCKWISE);
  ylabel.copyTo(img(cv::Rect(6, T + ph / 2 - 110, 30, 220)));
  const int n = std::max<int>(1, static_cast<int>(rows.size()));
  const int slot = pw / n, bw = std::max(8, std::min(50, slot / 3));
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const TableRow& r = rows[i];
    const int cx = L + slot * i + slot / 2;
    const cv::Scalar c = Colour(static_cast<size_t>(i));
    const cv::Scalar light = c * 0.45 + kWhite * 0.55;
    auto bar = [&](int x0, const std::optional<double>& v, const cv::Scalar& col) {
      if (!v || *v <= 0) {
        Text(img, "n/a", {x0 + bw / 2 - TextWidth("n/a", 0.4) / 2, T + ph - 6}, 0.4, kGrey);
        return;
      }
      cv::rectangle(img, {x0, Y(*v)}, {x0 + bw, T + ph}, col, cv::FILLED);
      const std::string s = BytesText(*v);
      Text(img, s, {x0 + bw / 2 - TextWidth(s, 0.38) / 2, Y(*v) - 5}, 0.38);
    };
    bar(cx - bw - 2, r.median.wan_to_target, c);
    bar(cx + 2, r.median.wan_total, light);
    double sc = 0.5;
    const std::vector<std::string> lines = FitLines(r.config, 0.5, slot - 6, &sc);
    int y = T + ph + 22;
    for (size_t l = 0; l < lines.size(); ++l, y += 15) {
      Text(img, lines[l], {cx - TextWidth(lines[l], sc) / 2, y}, sc);
    }
    std::string sub = r.status != "completed" ? r.status : "";
    if (r.bytes_vs_flat) {
      sub = Fmt(r.bytes_vs_flat->lower_bound ? ">=%.0fx fewer" : "%.0fx fewer", r.bytes_vs_flat->value);
    }
    if (!sub.empty()) Text(img, sub, {cx - TextWidth(sub, 0.4) / 2, y + 5}, 0.4, kGrey);
  }
  Text(img, "configuration (grey: WAN-byte reduction to target against flat-ps)", {L + pw / 2 - 250, H - 20}, 0.55);
  return Save(img, png);
}

}  // namespace geomx::bench
