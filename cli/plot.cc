#include "cli/plot.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <system_error>

#include "cli/commands.h"

namespace geomx::cli {
namespace fs = std::filesystem;
using chart::Box;
using chart::Canvas;
using chart::Point;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- Reading metrics ----

std::optional<double> ParseNumber(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  const char* begin = s.data();
  if (*begin == '+') return std::nullopt;
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

void SkipSpace(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\r')) ++*i;
}

// A JSON string starting at s[*i] == '"'; escapes are kept undecoded except \" and \\ (keys are plain names).
std::optional<std::string> ParseString(std::string_view s, size_t* i) {
  std::string out;
  for (++*i; *i < s.size(); ++*i) {
    const char c = s[*i];
    if (c == '"') {
      ++*i;
      return out;
    }
    if (c == '\\') {
      if (++*i >= s.size()) return std::nullopt;
      out += s[*i] == '"' || s[*i] == '\\' ? s[*i] : '?';
      continue;
    }
    out += c;
  }
  return std::nullopt;
}

// One metrics.jsonl line: a flat JSON object. Numbers become values; null (a non-finite number), strings and
// booleans become NaN. Returns false with *error saying what was expected when the line is malformed.
bool ParseJsonLine(std::string_view s, std::vector<std::pair<std::string, double>>* fields, std::string* error) {
  size_t i = 0;
  SkipSpace(s, &i);
  if (i >= s.size() || s[i] != '{') return *error = "expected a JSON object ('{')", false;
  ++i;
  SkipSpace(s, &i);
  bool more = i >= s.size() || s[i] != '}';
  if (!more) ++i;
  while (more) {
    SkipSpace(s, &i);
    if (i >= s.size() || s[i] != '"') return *error = "expected a quoted key", false;
    std::optional<std::string> key = ParseString(s, &i);
    if (!key) return *error = "unterminated string", false;
    SkipSpace(s, &i);
    if (i >= s.size() || s[i] != ':') return *error = "expected ':' after \"" + *key + "\"", false;
    ++i;
    SkipSpace(s, &i);
    double value = kNaN;
    if (i < s.size() && s[i] == '"') {
      if (!ParseString(s, &i)) return *error = "unterminated string", false;
    } else {
      size_t end = i;
      while (end < s.size() && s[end] != ',' && s[end] != '}' && s[end] != ' ' && s[end] != '\t') ++end;
      const std::string_view token = s.substr(i, end - i);
      if (token != "null" && token != "true" && token != "false") {
        const std::optional<double> v = ParseNumber(token);
        if (!v) {
          *error = "the value of \"" + *key + "\" is not a number, string, true, false or null: '" +
                   std::string(token.substr(0, 40)) + "'";
          return false;
        }
        value = *v;
      }
      i = end;
    }
    fields->emplace_back(std::move(*key), value);
    SkipSpace(s, &i);
    if (i < s.size() && s[i] == ',') {
      ++i;
    } else if (i < s.size() && s[i] == '}') {
      ++i;
      more = false;
    } else {
      return *error = "expected ',' or '}' after the value of \"" + fields->back().first + "\"", false;
    }
  }
  SkipSpace(s, &i);
  if (i != s.size()) return *error = "text after the closing '}'", false;
  return true;
}

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == ',') {
      out.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool Blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

Status Malformed(const fs::path& file, int line, const std::string& what) {
  return Status::InvalidArgument(file.string() + ":" + std::to_string(line) + ": " + what);
}

// Adds one row to `m`: the given fields; columns it lacks get NaN.
void AddRow(RunMetrics* m, const std::vector<std::pair<std::string, double>>& fields) {
  for (const auto& [name, value] : fields) {
    std::vector<double>& col = m->columns[name];
    col.resize(m->rows, kNaN);  // a column first seen now is NaN in the rows before
    col.push_back(value);
  }
  ++m->rows;
  for (auto& [name, col] : m->columns) col.resize(m->rows, kNaN);
}

Status ReadJsonl(const fs::path& file, RunMetrics* m) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read " + file.string());
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (Blank(line)) continue;
    std::vector<std::pair<std::string, double>> fields;
    std::string error;
    if (!ParseJsonLine(line, &fields, &error)) return Malformed(file, n, error);
    AddRow(m, fields);
  }
  return Status::Ok();
}

Status ReadCsv(const fs::path& file, RunMetrics* m) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read " + file.string());
  std::string line;
  std::vector<std::string> header;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Blank(line)) continue;
    const std::vector<std::string_view> fields = SplitCsv(line);
    if (header.empty()) {
      for (std::string_view f : fields) {
        if (f.empty()) return Malformed(file, n, "empty column name in the header");
        header.emplace_back(f);
      }
      continue;
    }
    if (fields.size() != header.size()) {
      return Malformed(file, n, std::to_string(fields.size()) + " fields, the header has " +
                                    std::to_string(header.size()));
    }
    std::vector<std::pair<std::string, double>> row;
    for (size_t i = 0; i < fields.size(); ++i) {
      double v = kNaN;
      if (!fields[i].empty()) {
        const std::optional<double> parsed = ParseNumber(fields[i]);
        if (!parsed) {
          return Malformed(file, n, "field '" + header[i] + "' is not a number: '" +
                                        std::string(fields[i].substr(0, 40)) + "'");
        }
        v = *parsed;
      }
      row.emplace_back(header[i], v);
    }
    AddRow(m, row);
  }
  return Status::Ok();
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The recipe's name: summary.json's "name", else recipe.yaml's top-level `name:`; empty when neither says.
std::string RecipeName(const fs::path& dir) {
  const std::string summary = ReadText(dir / "summary.json");
  const std::string key = "\"name\": \"";
  if (size_t at = summary.find(key); at != std::string::npos) {
    const size_t end = summary.find('"', at + key.size());
    if (end != std::string::npos) return summary.substr(at + key.size(), end - at - key.size());
  }
  std::ifstream in(dir / "recipe.yaml");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("name:", 0) != 0) continue;
    std::string v = line.substr(5);
    v.erase(0, v.find_first_not_of(" \t\"'"));
    v.erase(v.find_last_not_of(" \t\r\"'") + 1);
    return v;
  }
  return "";
}

// summary.json's "status" when it is not "completed" (interrupted, failed), else empty.
std::string UnfinishedStatus(const fs::path& dir) {
  const std::string summary = ReadText(dir / "summary.json");
  const std::string key = "\"status\": \"";
  const size_t at = summary.find(key);
  if (at == std::string::npos) return "";
  const size_t end = summary.find('"', at + key.size());
  const std::string status = end == std::string::npos ? "" : summary.substr(at + key.size(), end - at - key.size());
  return status == "completed" ? "" : status;
}

}  // namespace

const std::vector<double>* RunMetrics::Column(const std::string& name) const {
  const auto it = columns.find(name);
  if (it == columns.end()) return nullptr;
  for (double v : it->second) {
    if (std::isfinite(v)) return &it->second;
  }
  return nullptr;
}

Result<RunMetrics> ReadRunMetrics(const std::string& run) {
  std::error_code ec;
  const fs::path dir(run);
  if (!fs::exists(dir, ec)) return Status::InvalidArgument(run + ": no such run folder");
  if (!fs::is_directory(dir, ec)) return Status::InvalidArgument(run + ": not a run folder (a file)");
  RunMetrics m;
  m.path = run;
  const fs::path jsonl = dir / "metrics.jsonl", csv = dir / "metrics.csv";
  if (fs::is_regular_file(jsonl, ec)) {
    m.file = jsonl.string();
    GEOMX_RETURN_IF_ERROR(ReadJsonl(jsonl, &m));
  } else if (fs::is_regular_file(csv, ec)) {
    m.file = csv.string();
    GEOMX_RETURN_IF_ERROR(ReadCsv(csv, &m));
  } else {
    return Status::InvalidArgument(run + ": not a geomx run folder (no metrics.jsonl or metrics.csv)");
  }
  if (m.rows == 0) return Status::InvalidArgument(m.file + ": no metrics yet (the file has no rows)");
  // The folder's own name; "runs/a/" and "." have none of their own in the path as written.
  fs::path name = dir.lexically_normal();
  if (!name.has_filename()) name = name.parent_path();
  m.label = name.filename().string();
  if (m.label.empty() || m.label == "." || m.label == "..") {
    m.label = RecipeName(dir);
    if (m.label.empty()) m.label = fs::absolute(dir, ec).lexically_normal().filename().string();
  }
  if (const std::string s = UnfinishedStatus(dir); !s.empty()) m.label += " (" + s + ")";
  return m;
}

// ---- The figure ----

namespace {

constexpr int kTitleBand = 50, kLegendWidth = 280;
constexpr int kPanelWidth = (kPlotWidth - kLegendWidth) / 3, kPanelHeight = (kPlotHeight - kTitleBand) / 2;
constexpr int kLeft = 80, kRight = 22, kTop = 40, kBottom = 70;  // plot area within a panel

// What a panel shows: the columns of its solid and dashed lines (the first present of each list).
struct PanelSpec {
  const char* title;
  const char* y_title;
  std::vector<std::string> solid, dashed;
  double scale = 1;       // values are multiplied by it (bytes -> MB)
  bool fraction = false;  // a fraction: range kept in [0, 1], ticks with 2 decimals
  bool from_zero = false;
};

const std::vector<PanelSpec>& Panels() {
  static const std::vector<PanelSpec> specs = {
      {"loss (solid: training, dashed: test)", "loss", {"loss", "objective"}, {"test_loss", "eval_loss"}},
      {"test accuracy", "test accuracy (fraction)", {"test_accuracy", "accuracy"}, {}, 1, true},
      {"traffic (solid: WAN, dashed: LAN)", "cumulative bytes (MB)", {"wan_bytes"}, {"lan_bytes"}, 1e-6, false,
       true},
  };
  return specs;
}

const std::vector<double>* FirstColumn(const RunMetrics& run, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (const std::vector<double>* c = run.Column(n)) return c;
  }
  return nullptr;
}

// The (x, y) pairs of one line, finite values only, y scaled.
std::vector<std::pair<double, double>> Pairs(const std::vector<double>* x, const std::vector<double>* y,
                                             double scale) {
  std::vector<std::pair<double, double>> out;
  if (x == nullptr || y == nullptr) return out;
  for (size_t i = 0; i < std::min(x->size(), y->size()); ++i) {
    const double yv = (*y)[i] * scale;
    if (std::isfinite((*x)[i]) && std::isfinite(yv)) out.emplace_back((*x)[i], yv);
  }
  return out;
}

// A value range rounded out to ticks of a nice step (*step); a single value gets room around it.
std::pair<double, double> NiceRange(double lo, double hi, bool from_zero, bool fraction, double* step_out) {
  if (from_zero) lo = std::min(lo, 0.0);
  if (hi <= lo) {
    const double pad = lo == 0 ? (fraction ? 0.1 : 1) : std::abs(lo) * 0.1;
    lo = from_zero && lo >= 0 ? lo : lo - pad;
    hi = hi + pad;
  }
  const double step = chart::NiceStep(hi - lo, 5);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  if (fraction) lo = std::max(lo, 0.0), hi = std::min(hi, 1.0);
  if (hi <= lo) hi = lo + step;
  *step_out = step;
  return {lo, hi};
}

// Panel (row, col) of the figure; each run's x values are its first column of `x_names` that has values.
void DrawPanel(Canvas& canvas, const std::vector<RunMetrics>& runs, int row, int col,
               const std::vector<std::string>& x_names, const std::string& x_title) {
  const PanelSpec& spec = Panels()[static_cast<size_t>(col)];
  const Box area_box = PlotPanelArea(row, col);
  const int panel_x = area_box.x - kLeft, panel_y = area_box.y - kTop;
  canvas.Text(spec.title, {area_box.x, panel_y + 26}, 0.5, chart::kBlack, 1);

  struct Line {
    std::vector<std::pair<double, double>> points;
    size_t run;
    bool dashed;
  };
  std::vector<Line> lines;
  double x_lo = 0, x_hi = 0, y_lo = std::numeric_limits<double>::infinity(), y_hi = -y_lo;
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::vector<double>* x = FirstColumn(runs[r], x_names);
    for (bool dashed : {false, true}) {
      std::vector<std::pair<double, double>> pts =
          Pairs(x, FirstColumn(runs[r], dashed ? spec.dashed : spec.solid), spec.scale);
      if (pts.empty()) continue;
      for (const auto& [xv, yv] : pts) {
        x_lo = std::min(x_lo, xv);
        x_hi = std::max(x_hi, xv);
        y_lo = std::min(y_lo, yv);
        y_hi = std::max(y_hi, yv);
      }
      lines.push_back({std::move(pts), r, dashed});
    }
  }
  if (lines.empty()) {
    canvas.Frame(area_box, chart::kGrid);
    const std::string s = "no data";
    canvas.Text(s, {area_box.x + area_box.width / 2 - chart::TextWidth(s, 0.6) / 2, area_box.y + area_box.height / 2},
                0.6, chart::kGrey);
    canvas.Text(x_title, {area_box.x + area_box.width / 2 - chart::TextWidth(x_title, 0.5) / 2,
                          area_box.bottom() + 48}, 0.5, chart::kGrey);
    return;
  }
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  double y_step = 0;
  const auto [lo, hi] = NiceRange(y_lo, y_hi, spec.from_zero, spec.fraction, &y_step);
  chart::Axis x_axis{.lo = x_lo, .hi = x_hi, .ticks = 5};
  chart::Axis y_axis{.lo = lo, .hi = hi, .ticks = 5, .step = y_step};
  if (spec.fraction) y_axis.label = [](double v) { return chart::Fmt("%.2f", v); };
  const chart::PlotArea area(area_box, x_axis, y_axis);
  area.DrawAxes(canvas);

  canvas.Text(x_title, {area_box.x + area_box.width / 2 - chart::TextWidth(x_title, 0.5) / 2,
                        area_box.bottom() + 48}, 0.5);
  const int title_len = std::min(area_box.height, chart::TextWidth(spec.y_title, 0.5) + 20);
  canvas.VerticalText(spec.y_title, {panel_x + 4, area_box.y + area_box.height / 2 - title_len / 2, 28, title_len},
                      0.5);
  if (spec.from_zero && y_hi == 0) {  // traffic of a single-process run: nothing crossed a link
    const std::string s = "0 bytes: nothing crossed a link";
    canvas.Text(s, {area_box.x + area_box.width / 2 - chart::TextWidth(s, 0.45) / 2, area_box.y + 30}, 0.45,
                chart::kGrey);
  }
  for (const Line& l : lines) {
    std::vector<Point> pts;
    pts.reserve(l.points.size());
    for (const auto& [xv, yv] : l.points) pts.push_back(area.At(xv, yv));
    const int dots = !l.dashed && pts.size() <= 40 ? 3 : 0;
    chart::DrawSeries(canvas, pts, chart::SeriesColour(l.run), 2, dots, l.dashed);
  }
}

}  // namespace

Box PlotPanelArea(int row, int column) {
  return {column * kPanelWidth + kLeft, kTitleBand + row * kPanelHeight + kTop, kPanelWidth - kLeft - kRight,
          kPanelHeight - kTop - kBottom};
}

Status DrawRunCurves(const std::vector<RunMetrics>& runs, const fs::path& png) {
  Canvas canvas(kPlotWidth, kPlotHeight);
  const std::string title =
      runs.size() == 1 ? "Training curves: " + runs[0].label : "Training curves of " + std::to_string(runs.size()) +
                                                                   " runs";
  double sc = 0.7;
  const std::vector<std::string> title_lines = chart::FitLines(title, 0.7, kPlotWidth - 40, &sc);
  canvas.Text(title_lines.front(), {20, 34}, sc, chart::kBlack, 2);

  // Classical algorithm runs count `step`s (an epoch, a pass or a boosting round) instead of iterations.
  bool iterations = false, steps = false;
  for (const RunMetrics& r : runs) {
    const bool it = r.Column("iteration") != nullptr;
    iterations = iterations || it;
    steps = steps || (!it && r.Column("step") != nullptr);
  }
  const std::string x_title = !steps ? "iteration" : iterations ? "iteration (algorithm runs: step)"
                                                                : "step (epoch, pass or round)";
  for (int col = 0; col < 3; ++col) {
    DrawPanel(canvas, runs, 0, col, {"time_s"}, "wall time since training started (s)");
    DrawPanel(canvas, runs, 1, col, {"iteration", "step"}, x_title);
  }

  const int lx = kPlotWidth - kLegendWidth + 10, max_label = kPlotWidth - lx - 37 - 8;
  int ly = kTitleBand + kTop;
  canvas.Text("runs", {lx, ly}, 0.55, chart::kBlack, 1);
  ly += 6;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (ly + 24 > kPlotHeight - 130) {
      canvas.Text("... and " + std::to_string(runs.size() - i) + " more", {lx, ly + 24}, 0.45, chart::kGrey);
      ly += 24;
      break;
    }
    ly = chart::DrawLegendEntry(canvas, {lx, ly + 24}, chart::SeriesColour(i), runs[i].label, max_label);
  }
  ly += 44;
  canvas.Text("lines", {lx, ly}, 0.55, chart::kBlack, 1);
  ly = chart::DrawLegendEntry(canvas, {lx, ly + 24}, chart::kGrey, "training loss, WAN bytes", max_label);
  ly = chart::DrawLegendEntry(canvas, {lx, ly + 24}, chart::kGrey, "test loss, LAN bytes", max_label, 0.45, true);
  canvas.Text("dots: one per metrics row", {lx, ly + 28}, 0.4, chart::kGrey);
  canvas.Text("(up to 40 rows)", {lx, ly + 46}, 0.4, chart::kGrey);
  return canvas.WritePng(png);
}

Status PlotRuns(const std::vector<std::string>& runs, const std::string& out, std::string* written) {
  if (runs.empty()) return Status::InvalidArgument("plot: name at least one run folder");
  if (runs.size() > 1 && out.empty()) {
    return Status::InvalidArgument("plot: " + std::to_string(runs.size()) +
                                   " runs need --out FILE.png (where to write their common chart)");
  }
  fs::path png = out.empty() ? fs::path(runs[0]) / "curves.png" : fs::path(out);
  if (!out.empty()) {
    std::string ext = png.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext != ".png") return Status::InvalidArgument("--out " + out + ": the chart is a PNG file; name it *.png");
    std::error_code ec;
    const fs::path parent = png.parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
      return Status::InvalidArgument("--out " + out + ": folder " + parent.string() + " does not exist");
    }
  }
  std::vector<RunMetrics> metrics;
  for (const std::string& run : runs) {
    GEOMX_ASSIGN_OR_RETURN(RunMetrics m, ReadRunMetrics(run));
    metrics.push_back(std::move(m));
  }
  // Two folders of the same name (a/run, b/run) would share a legend label: number the later ones.
  std::set<std::string> seen;
  for (RunMetrics& m : metrics) {
    const std::string base = m.label;
    for (int k = 2; !seen.insert(m.label).second; ++k) m.label = base + " #" + std::to_string(k);
  }
  GEOMX_RETURN_IF_ERROR(DrawRunCurves(metrics, png));
  if (written != nullptr) *written = png.string();
  return Status::Ok();
}

Status RunPlotCommand(const std::vector<std::string>& runs, const std::string& out) {
  std::string written;
  GEOMX_RETURN_IF_ERROR(PlotRuns(runs, out, &written));
  std::printf("geomx: wrote %s (%zu run%s)\n", written.c_str(), runs.size(), runs.size() == 1 ? "" : "s");
  return Status::Ok();
}

}  // namespace geomx::cli
