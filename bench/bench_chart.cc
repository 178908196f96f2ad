// PNG charts of a recipe benchmark: self-explanatory on their own (title, axis names with units, tick labels,
// legend). Drawn with the shared chart code of cli/chart.h (the one that `geomx plot` uses too).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench/bench_result.h"
#include "cli/chart.h"

namespace geomx::bench {
namespace {

using cli::chart::Axis;
using cli::chart::BytesText;
using cli::chart::Canvas;
using cli::chart::Colour;
using cli::chart::DrawLegendEntry;
using cli::chart::DrawSeries;
using cli::chart::FitLines;
using cli::chart::Fmt;
using cli::chart::kBlack;
using cli::chart::kGrey;
using cli::chart::kWhite;
using cli::chart::Mix;
using cli::chart::PlotArea;
using cli::chart::Point;
using cli::chart::SeriesColour;
using cli::chart::TextWidth;

}  // namespace

Status DrawAccuracyChart(const std::vector<RunResult>& runs, double target, const std::string& title,
                         const std::filesystem::path& png) {
  const int W = 1100, H = 680, L = 80, R = 300, T = 60, B = 70;
  Canvas img(W, H);
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
  Axis x_axis{.lo = 0, .hi = tmax}, y_axis{.lo = amin, .hi = amax};
  y_axis.label = [](double a) { return Fmt("%.2f", a); };
  const PlotArea area({L, T, pw, ph}, x_axis, y_axis);

  img.Text(title, {L, 32}, 0.65, kBlack, 2);
  area.DrawAxes(img);
  img.Text("wall time since training started (seconds)", {L + pw / 2 - 170, H - 22}, 0.55);
  img.VerticalText("test accuracy (fraction)", {8, T + ph / 2 - 130, 30, 260}, 0.55);
  if (target > 0 && target >= amin && target <= amax) {
    img.DashedHorizontalLine(L, L + pw, area.Y(target), kGrey);
    // At the right end, where the curves have flattened above the target, so the label stays readable.
    const std::string label = Fmt("target %.2f", target);
    img.Text(label, {L + pw - 6 - TextWidth(label, 0.45), area.Y(target) + 18}, 0.45, kGrey);
  }

  int ly = T + 10;
  img.Text("configuration (time to target)", {L + pw + 15, ly}, 0.5, kBlack, 1);
  ly += 10;
  size_t colour = 0;
  std::string last_config;
  for (const RunResult& r : runs) {
    if (r.config != last_config) {
      last_config = r.config;
      ++colour;
    }
    const Colour c = SeriesColour(colour - 1);
    std::vector<Point> pts;
    for (const CurvePoint& p : r.curve) pts.push_back(area.At(p.time_s, p.accuracy));
    DrawSeries(img, pts, c);
    if (r.time_to_target_s) img.Diamond({area.X(*r.time_to_target_s), area.Y(target)}, 14, c, 2);
    std::string label = r.config;
    if (r.repeat > 0) label.append(" #").append(std::to_string(r.repeat + 1));
    if (r.time_to_target_s) {
      label += Fmt(" (%.1f s)", *r.time_to_target_s);
    } else if (r.status == "completed" || r.status == "timeout") {
      label += " (not reached)";
    } else {
      label.append(" (").append(r.status).append(")");
    }
    ly = DrawLegendEntry(img, {L + pw + 15, ly + 24}, c, label, W - (L + pw + 52) - 8);
  }
  img.Text("diamond: first evaluation at or", {L + pw + 15, ly + 34}, 0.4, kGrey);
  img.Text("above the target (dashed line)", {L + pw + 15, ly + 52}, 0.4, kGrey);
  return img.WritePng(png);
}

Status DrawWanBytesChart(const std::vector<TableRow>& rows, const std::string& title,
                         const std::filesystem::path& png) {
  const int W = 1100, H = 620, L = 120, R = 30, T = 90, B = 110;  // L: room for "100 MB" beside the axis title
  Canvas img(W, H);
  double lo = 1e30, hi = 1;
  for (const TableRow& r : rows) {
    for (const auto& v : {r.median.wan_to_target, r.median.wan_total}) {
      if (v && *v > 0) lo = std::min(lo, *v), hi = std::max(hi, *v);
    }
  }
  if (lo > hi) lo = 1;
  const double e0 = std::floor(std::log10(lo)), e1 = std::max(e0 + 1, std::ceil(std::log10(hi)));
  const int pw = W - L - R, ph = H - T - B;
  Axis x_axis{.ticks = 0}, y_axis{.lo = e0, .hi = e1, .log10 = true};  // x: one slot per configuration
  y_axis.label = BytesText;
  const PlotArea area({L, T, pw, ph}, x_axis, y_axis);
  img.Text(title, {L, 32}, 0.65, kBlack, 2);
  img.Text("WAN bytes of the whole job (both directions), log scale; dark bar: until the target accuracy, light "
           "bar: whole run",
           {L, 58}, 0.45, kGrey);
  area.DrawAxes(img);
  img.VerticalText("WAN bytes (log scale)", {6, T + ph / 2 - 110, 30, 220}, 0.55);
  const int n = std::max<int>(1, static_cast<int>(rows.size()));
  const int slot = pw / n, bw = std::max(8, std::min(50, slot / 3));
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const TableRow& r = rows[i];
    const int cx = L + slot * i + slot / 2;
    const Colour c = SeriesColour(static_cast<size_t>(i));
    const Colour light = Mix(c, 0.45, kWhite, 0.55);
    auto bar = [&](int x0, const std::optional<double>& v, const Colour& col) {
      if (!v || *v <= 0) {
        img.Text("n/a", {x0 + bw / 2 - TextWidth("n/a", 0.4) / 2, T + ph - 6}, 0.4, kGrey);
        return;
      }
      const int top = area.Y(*v);
      img.Fill({x0, top, bw, T + ph - top}, col);
      const std::string s = BytesText(*v);
      img.Text(s, {x0 + bw / 2 - TextWidth(s, 0.38) / 2, top - 5}, 0.38);
    };
    bar(cx - bw - 2, r.median.wan_to_target, c);
    bar(cx + 2, r.median.wan_total, light);
    double sc = 0.5;
    const std::vector<std::string> lines = FitLines(r.config, 0.5, slot - 6, &sc);
    int y = T + ph + 22;
    for (size_t l = 0; l < lines.size(); ++l, y += 15) {
      img.Text(lines[l], {cx - TextWidth(lines[l], sc) / 2, y}, sc);
    }
    std::string sub = r.status != "completed" ? r.status : "";
    if (r.bytes_vs_flat) {
      sub = Fmt(r.bytes_vs_flat->lower_bound ? ">=%.0fx fewer" : "%.0fx fewer", r.bytes_vs_flat->value);
    }
    if (!sub.empty()) img.Text(sub, {cx - TextWidth(sub, 0.4) / 2, y + 5}, 0.4, kGrey);
  }
  img.Text("configuration (grey: WAN-byte reduction to target against flat-ps)", {L + pw / 2 - 250, H - 20}, 0.55);
  return img.WritePng(png);
}

std::vector<size_t> FrontierRows(const std::vector<TableRow>& rows) {
  auto usable = [](const TableRow& r) {
    return r.median.wan_total && *r.median.wan_total > 0 && r.median.final_accuracy.has_value();
  };
  std::vector<size_t> frontier;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!usable(rows[i])) continue;
    const double bi = *rows[i].median.wan_total, ai = *rows[i].median.final_accuracy;
    bool dominated = false;
    for (size_t j = 0; j < rows.size() && !dominated; ++j) {
      if (j == i || !usable(rows[j])) continue;
      const double bj = *rows[j].median.wan_total, aj = *rows[j].median.final_accuracy;
      dominated = bj <= bi && aj >= ai && (bj < bi || aj > ai);
    }
    if (!dominated) frontier.push_back(i);
  }
  std::stable_sort(frontier.begin(), frontier.end(),
                   [&](size_t a, size_t b) { return *rows[a].median.wan_total < *rows[b].median.wan_total; });
  return frontier;
}

Status DrawFrontierChart(const std::vector<TableRow>& rows, const std::string& title,
                         const std::filesystem::path& png) {
  const int W = 1100, H = 680, L = 90, R = 300, T = 80, B = 70;
  Canvas img(W, H);
  double lo = 1e30, hi = 1, amin = 1, amax = 0;
  for (const TableRow& r : rows) {
    if (!r.median.wan_total || *r.median.wan_total <= 0 || !r.median.final_accuracy) continue;
    lo = std::min(lo, *r.median.wan_total);
    hi = std::max(hi, *r.median.wan_total);
    amin = std::min(amin, *r.median.final_accuracy);
    amax = std::max(amax, *r.median.final_accuracy);
  }
  if (lo > hi) lo = 1;
  if (amin > amax) amin = 0, amax = 1;
  amin = std::max(0.0, std::floor((amin - 0.01) * 50) / 50);
  amax = std::min(1.0, std::ceil((amax + 0.005) * 50) / 50);
  if (amax <= amin) amax = amin + 0.02;
  const double e0 = std::floor(std::log10(lo)), e1 = std::max(e0 + 1, std::ceil(std::log10(hi)));
  const int pw = W - L - R, ph = H - T - B;
  Axis x_axis{.lo = e0, .hi = e1, .log10 = true}, y_axis{.lo = amin, .hi = amax};
  x_axis.label = BytesText;
  y_axis.label = [](double a) { return Fmt("%.2f", a); };
  const PlotArea area({L, T, pw, ph}, x_axis, y_axis);
  img.Text(title, {L, 32}, 0.65, kBlack, 2);
  img.Text("final test accuracy against WAN bytes of the whole run (log scale); dashed: the frontier (no other "
           "configuration has fewer bytes and more accuracy)",
           {L, 58}, 0.4, kGrey);
  area.DrawAxes(img);
  img.Text("WAN bytes of the whole job (both directions, log scale)", {L + pw / 2 - 220, H - 22}, 0.55);
  img.VerticalText("final test accuracy (fraction)", {8, T + ph / 2 - 150, 30, 300}, 0.55);
  std::vector<Point> line;
  for (size_t i : FrontierRows(rows)) {
    line.push_back(area.At(*rows[i].median.wan_total, *rows[i].median.final_accuracy));
  }
  DrawSeries(img, line, kGrey, 1, 0, /*dashed=*/true);
  int ly = T + 10;
  img.Text("configuration", {L + pw + 15, ly}, 0.5, kBlack, 1);  // the title on two lines: one is wider than the
  ly += 22;                                                        // legend column
  img.Text("(final accuracy, WAN bytes)", {L + pw + 15, ly}, 0.45, kBlack, 1);
  ly += 10;
  for (size_t i = 0; i < rows.size(); ++i) {
    const TableRow& r = rows[i];
    const Colour c = SeriesColour(i);
    std::string label = r.config;
    if (r.median.wan_total && *r.median.wan_total > 0 && r.median.final_accuracy) {
      img.Dot(area.At(*r.median.wan_total, *r.median.final_accuracy), 7, c);
      label.append(Fmt(" (%.4f, ", *r.median.final_accuracy)).append(BytesText(*r.median.wan_total)).append(")");
    } else {
      label.append(" (no figures: ").append(r.status).append(")");
    }
    ly = DrawLegendEntry(img, {L + pw + 15, ly + 24}, c, label, W - (L + pw + 52) - 8);
  }
  return img.WritePng(png);
}

}  // namespace geomx::bench
