#include "cli/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "cli/run_dir.h"

namespace geomx::cli::chart {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

cv::Scalar Cv(Colour c) { return cv::Scalar(c.b, c.g, c.r); }
cv::Point Cv(Point p) { return {p.x, p.y}; }

}  // namespace

Colour SeriesColour(size_t i) {
  static const Colour c[] = {{180, 119, 31}, {14, 127, 255}, {44, 160, 44},   {40, 39, 214},  {189, 103, 148},
                             {75, 86, 140},  {194, 119, 227}, {127, 127, 127}, {34, 189, 188}, {207, 190, 23}};
  return c[i % 10];
}

Colour Mix(Colour a, double wa, Colour b, double wb) {
  return {a.b * wa + b.b * wb, a.g * wa + b.g * wb, a.r * wa + b.r * wb};
}

int TextWidth(const std::string& s, double scale) {
  int base = 0;
  return cv::getTextSize(s, kFont, scale, 1, &base).width;
}

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

double NiceStep(double range, int ticks) {
  const double raw = range / std::max(1, ticks);
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
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

// ---- Canvas ----

struct Canvas::Impl {
  cv::Mat img;
};

Canvas::Canvas(int width, int height) : impl_(std::make_unique<Impl>()) {
  impl_->img = cv::Mat(std::max(1, height), std::max(1, width), CV_8UC3, Cv(kWhite));
}
Canvas::~Canvas() = default;
Canvas::Canvas(Canvas&&) noexcept = default;
Canvas& Canvas::operator=(Canvas&&) noexcept = default;

int Canvas::width() const { return impl_->img.cols; }
int Canvas::height() const { return impl_->img.rows; }

void Canvas::Text(const std::string& s, Point baseline, double scale, Colour colour, int thickness) {
  cv::putText(impl_->img, s, Cv(baseline), kFont, scale, Cv(colour), thickness, cv::LINE_AA);
}

void Canvas::VerticalText(const std::string& s, Box box, double scale) {
  if (box.width <= 0 || box.height <= 0) return;
  cv::Mat label(box.width, box.height, CV_8UC3, Cv(kWhite));  // drawn horizontally, then turned
  cv::putText(label, s, {10, box.width - 10}, kFont, scale, Cv(kBlack), 1, cv::LINE_AA);
  cv::rotate(label, label, cv::ROTATE_90_COUNTERCLOCKWISE);
  const cv::Rect want(box.x, box.y, box.width, box.height);
  const cv::Rect inside = want & cv::Rect(0, 0, impl_->img.cols, impl_->img.rows);
  if (inside.empty()) return;
  label(cv::Rect(inside.x - want.x, inside.y - want.y, inside.width, inside.height)).copyTo(impl_->img(inside));
}

void Canvas::Line(Point a, Point b, Colour colour, int thickness) {
  cv::line(impl_->img, Cv(a), Cv(b), Cv(colour), thickness);
}

void Canvas::DashedHorizontalLine(int x0, int x1, int y, Colour colour, int dash, int period) {
  for (int x = x0; x < x1; x += std::max(1, period)) {
    cv::line(impl_->img, {x, y}, {std::min(x + dash, x1), y}, Cv(colour), 1);
  }
}

void Canvas::Polyline(const std::vector<Point>& points, Colour colour, int thickness, bool dashed) {
  if (points.size() < 2) return;
  if (!dashed) {
    std::vector<cv::Point> pts;
    pts.reserve(points.size());
    for (const Point& p : points) pts.push_back(Cv(p));
    cv::polylines(impl_->img, pts, false, Cv(colour), thickness, cv::LINE_AA);
    return;
  }
  // Walk along the line with an 8 px on, 5 px off pattern that carries over from one segment to the next.
  constexpr double kOn = 8, kPeriod = 13;
  double phase = 0;  // position within the pattern at the start of the segment
  for (size_t i = 1; i < points.size(); ++i) {
    const double x0 = points[i - 1].x, y0 = points[i - 1].y, dx = points[i].x - x0, dy = points[i].y - y0;
    const double len = std::hypot(dx, dy);
    double s = 0;
    while (s < len) {
      const double in_period = std::fmod(phase + s, kPeriod);
      const double step = std::min(len - s, in_period < kOn ? kOn - in_period : kPeriod - in_period);
      if (in_period < kOn) {
        const cv::Point a(static_cast<int>(std::lround(x0 + dx * s / len)),
                          static_cast<int>(std::lround(y0 + dy * s / len)));
        const cv::Point b(static_cast<int>(std::lround(x0 + dx * (s + step) / len)),
                          static_cast<int>(std::lround(y0 + dy * (s + step) / len)));
        cv::line(impl_->img, a, b, Cv(colour), thickness, cv::LINE_AA);
      }
      s += step;
    }
    phase = std::fmod(phase + len, kPeriod);
  }
}

void Canvas::Dot(Point centre, int radius, Colour colour) {
  cv::circle(impl_->img, Cv(centre), radius, Cv(colour), cv::FILLED, cv::LINE_AA);
}

void Canvas::Diamond(Point centre, int size, Colour colour, int thickness) {
  cv::drawMarker(impl_->img, Cv(centre), Cv(colour), cv::MARKER_DIAMOND, size, thickness);
}

void Canvas::Frame(Box box, Colour colour) {
  cv::rectangle(impl_->img, {box.x, box.y}, {box.right(), box.bottom()}, Cv(colour));
}

void Canvas::Fill(Box box, Colour colour) {
  cv::rectangle(impl_->img, {box.x, box.y}, {box.right(), box.bottom()}, Cv(colour), cv::FILLED);
}

Status Canvas::WritePng(const std::filesystem::path& png) const {
  std::vector<unsigned char> bytes;
  try {
    if (!cv::imencode(".png", impl_->img, bytes)) return Status::Internal("cannot encode " + png.string());
  } catch (const cv::Exception& e) {
    return Status::Internal("cannot encode " + png.string() + ": " + e.what());
  }
  return WriteFileAtomically(png, std::string(bytes.begin(), bytes.end()));
}

// ---- PlotArea ----

namespace {
double Fraction(const Axis& a, double v) {
  const double lo = a.lo, hi = a.hi > a.lo ? a.hi : a.lo + 1;
  return ((a.log10 ? std::log10(v) : v) - lo) / (hi - lo);
}
}  // namespace

int PlotArea::X(double v) const { return box_.x + static_cast<int>(std::lround(Fraction(x_, v) * box_.width)); }

int PlotArea::Y(double v) const {
  return box_.y + box_.height - static_cast<int>(std::lround(Fraction(y_, v) * box_.height));
}

Point PlotArea::At(double x, double y) const {
  auto clamp = [](const Axis& a, double v) {
    if (a.log10) return std::clamp(v, std::pow(10.0, a.lo), std::pow(10.0, std::max(a.lo, a.hi)));
    return std::clamp(v, a.lo, std::max(a.lo, a.hi));
  };
  return {X(clamp(x_, x)), Y(clamp(y_, y))};
}

std::vector<double> PlotArea::TickValues(const Axis& a) const {
  std::vector<double> v;
  if (a.ticks <= 0 || !(a.hi > a.lo) || !std::isfinite(a.lo) || !std::isfinite(a.hi)) return v;
  if (a.log10) {
    for (double e = a.lo; e <= a.hi + 1e-9; e += 1) v.push_back(std::pow(10.0, e));
    return v;
  }
  const double step = a.step > 0 ? a.step : NiceStep(a.hi - a.lo, a.ticks);
  for (double t = std::ceil(a.lo / step) * step; t <= a.hi + 1e-9 && v.size() < 1000; t += step) v.push_back(t);
  return v;
}

void PlotArea::DrawAxes(Canvas& canvas, double tick_scale) const {
  const Box& b = box_;
  for (double t : TickValues(x_)) {
    canvas.Line({X(t), b.y}, {X(t), b.bottom()}, kGrid);
    const std::string s = x_.label(t);
    canvas.Text(s, {X(t) - TextWidth(s, tick_scale) / 2, b.bottom() + 20}, tick_scale);
  }
  for (double t : TickValues(y_)) {
    canvas.Line({b.x, Y(t)}, {b.right(), Y(t)}, kGrid);
    const std::string s = y_.label(t);
    canvas.Text(s, {b.x - 8 - TextWidth(s, tick_scale), Y(t) + 5}, tick_scale);
  }
  canvas.Frame(b, kBlack);
}

void DrawSeries(Canvas& canvas, const std::vector<Point>& points, Colour colour, int thickness, int dot_radius,
                bool dashed) {
  if (points.size() > 1) canvas.Polyline(points, colour, thickness, dashed);
  if (dot_radius > 0) {
    for (const Point& p : points) canvas.Dot(p, dot_radius, colour);
  }
}

int DrawLegendEntry(Canvas& canvas, Point at, Colour colour, const std::string& label, int max_width, double scale,
                    bool dashed) {
  const int y = at.y - 5;
  if (dashed) {
    canvas.Line({at.x, y}, {at.x + 12, y}, colour, 3);
    canvas.Line({at.x + 18, y}, {at.x + 30, y}, colour, 3);
  } else {
    canvas.Line({at.x, y}, {at.x + 30, y}, colour, 3);
  }
  double sc = scale;
  const std::vector<std::string> lines = FitLines(label, scale, max_width, &sc);
  int baseline = at.y;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) baseline += 16;
    canvas.Text(lines[i], {at.x + 37, baseline}, sc);
  }
  return baseline;
}

}  // namespace geomx::cli::chart
