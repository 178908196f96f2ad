#include "bench/bench_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "algorithms/train/target.h"
#include "cli/json_writer.h"

namespace geomx::bench {
namespace fs = std::filesystem;
using cli::JsonEscape;
using cli::JsonObject;
namespace {

std::optional<double> JsonNumberField(const std::string& json, const std::string& key) {
  const std::string needle = JsonEscape(key) + ":";
  size_t pos = json.find(needle);
  if (pos == std::string::npos) return std::nullopt;
  const char* start = json.c_str() + pos + needle.size();
  while (*start == ' ') ++start;
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start) return std::nullopt;  // null or not a number
  return v;
}

std::string JsonStringField(const std::string& json, const std::string& key) {
  const std::string needle = JsonEscape(key) + ": \"";
  const size_t pos = json.find(needle);
  if (pos == std::string::npos) return "";
  const size_t end = json.find('"', pos + needle.size());
  return end == std::string::npos ? "" : json.substr(pos + needle.size(), end - pos - needle.size());
}

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median of an optional field over the runs that have it.
std::optional<double> MedianOf(const std::vector<const RunResult*>& runs,
                               std::optional<double> RunResult::*field) {
  std::vector<double> v;
  for (const RunResult* r : runs) {
    if (r->*field) v.push_back(*(r->*field));
  }
  if (v.empty()) return std::nullopt;
  return Median(v);
}

std::string Num(std::optional<double> v, const char* fmt) {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, *v);
  return buf;
}

std::string RatioText(const std::optional<Ratio>& r) {
  if (!r) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s%.1fx", r->lower_bound ? ">=" : "", r->value);
  return buf;
}

std::optional<double> Mb(std::optional<double> bytes) {
  if (!bytes) return std::nullopt;
  return *bytes / 1e6;
}

}  // namespace

void DeriveTargetFigures(RunResult* r) {
  r->time_to_target_s.reset();
  r->wan_to_target.reset();
  r->lan_to_target.reset();
  if (r->target <= 0) return;
  for (const CurvePoint& p : r->curve) {
    if (train::ReachesTarget(p.accuracy, r->target)) {
      r->time_to_target_s = p.time_s;
      if (r->wan_total) r->wan_to_target = p.wan_bytes;
      if (r->lan_total) r->lan_to_target = p.lan_bytes;
      return;
    }
  }
}

Status ReadGeomxRun(const fs::path& run_dir, RunResult* r) {
  r->run_dir = run_dir.string();
  r->curve.clear();
  std::ifstream csv(run_dir / "metrics.csv");
  std::string line;
  if (csv && std::getline(csv, line)) {
    const std::vector<std::string> header = SplitCsv(line);
    auto col = [&](const char* name) -> int {
      const auto it = std::find(header.begin(), header.end(), name);
      return it == header.end() ? -1 : static_cast<int>(it - header.begin());
    };
    const int ct = col("time_s"), ci = col("iteration"), ca = col("test_accuracy"), cw = col("wan_bytes"),
              cl = col("lan_bytes");
    if (ct < 0 || ci < 0 || ca < 0) {
      return Status::InvalidArgument((run_dir / "metrics.csv").string() +
                                     ": no time_s, iteration or test_accuracy column");
    }
    int line_no = 1;
    while (std::getline(csv, line)) {
      ++line_no;
      if (line.empty()) continue;
      const std::vector<std::string> cells = SplitCsv(line);
      auto cell = [&](int c) { return c >= 0 && c < static_cast<int>(cells.size()) ? cells[c] : std::string(); };
      CurvePoint p;
      char* end = nullptr;
      const std::string t = cell(ct);
      p.time_s = std::strtod(t.c_str(), &end);
      if (t.empty() || *end != '\0') {
        return Status::InvalidArgument((run_dir / "metrics.csv").string() + ":" + std::to_string(line_no) +
                                       ": time_s is not a number");
      }
      p.iteration = std::strtoll(cell(ci).c_str(), nullptr, 10);
      p.accuracy = std::strtod(cell(ca).c_str(), nullptr);
      p.wan_bytes = std::strtod(cell(cw).c_str(), nullptr);
      p.lan_bytes = std::strtod(cell(cl).c_str(), nullptr);
      r->curve.push_back(p);
    }
  }
  const std::string summary = ReadAll(run_dir / "summary.json");
  if (!summary.empty()) {
    const std::string st = JsonStringField(summary, "status");
    if (st == "failed" && r->status == "completed") {
      r->status = "failed";
      r->error = JsonStringField(summary, "error");
    }
    r->iterations = static_cast<int64_t>(JsonNumberField(summary, "iterations").value_or(0));
    r->wall_s = JsonNumberField(summary, "wall_seconds").value_or(0);
    const double train_s = JsonNumberField(summary, "train_seconds").value_or(0);
    if (r->iterations > 0) r->seconds_per_iteration = (train_s > 0 ? train_s : r->wall_s) / r->iterations;
    r->final_accuracy = JsonNumberField(summary, "final_test_accuracy");
    r->wan_total = JsonNumberField(summary, "wan_bytes");
    r->lan_total = JsonNumberField(summary, "lan_bytes");
  }
  // A run stopped early (--max-time) has no summary figures: take them from the last evaluation.
  if (!r->curve.empty()) {
    const CurvePoint& last = r->curve.back();
    if (r->wall_s <= 0) r->wall_s = last.time_s;
    if (r->iterations <= 0) r->iterations = last.iteration;
    if (r->seconds_per_iteration <= 0 && last.iteration > 0) r->seconds_per_iteration = last.time_s / last.iteration;
    if (!r->final_accuracy) r->final_accuracy = last.accuracy;
    if (!r->wan_total || *r->wan_total < last.wan_bytes) r->wan_total = last.wan_bytes;
    if (!r->lan_total || *r->lan_total < last.lan_bytes) r->lan_total = last.lan_bytes;
  }
  DeriveTargetFigures(r);
  return Status::Ok();
}

void ParseDdpOutput(const std::string& output, RunResult* r) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const std::string event = JsonStringField(line, "event");
    if (event == "eval") {
      CurvePoint p;
      p.time_s = JsonNumberField(line, "time_s").value_or(0);
      p.iteration = static_cast<int64_t>(JsonNumberField(line, "iteration").value_or(0));
      p.accuracy = JsonNumberField(line, "test_accuracy").value_or(0);
      r->curve.push_back(p);
    } else if (event == "done") {
      r->final_accuracy = JsonNumberField(line, "final_accuracy");
      r->iterations = static_cast<int64_t>(JsonNumberField(line, "iterations").value_or(0));
      r->wall_s = JsonNumberField(line, "train_seconds").value_or(0);
      if (r->iterations > 0) r->seconds_per_iteration = r->wall_s / r->iterations;
    }
  }
  if (!r->final_accuracy && !r->curve.empty()) r->final_accuracy = r->curve.back().accuracy;
  if (r->wall_s <= 0 && !r->curve.empty()) r->wall_s = r->curve.back().time_s;
  if (r->seconds_per_iteration <= 0 && !r->curve.empty() && r->curve.back().iteration > 0) {
    r->seconds_per_iteration = r->curve.back().time_s / static_cast<double>(r->curve.back().iteration);
  }
}

void ApportionPeerWanBytes(double total_bytes, double elapsed_s, RunResult* r) {
  r->wan_total = total_bytes;
  double iterations = static_cast<double>(r->iterations);
  if (iterations <= 0 && !r->curve.empty()) {
    const CurvePoint& last = r->curve.back();
    iterations = static_cast<double>(last.iteration);
    if (r->seconds_per_iteration > 0 && elapsed_s > last.time_s) {
      iterations += (elapsed_s - last.time_s) / r->seconds_per_iteration;
    }
  }
  for (CurvePoint& p : r->curve) {
    p.wan_bytes = iterations > 0 ? total_bytes * std::min(1.0, static_cast<double>(p.iteration) / iterations) : 0;
  }
}

std::optional<Ratio> SpeedupToTarget(const RunResult& base, const RunResult& r) {
  if (!r.time_to_target_s || *r.time_to_target_s <= 0) return std::nullopt;
  if (base.time_to_target_s && *base.time_to_target_s > 0) {
    return Ratio{*base.time_to_target_s / *r.time_to_target_s, false};
  }
  if (base.status != "failed" && base.wall_s > 0) return Ratio{base.wall_s / *r.time_to_target_s, true};
  return std::nullopt;
}

std::optional<Ratio> WanReductionToTarget(const RunResult& base, const RunResult& r) {
  if (!r.wan_to_target || *r.wan_to_target <= 0) return std::nullopt;
  if (base.wan_to_target && *base.wan_to_target > 0) return Ratio{*base.wan_to_target / *r.wan_to_target, false};
  if (base.status != "failed" && !base.time_to_target_s && base.wan_total && *base.wan_total > 0) {
    return Ratio{*base.wan_total / *r.wan_to_target, true};
  }
  return std::nullopt;
}

std::vector<TableRow> BuildTable(const std::vector<RunResult>& results) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RunResult*>> by;
  for (const RunResult& r : results) {
    if (!by.count(r.config)) order.push_back(r.config);
    by[r.config].push_back(&r);
  }
  std::vector<TableRow> rows;
  for (const std::string& name : order) {
    const auto& all = by[name];
    std::vector<const RunResult*> ok;
    for (const RunResult* r : all) {
      if (r->status == "completed" || r->status == "timeout") ok.push_back(r);
    }
    TableRow row;
    row.config = name;
    row.repeats = static_cast<int>(all.size());
    row.repeats_ok = static_cast<int>(ok.size());
    RunResult& m = row.median;
    m.config = name;
    m.target = all.front()->target;
    if (ok.empty()) {
      row.status = all.front()->status;
      m.status = row.status;
      m.error = all.front()->error;
      rows.push_back(std::move(row));
      continue;
    }
    bool any_completed = false;
    for (const RunResult* r : ok) any_completed |= r->status == "completed";
    row.status = any_completed ? "completed" : "timeout";
    m.status = row.status;
    m.error = ok.front()->error;
    m.curve = ok.front()->curve;
    std::vector<double> spi, wall;
    for (const RunResult* r : ok) {
      spi.push_back(r->seconds_per_iteration);
      wall.push_back(r->wall_s);
    }
    m.seconds_per_iteration = Median(spi);
    m.wall_s = Median(wall);
    m.iterations = ok.front()->iterations;
    // Time to target counts only if most repeats reached it; the median is over those that did.
    int reached = 0;
    for (const RunResult* r : ok) reached += r->time_to_target_s ? 1 : 0;
    if (2 * reached >= static_cast<int>(ok.size())) {
      m.time_to_target_s = MedianOf(ok, &RunResult::time_to_target_s);
      m.wan_to_target = MedianOf(ok, &RunResult::wan_to_target);
      m.lan_to_target = MedianOf(ok, &RunResult::lan_to_target);
    }
    m.wan_total = MedianOf(ok, &RunResult::wan_total);
    m.lan_total = MedianOf(ok, &RunResult::lan_total);
    m.final_accuracy = MedianOf(ok, &RunResult::final_accuracy);
    rows.push_back(std::move(row));
  }
  const TableRow* flat = nullptr;
  const TableRow* ddp = nullptr;
  for (const TableRow& r : rows) {
    if (r.config == "flat-ps") flat = &r;
    if (r.config == "ddp") ddp = &r;
  }
  for (TableRow& r : rows) {
    if (flat && &r != flat && flat->repeats_ok > 0) {
      r.speedup_vs_flat = SpeedupToTarget(flat->median, r.median);
      r.bytes_vs_flat = WanReductionToTarget(flat->median, r.median);
    }
    if (ddp && &r != ddp && ddp->repeats_ok > 0) {
      r.speedup_vs_ddp = SpeedupToTarget(ddp->median, r.median);
      r.bytes_vs_ddp = WanReductionToTarget(ddp->median, r.median);
    }
  }
  return rows;
}

std::string FormatTable(const std::vector<TableRow>& rows, double target) {
  char tt[32];
  std::snprintf(tt, sizeof(tt), "%.2f", target);
  std::string out;
  char line[512];
  int w = 16;
  for (const TableRow& r : rows) w = std::max(w, static_cast<int>(r.config.size()));
  std::snprintf(line, sizeof(line), "%-*s %-9s %8s %9s %9s %9s %9s %9s %7s %9s %9s %9s %9s\n", w, "config", "status",
                "s/iter", (std::string("t->").append(tt)).c_str(), "WAN MB->", "LAN MB->", "WAN MB", "LAN MB", "acc",
                "x flat", "WANx flat", "x ddp", "WANx ddp");
  out += line;
  for (const TableRow& r : rows) {
    const RunResult& m = r.median;
    std::string status = r.status;
    if (r.repeats > 1) {
      status.append(" ").append(std::to_string(r.repeats_ok)).append("/").append(std::to_string(r.repeats));
    }
    std::snprintf(line, sizeof(line), "%-*s %-9s %8s %9s %9s %9s %9s %9s %7s %9s %9s %9s %9s\n", w, r.config.c_str(),
                  status.c_str(),
                  Num(m.seconds_per_iteration > 0 ? std::optional<double>(m.seconds_per_iteration) : std::nullopt,
                      "%.3f").c_str(),
                  Num(m.time_to_target_s, "%.1fs").c_str(), Num(Mb(m.wan_to_target), "%.4g").c_str(),
                  Num(Mb(m.lan_to_target), "%.4g").c_str(), Num(Mb(m.wan_total), "%.4g").c_str(),
                  Num(Mb(m.lan_total), "%.4g").c_str(), Num(m.final_accuracy, "%.4f").c_str(),
                  RatioText(r.speedup_vs_flat).c_str(), RatioText(r.bytes_vs_flat).c_str(),
                  RatioText(r.speedup_vs_ddp).c_str(), RatioText(r.bytes_vs_ddp).c_str());
    out += line;
  }
  out += "s/iter: wall seconds per training iteration; t->: wall time until the first evaluation at or above the "
         "target; WAN/LAN MB->: bytes (both directions, whole job) until then; WAN/LAN MB: whole run; acc: final "
         "test accuracy; x flat / x ddp: speed-up to target; WANx: WAN-byte reduction to target; '>=': the "
         "baseline never reached the target, its whole run is the bound; '-': not reached or not measurable\n";
  for (const TableRow& r : rows) {
    if (!r.median.error.empty()) out += r.config + ": " + r.median.error + "\n";
  }
  return out;
}

std::string TableCsv(const std::vector<TableRow>& rows) {
  std::string out =
      "config,status,repeats,repeats_ok,seconds_per_iteration,time_to_target_s,wan_bytes_to_target,"
      "lan_bytes_to_target,wan_bytes_total,lan_bytes_total,final_accuracy,speedup_vs_flat_ps,"
      "wan_reduction_vs_flat_ps,speedup_vs_ddp,wan_reduction_vs_ddp,ratios_are_lower_bounds\n";
  auto n = [](std::optional<double> v) { return v ? Num(v, "%.6g") : std::string(); };
  auto ratio = [](const std::optional<Ratio>& r) { return r ? Num(r->value, "%.4g") : std::string(); };
  for (const TableRow& r : rows) {
    const RunResult& m = r.median;
    bool bound = false;
    for (const auto* x : {&r.speedup_vs_flat, &r.bytes_vs_flat, &r.speedup_vs_ddp, &r.bytes_vs_ddp}) {
      bound |= x->has_value() && (*x)->lower_bound;
    }
    out += r.config + "," + r.status + "," + std::to_string(r.repeats) + "," + std::to_string(r.repeats_ok) + "," +
           n(m.seconds_per_iteration > 0 ? std::optional<double>(m.seconds_per_iteration) : std::nullopt) + "," +
           n(m.time_to_target_s) + "," + n(m.wan_to_target) + "," + n(m.lan_to_target) + "," + n(m.wan_total) +
           "," + n(m.lan_total) + "," + n(m.final_accuracy) + "," + ratio(r.speedup_vs_flat) + "," +
           ratio(r.bytes_vs_flat) + "," + ratio(r.speedup_vs_ddp) + "," + ratio(r.bytes_vs_ddp) + "," +
           (bound ? "true" : "false") + "\n";
  }
  return out;
}

namespace {
JsonObject RunJson(const RunResult& m) {
  JsonObject j;
  j.Add("config", m.config).Add("status", m.status);
  if (!m.error.empty()) j.Add("error", m.error);
  if (!m.run_dir.empty()) j.Add("run_dir", m.run_dir);
  j.Add("iterations", m.iterations)
      .Add("wall_seconds", m.wall_s)
      .Add("seconds_per_iteration", m.seconds_per_iteration)
      .Add("time_to_target_seconds", m.time_to_target_s)
      .Add("wan_bytes_to_target", m.wan_to_target)
      .Add("lan_bytes_to_target", m.lan_to_target)
      .Add("wan_bytes_total", m.wan_total)
      .Add("lan_bytes_total", m.lan_total)
      .Add("final_accuracy", m.final_accuracy);
  if (m.netns_wan_bytes) j.Add("netns_wan_bytes", m.netns_wan_bytes);
  return j;
}
void AddRatio(JsonObject& j, const char* key, const std::optional<Ratio>& r) {
  if (!r) {
    j.AddRaw(key, "null");
    return;
  }
  JsonObject o;
  o.Add("value", r->value).Add("lower_bound", r->lower_bound);
  j.Add(key, o);
}
}  // namespace

std::string ResultsJson(const std::vector<TableRow>& rows, const std::vector<RunResult>& runs,
                        const std::string& header_json) {
  std::string table, all;
  for (const TableRow& r : rows) {
    JsonObject j = RunJson(r.median);
    j.Add("repeats", r.repeats).Add("repeats_ok", r.repeats_ok);
    AddRatio(j, "speedup_vs_flat_ps", r.speedup_vs_flat);
    AddRatio(j, "wan_reduction_vs_flat_ps", r.bytes_vs_flat);
    AddRatio(j, "speedup_vs_ddp", r.speedup_vs_ddp);
    AddRatio(j, "wan_reduction_vs_ddp", r.bytes_vs_ddp);
    if (!table.empty()) table += ",\n    ";
    table += j.str();
  }
  for (const RunResult& r : runs) {
    JsonObject j = RunJson(r);
    j.Add("repeat", r.repeat);
    std::string curve;
    for (const CurvePoint& p : r.curve) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "[%.3f, %lld, %.5f, %.0f, %.0f]", p.time_s, static_cast<long long>(p.iteration),
                    p.accuracy, p.wan_bytes, p.lan_bytes);
      if (!curve.empty()) curve += ", ";
      curve += buf;
    }
    j.AddRaw("curve_time_iteration_accuracy_wan_lan", std::string("[").append(curve).append("]"));
    if (!all.empty()) all += ",\n    ";
    all += j.str();
  }
  std::string out = "{\n  \"bench\": ";
  out.append(header_json).append(",\n  \"table\": [\n    ").append(table).append("\n  ],\n  \"runs\": [\n    ");
  out.append(all).append("\n  ]\n}\n");
  return out;
}

}  // namespace geomx::bench
