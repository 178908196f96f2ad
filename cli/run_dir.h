// RunDir: the folder one `geomx train` writes (docs/cli.md#run-folder):
//   recipe.yaml        the resolved recipe (every key)
//   metrics.jsonl      one JSON object per evaluation
//   metrics.csv        the same rows as CSV
//   checkpoints/       ckpt-<iteration>.ckpt (the newest 3 are kept) and LAST (name of the newest)
//   summary.json       written at the end (also on failure / Ctrl-C), atomically (tmp + rename)
//   overlays.jsonl     TSEngine's overlay of each round, appended by the global servers (cli/roles.cc)
// Created only after the recipe, data and model have been validated, so bad input never leaves a folder behind.
// Not thread-safe (the trainer thread owns it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/train/trainer_events.h"
#include "engine/base/file_write.h"
#include "engine/base/status.h"

namespace geomx::cli {

using train::MetricsRow;

class RunDir {
 public:
  // Creates `dir` (must not exist, or exist empty) and writes recipe.yaml. kAlreadyExists when it has files.
  static Result<RunDir> Create(const std::filesystem::path& dir, const std::string& resolved_recipe_yaml);
  // Opens an existing run folder for --resume (appends to metrics files).
  static Result<RunDir> Open(const std::filesystem::path& dir);
  // The run folder of a topology's evaluating worker: the one the one-host launcher prepared (it holds
  // recipe.yaml) is opened; a folder without recipe.yaml (a worker started by hand on its own host, where other
  // processes may already have put their traffic/ files) gets recipe.yaml and the metrics files written now.
  // kAlreadyExists when the folder holds a finished run (summary.json) or is a file.
  static Result<RunDir> OpenOrCreateForWorker(const std::filesystem::path& dir,
                                              const std::string& resolved_recipe_yaml);
  // runs/<name>-<YYYYmmdd-HHMMSS>[-N] under `parent`, unique.
  static std::filesystem::path DefaultPath(const std::filesystem::path& parent, const std::string& name);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path checkpoint_dir() const { return path_ / "checkpoints"; }

  Status AppendMetrics(const MetricsRow& row);
  // Path for a new checkpoint at `iteration`; after writing it call CommitCheckpoint to update LAST and prune.
  std::filesystem::path CheckpointPath(int64_t iteration) const;
  Status CommitCheckpoint(const std::filesystem::path& written);
  // The newest checkpoint of a run folder (reads LAST); kNotFound when there is none.
  static Result<std::filesystem::path> LastCheckpoint(const std::filesystem::path& run_dir);
  // Writes summary.json atomically.
  Status WriteSummary(const std::string& json);

 private:
  explicit RunDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
};

// Writes a file via "<path>.tmp" + fsync + rename (engine/base/file_write.h); write failures exit 1.
using ::geomx::WriteFileAtomically;

}  // namespace geomx::cli
