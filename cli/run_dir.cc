#include "cli/run_dir.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "cli/json_writer.h"

namespace geomx::cli {
namespace fs = std::filesystem;

namespace {
constexpr int kKeepCheckpoints = 3;
const char* kCsvHeader =
    "time_s,iteration,epoch,loss,train_accuracy,test_loss,test_accuracy,test_examples,samples_per_second,lr,"
    "lan_bytes,wan_bytes\n";

Status AppendText(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::app | std::ios::binary);
  if (!f) return Status::Internal("cannot open " + path.string() + " for appending");
  f << text;
  f.flush();
  if (!f) return Status::ResourceExhausted("cannot write " + path.string() + " (disk full?)");
  return Status::Ok();
}
}  // namespace

fs::path RunDir::DefaultPath(const fs::path& parent, const std::string& name) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  fs::path base = parent / (name + "-" + stamp);
  fs::path p = base;
  for (int i = 2; fs::exists(p); ++i) p = base.string() + "-" + std::to_string(i);
  return p;
}

Result<RunDir> RunDir::Create(const fs::path& dir, const std::string& resolved_recipe_yaml) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) return Status::AlreadyExists("--out " + dir.string() + " is a file");
    if (!fs::is_empty(dir, ec)) {
      return Status::AlreadyExists("--out " + dir.string() +
                                   " already holds files; choose a new folder or use --resume " + dir.string());
    }
  }
  fs::create_directories(dir / "checkpoints", ec);
  if (ec) return Status::Internal("cannot create run folder " + dir.string() + ": " + ec.message());
  RunDir run(dir);
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "recipe.yaml", resolved_recipe_yaml));
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "metrics.csv", kCsvHeader));
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "metrics.jsonl", ""));
  return run;
}

Result<RunDir> RunDir::Open(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("--resume " + dir.string() + ": no such run folder");
  if (!fs::exists(dir / "recipe.yaml", ec)) {
    return Status::InvalidArgument("--resume " + dir.string() + ": not a geomx run folder (no recipe.yaml)");
  }
  fs::create_directories(dir / "checkpoints", ec);
  if (!fs::exists(dir / "metrics.csv")) GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "metrics.csv", kCsvHeader));
  return RunDir(dir);
}

Result<RunDir> RunDir::OpenOrCreateForWorker(const fs::path& dir, const std::string& resolved_recipe_yaml) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) return Status::AlreadyExists("--out " + dir.string() + " is a file");
  if (fs::exists(dir / "summary.json", ec)) {
    return Status::AlreadyExists("--out " + dir.string() + " holds a finished run (summary.json); choose a new folder");
  }
  if (fs::exists(dir / "recipe.yaml", ec)) return Open(dir);
  fs::create_directories(dir / "checkpoints", ec);
  if (ec) return Status::Internal("cannot create run folder " + dir.string() + ": " + ec.message());
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "recipe.yaml", resolved_recipe_yaml));
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "metrics.csv", kCsvHeader));
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "metrics.jsonl", ""));
  return RunDir(dir);
}

Status RunDir::AppendMetrics(const MetricsRow& r) {
  JsonObject j;
  j.Add("time_s", r.time_s)
      .Add("iteration", r.iteration)
      .Add("epoch", r.epoch)
      .Add("loss", r.loss)
      .Add("train_accuracy", r.train_accuracy)
      .Add("test_loss", r.test_loss)
      .Add("test_accuracy", r.test_accuracy)
      .Add("test_examples", r.test_examples)
      .Add("samples_per_second", r.samples_per_second)
      .Add("lr", r.lr)
      .Add("lan_bytes", r.lan_bytes)
      .Add("wan_bytes", r.wan_bytes);
  GEOMX_RETURN_IF_ERROR(AppendText(path_ / "metrics.jsonl", j.str() + "\n"));
  char line[512];
  std::snprintf(line, sizeof(line), "%.3f,%lld,%d,%.6g,%.6g,%.6g,%.6g,%lld,%.6g,%.6g,%llu,%llu\n", r.time_s,
                static_cast<long long>(r.iteration), r.epoch, r.loss, r.train_accuracy, r.test_loss,
                r.test_accuracy, static_cast<long long>(r.test_examples), r.samples_per_second, r.lr,
                static_cast<unsigned long long>(r.lan_bytes), static_cast<unsigned long long>(r.wan_bytes));
  return AppendText(path_ / "metrics.csv", line);
}

fs::path RunDir::CheckpointPath(int64_t iteration) const {
  char name[64];
  std::snprintf(name, sizeof(name), "ckpt-%09lld.ckpt", static_cast<long long>(iteration));
  return checkpoint_dir() / name;
}

Status RunDir::CommitCheckpoint(const fs::path& written) {
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(checkpoint_dir() / "LAST", written.filename().string() + "\n"));
  std::vector<fs::path> all;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoint_dir(), ec)) {
    if (e.path().extension() == ".ckpt") all.push_back(e.path());
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i + kKeepCheckpoints < all.size(); ++i) {
    if (all[i] != written) fs::remove(all[i], ec);
  }
  return Status::Ok();
}

Result<fs::path> RunDir::LastCheckpoint(const fs::path& run_dir) {
  std::ifstream f(run_dir / "checkpoints" / "LAST");
  std::string name;
  if (!f || !(f >> name)) {
    return Status::NotFound(run_dir.string() + ": no checkpoint yet (checkpoints/LAST is missing)");
  }
  fs::path p = run_dir / "checkpoints" / name;
  if (!fs::exists(p)) return Status::NotFound(p.string() + ": named by checkpoints/LAST but missing");
  return p;
}

Status RunDir::WriteSummary(const std::string& json) { return WriteFileAtomically(path_ / "summary.json", json + "\n"); }

}  // namespace geomx::cli
