// Charts as PNG files: a Canvas of drawing primitives, plot areas with axes and "nice" ticks, series lines, legend
// entries and text fitting. The one copy of the drawing code, used by `geomx plot` (cli/plot.cc) and by the charts
// of `geomx bench` (bench/bench_chart.cc). OpenCV (core, imgproc, imgcodecs) draws and encodes behind this
// interface; no OpenCV type appears here. Coordinates are pixels, x to the right and y down from the top left
// corner; text positions are the left end of the baseline (OpenCV's Hershey simplex font).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::cli::chart {

// A colour, 0..255 per channel, held as doubles so blends round once, when drawn.
struct Colour {
  double b = 0, g = 0, r = 0;  // OpenCV's channel order
};
inline constexpr Colour kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225}, kGrey{120, 120, 120};

// The colour of series i: ten distinguishable colours (Tableau 10), repeating.
Colour SeriesColour(size_t i);
// a * wa + b * wb, channel by channel (a lighter shade: Mix(c, 0.45, kWhite, 0.55)).
Colour Mix(Colour a, double wa, Colour b, double wb);

struct Point {
  int x = 0, y = 0;
};
struct Box {
  int x = 0, y = 0, width = 0, height = 0;  // top left corner and size
  int right() const { return x + width; }
  int bottom() const { return y + height; }
};

// Width in pixels of `s` drawn at `scale` (thickness 1).
int TextWidth(const std::string& s, double scale);
// Lays `s` out in at most `max_width` pixels: at `scale` when it fits, else at a smaller scale (down to 0.32), else
// broken into lines after a '[', ';' or ',' (or, with no such break point, at the width). Returns the lines and
// sets *used_scale.
std::vector<std::string> FitLines(const std::string& s, double scale, int max_width, double* used_scale);
// A "nice" tick step for a range (1, 2 or 5 times a power of ten) giving about `ticks` intervals.
double NiceStep(double range, int ticks);
// printf of one number.
std::string Fmt(const char* fmt, double v);
// A byte count with a decimal unit, 3 significant digits: "8 MB", "200 kB", "1.5 GB".
std::string BytesText(double bytes);

// An image being drawn: white at first, written as PNG at the end. Owns its pixels; movable, not copyable; not
// thread-safe. Drawing outside the canvas is clipped.
class Canvas {
 public:
  Canvas(int width, int height);
  ~Canvas();
  Canvas(Canvas&&) noexcept;
  Canvas& operator=(Canvas&&) noexcept;

  int width() const;
  int height() const;

  void Text(const std::string& s, Point baseline, double scale = 0.5, Colour colour = kBlack, int thickness = 1);
  // `s` read bottom to top (an axis title beside a y axis) in `box`, which is cleared to white first: the text
  // starts 10 px above the box's bottom, its baseline 10 px left of the box's right side.
  void VerticalText(const std::string& s, Box box, double scale);
  void Line(Point a, Point b, Colour colour, int thickness = 1);
  // A horizontal dashed line from x0 to x1: `dash` px drawn every `period` px.
  void DashedHorizontalLine(int x0, int x1, int y, Colour colour, int dash = 6, int period = 12);
  // Anti-aliased line through `points` (nothing for fewer than 2); dashed: 8 px drawn, 5 px left out, along it.
  void Polyline(const std::vector<Point>& points, Colour colour, int thickness, bool dashed = false);
  void Dot(Point centre, int radius, Colour colour);  // filled, anti-aliased
  void Diamond(Point centre, int size, Colour colour, int thickness);
  void Frame(Box box, Colour colour);  // 1 px outline
  void Fill(Box box, Colour colour);

  // Encodes the image as PNG and writes it to `png` through "<png>.tmp" and a rename, so no reader sees half a
  // file. kInternal naming the path when it cannot be written (e.g. its folder does not exist).
  Status WritePng(const std::filesystem::path& png) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One axis of a plot area: the range drawn, the ticks and their labels.
struct Axis {
  double lo = 0, hi = 1;  // the range; on a log axis the powers of ten 10^lo .. 10^hi (lo, hi are exponents)
  bool log10 = false;     // logarithmic: a tick at every power of ten
  int ticks = 8;          // about this many tick intervals (linear axis); 0: no ticks, no grid lines
  double step = 0;        // linear axis: the tick step; 0: NiceStep(hi - lo, ticks)
  std::function<std::string(double)> label = [](double v) { return Fmt("%g", v); };  // of a tick's value
};

// A rectangle of a canvas where values are plotted: maps values to pixels and draws the axes. Value type.
class PlotArea {
 public:
  PlotArea(Box box, Axis x, Axis y) : box_(box), x_(std::move(x)), y_(std::move(y)) {}

  const Box& box() const { return box_; }
  const Axis& x_axis() const { return x_; }
  const Axis& y_axis() const { return y_; }
  // Pixel column / row of a value (not clamped; a log axis takes the value, not its exponent).
  int X(double v) const;
  int Y(double v) const;
  // The pixel of (x, y) with both values first clamped to the axis ranges.
  Point At(double x, double y) const;
  // Linear tick values: multiples of the step (NiceStep(hi - lo, ticks) unless set) from lo to hi; on a log axis
  // every power of ten.
  std::vector<double> TickValues(const Axis& axis) const;

  // Grid lines and tick labels (x: centred 20 px below the area; y: right-aligned 8 px left of it), then the frame.
  void DrawAxes(Canvas& canvas, double tick_scale = 0.45) const;

 private:
  Box box_;
  Axis x_, y_;
};

// A series drawn from its pixels: a line (2 px, or `thickness`) and, with dot_radius > 0, a dot at every point.
void DrawSeries(Canvas& canvas, const std::vector<Point>& points, Colour colour, int thickness = 2,
                int dot_radius = 3, bool dashed = false);

// One legend entry at `at` (its first baseline): a 30 px swatch of the series' line (3 px; dashed: two dashes)
// and `label` 37 px to the right, fitted into `max_width` px (FitLines; further lines 16 px apart). Returns the
// baseline of its last line.
int DrawLegendEntry(Canvas& canvas, Point at, Colour colour, const std::string& label, int max_width,
                    double scale = 0.45, bool dashed = false);

}  // namespace geomx::cli::chart
