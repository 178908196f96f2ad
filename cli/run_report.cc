#include "cli/run_report.h"

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "cli/json_writer.h"
#include "nn/checkpoint.h"

namespace geomx::cli {
namespace fs = std::filesystem;

namespace {
// Reads a number field of a flat JSON object written by JsonObject ("key": value). nullopt when absent/null.
std::optional<double> JsonNumber(const std::string& json, const std::string& key) {
  const std::string needle = JsonEscape(key) + ": ";
  const size_t pos = json.find(needle);
  if (pos == std::string::npos) return std::nullopt;
  const char* start = json.c_str() + pos + needle.size();
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start) return std::nullopt;
  return v;
}

}  // namespace

uint64_t PeakRssBytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

// Reads a number field of a flat JSON object written by JsonObject ("key": value). nullopt when absent/null.
std::string StateToJson(const TrainState& s) {
  JsonObject j;
  j.Add("iteration", s.iteration)
      .Add("epoch", s.epoch)
      .Add("epoch_iteration", s.epoch_iteration)
      .Add("elapsed_s", s.elapsed_s)
      .Add("train_seconds", s.train_seconds)
      .Add("samples", s.samples)
      .Add("best_accuracy", s.best_accuracy)
      .Add("final_accuracy", s.final_accuracy)
      .Add("final_test_loss", s.final_test_loss)
      .Add("time_to_target_s", s.time_to_target_s);
  return j.str();
}

TrainState StateFromJson(const std::string& json) {
  TrainState s;
  auto get = [&](const char* k, double def) { return JsonNumber(json, k).value_or(def); };
  s.iteration = static_cast<int64_t>(get("iteration", 0));
  s.epoch = static_cast<int>(get("epoch", 0));
  s.epoch_iteration = static_cast<int64_t>(get("epoch_iteration", 0));
  s.elapsed_s = get("elapsed_s", 0);
  s.train_seconds = get("train_seconds", 0);
  s.samples = static_cast<int64_t>(get("samples", 0));
  s.best_accuracy = get("best_accuracy", -1);
  s.final_accuracy = get("final_accuracy", -1);
  s.final_test_loss = get("final_test_loss", -1);
  s.time_to_target_s = get("time_to_target_s", -1);
  return s;
}

RunListener::RunListener(RunDir* run, Progress* progress, nn::Module* model, nn::Optimizer* opt,
                         std::string model_name, TrafficSource traffic)
    : run_(run), progress_(progress), model_(model), opt_(opt), model_name_(std::move(model_name)),
      traffic_(std::move(traffic)) {}

std::string TrafficJson(const comm::TrafficSnapshot& t) {
  JsonObject j;
  j.Add("wan_bytes", t.wan_bytes())
      .Add("lan_bytes", t.lan_bytes())
      .Add("wan_bytes_sent", t.wan_bytes_sent)
      .Add("wan_bytes_received", t.wan_bytes_received)
      .Add("lan_bytes_sent", t.lan_bytes_sent)
      .Add("lan_bytes_received", t.lan_bytes_received)
      .Add("wan_messages", t.wan_messages)
      .Add("lan_messages", t.lan_messages);
  // DGT's channels, those that carried anything: dgt_blocks_C, dgt_bytes_C, dgt_lost_C.
  for (int c = 0; c < comm::kDgtChannels; ++c) {
    if (t.dgt[c].blocks == 0) continue;
    const std::string n = std::to_string(c);
    j.Add("dgt_blocks_" + n, t.dgt[c].blocks).Add("dgt_bytes_" + n, t.dgt[c].bytes).Add("dgt_lost_" + n, t.dgt[c].lost);
  }
  return j.str();
}

Status WriteTrafficFile(const fs::path& path, const comm::TrafficSnapshot& t) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  return WriteFileAtomically(path, TrafficJson(t) + "\n");
}

comm::TrafficSnapshot ReadTrafficDir(const fs::path& dir) {
  comm::TrafficSnapshot total;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream f(e.path());
    std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto get = [&](const char* k) { return static_cast<uint64_t>(JsonNumber(json, k).value_or(0)); };
    comm::TrafficSnapshot t;
    t.wan_bytes_sent = get("wan_bytes_sent");
    t.wan_bytes_received = get("wan_bytes_received");
    t.wan_messages = get("wan_messages");
    t.lan_bytes_sent = get("lan_bytes_sent");
    t.lan_bytes_received = get("lan_bytes_received");
    t.lan_messages = get("lan_messages");
    for (int c = 0; c < comm::kDgtChannels; ++c) {
      const std::string n = std::to_string(c);
      t.dgt[c] = {get(("dgt_blocks_" + n).c_str()), get(("dgt_bytes_" + n).c_str()), get(("dgt_lost_" + n).c_str())};
    }
    total += t;
  }
  return total;
}

void RunListener::OnIteration(const ProgressInfo& p) { progress_->Update(p); }

Status RunListener::OnEvaluation(const MetricsRow& row_in, const TrainState&) {
    MetricsRow row = row_in;
    const comm::TrafficSnapshot t = traffic_ ? traffic_() : comm::TrafficSnapshot{};
    row.lan_bytes = t.lan_bytes();
    row.wan_bytes = t.wan_bytes();
    char line[256];
    std::snprintf(line, sizeof(line),
                  "eval  epoch %d  iter %lld  train loss %.4f  train acc %.4f  test loss %.4f  test acc %.4f%s",
                  row.epoch, static_cast<long long>(row.iteration), row.loss, row.train_accuracy, row.test_loss,
                  row.test_accuracy, row.test_examples > 0 ? "" : " (no test data)");
    progress_->Message(line);
    return run_->AppendMetrics(row);
  }

Status RunListener::OnCheckpoint(const TrainState& state) {
    nn::CheckpointMeta meta;
    meta.iteration = state.iteration;
    meta.epoch = state.epoch;
    meta.optimizer_step = opt_->step();
    meta.model_name = model_name_;
    meta.extra_json = StateToJson(state);
    const fs::path path = run_->CheckpointPath(state.iteration);
    GEOMX_RETURN_IF_ERROR(nn::SaveCheckpoint(path, *model_, opt_, meta));
    return run_->CommitCheckpoint(path);
}

std::string SummaryJson(const char* status, const std::string& error, const Recipe& recipe, const RunSetup& setup,
                        int64_t num_params, const TrainState& s, const RunDir& run,
                        const comm::TrafficSnapshot& traffic) {
  auto opt_or_null = [](double v) { return v >= 0 ? std::optional<double>(v) : std::nullopt; };
  JsonObject j;
  j.Add("status", status);
  if (!error.empty()) j.Add("error", error);
  j.Add("name", recipe.name)
      .Add("model", recipe.model.name)
      .Add("parameters", num_params)
      .Add("dataset", recipe.data.name)
      .Add("device", setup.device.ToString())
      .Add("threads", recipe.threads)
      .Add("iterations", s.iteration)
      .Add("epochs", s.epoch)
      .Add("samples", s.samples)
      .Add("wall_seconds", s.elapsed_s)
      .Add("train_seconds", s.train_seconds)
      .Add("final_test_accuracy", opt_or_null(s.final_accuracy))
      .Add("final_test_loss", opt_or_null(s.final_test_loss))
      .Add("best_test_accuracy", opt_or_null(s.best_accuracy))
      .Add("target_accuracy", static_cast<double>(recipe.training.target_accuracy))
      .Add("time_to_target_seconds", opt_or_null(s.time_to_target_s))
      .Add("samples_per_second", s.train_seconds > 0 ? s.samples / s.train_seconds : 0.0)
      .AddRaw("traffic", TrafficJson(traffic))
      .Add("peak_rss_bytes", PeakRssBytes())
      .Add("run_dir", run.path().string());
  return j.str();
}

namespace {

// The index just past the JSON string value that starts with the quote at `open`; npos when unterminated.
size_t PastJsonString(const std::string& s, size_t open) {
  for (size_t i = open + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string::npos;
}

// The index just past the JSON object that starts with the brace at `open` (no strings with braces inside: the
// traffic object holds numbers only); npos when unbalanced.
size_t PastJsonObject(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

}  // namespace

std::string TopologySummaryJson(const std::string& written, const char* status, const std::string& error,
                                const Recipe& recipe, const RunDir& run, const comm::TrafficSnapshot& traffic) {
  JsonObject head;
  head.Add("status", status);
  if (!error.empty()) head.Add("error", error);
  const std::string status_key = "{\"status\": ";
  const std::string error_key = ", \"error\": ";
  const std::string traffic_key = "\"traffic\": ";
  std::string rest;  // the worker's fields after status (and error), starting with ", " or "}"
  if (written.rfind(status_key, 0) == 0) {
    size_t p = PastJsonString(written, status_key.size());
    if (p != std::string::npos && written.compare(p, error_key.size(), error_key) == 0) {
      p = PastJsonString(written, p + error_key.size());
    }
    if (p != std::string::npos) rest = written.substr(p);
    const size_t t = rest.find(traffic_key);
    const size_t end = t == std::string::npos ? t : PastJsonObject(rest, t + traffic_key.size());
    if (end == std::string::npos) {
      rest.clear();
    } else {
      rest.replace(t, end - t, traffic_key + TrafficJson(traffic));
    }
    while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.pop_back();
    if (rest.empty() || rest.back() != '}') rest.clear();
  }
  if (rest.empty()) {
    head.Add("name", recipe.name).AddRaw("traffic", TrafficJson(traffic)).Add("run_dir", run.path().string());
    return head.str();
  }
  const std::string h = head.str();
  return h.substr(0, h.size() - 1) + rest;
}

}  // namespace geomx::cli
