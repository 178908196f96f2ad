// `geomx plot RUN [RUN...] [--out FILE.png]`: the training curves of run folders as one PNG (docs/cli.md,
// "geomx plot"). Reads each run's metrics (metrics.jsonl, or metrics.csv when there is no jsonl) and draws a 2 x 3
// grid of panels with cli/chart.h: loss, test accuracy and cumulative WAN/LAN traffic, against wall time (top row)
// and against iterations (bottom row; the `step` of a classical algorithm run), the runs overlaid with a legend.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/chart.h"
#include "engine/base/status.h"

namespace geomx::cli {

// The metrics of one run folder, column by column: one value per metrics line, NaN where the line lacks the field
// or holds null. Value type.
struct RunMetrics {
  std::string path;   // the folder, as given
  std::string label;  // for the legend: the folder's name (the recipe's name when the path has none, e.g. ".")
  std::string file;   // the metrics file read (RUN/metrics.jsonl or RUN/metrics.csv)
  size_t rows = 0;
  std::map<std::string, std::vector<double>> columns;

  // The column `name` when it has at least one finite value, else nullptr. Valid while this object lives.
  const std::vector<double>* Column(const std::string& name) const;
};

// Reads the run folder `run`. kInvalidArgument (a user error, exit 2) naming the path when it is not a folder, has
// neither metrics.jsonl nor metrics.csv, or its metrics have no rows; naming FILE:LINE for a malformed line (not a
// flat JSON object of numbers, strings, booleans and nulls; a CSV row with another field count than the header or
// a field that is not a number).
Result<RunMetrics> ReadRunMetrics(const std::string& run);

// Size of the figure in pixels.
inline constexpr int kPlotWidth = 1680, kPlotHeight = 980;

// The plot area (inside the axes, where curves are drawn) of a panel of the figure: row 0 against wall time
// (`time_s`, seconds), row 1 against iterations (`iteration`, or `step`); column 0 the loss (solid: training
// `loss` or `objective`; dashed: `test_loss` or `eval_loss`), 1 the test accuracy (`test_accuracy` or
// `accuracy`, fraction), 2 the cumulative traffic in MB (solid: `wan_bytes`; dashed: `lan_bytes`). A panel with
// no values for any run says "no data". Run i is drawn in chart::SeriesColour(i).
chart::Box PlotPanelArea(int row, int column);

// Draws the figure of `runs` (in that order) into `png`, written atomically. kInternal when it cannot be written.
Status DrawRunCurves(const std::vector<RunMetrics>& runs, const std::filesystem::path& png);

// Reads every run folder of `runs` and draws their figure into `out`. Empty `out`: RUN/curves.png for a single run;
// several runs need `out` (kInvalidArgument otherwise), as do no runs. `out` must end in .png and its folder must
// exist (kInvalidArgument). Returns the path written in *written when not null.
Status PlotRuns(const std::vector<std::string>& runs, const std::string& out, std::string* written = nullptr);

}  // namespace geomx::cli
