#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "datasets/dataset.h"
#include "datasets/fetch.h"

namespace geomx::cli {

Status RunDataListCommand() {
  std::printf("%-14s %s\n", "name", "where `path: auto` looks / what to set");
  for (const std::string& name : data::DatasetNames()) {
    data::DataConfig c;
    c.name = name;
    std::string where;
    if (name == "fashion-mnist" || name == "mnist" || name == "cifar10") {
      auto r = data::OpenDataset(c);
      if (r.ok()) {
        where = "found: " + r->train->info().source + " (" + std::to_string(r->train->size()) + " train, " +
                std::to_string(r->test->size()) + " test)";
      } else {
        where = "not found: " + r.status().message();
      }
    } else if (name == "synthetic") {
      where = "generated in memory from the seed (no files)";
    } else {
      where = "set data.path to a file or folder";
    }
    std::printf("%-14s %s\n", name.c_str(), where.c_str());
  }
  return Status::Ok();
}

Status RunDataInspectCommand(const std::string& path) {
  GEOMX_ASSIGN_OR_RETURN(std::string text, data::InspectDataFile(path));
  std::printf("%s", text.c_str());
  if (!text.empty() && text.back() != '\n') std::printf("\n");
  return Status::Ok();
}

namespace {

std::string Absolute(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::absolute(dir, ec).lexically_normal().string();
}

// Where `path: auto` will find `name` now that `dir` holds it, for the closing line of a fetch.
std::string AutoPathNote(const std::string& name, const std::string& dir) {
  for (const std::string& candidate : data::DatasetSearchPaths(name)) {
    std::error_code ec;
    if (Absolute(candidate) == Absolute(dir)) return "`path: auto` finds it there";
    if (std::filesystem::is_directory(candidate, ec)) {
      return "note: `path: auto` looks in " + candidate + " first; set data.path: " + dir + " to use this copy";
    }
  }
  return "`path: auto` does not look there: set data.path: " + dir + " in recipes";
}

}  // namespace

Status RunDataFetchCommand(const DataFetchFlags& flags) {
  GEOMX_ASSIGN_OR_RETURN(const data::FetchSource* source, data::FindFetchSource(flags.name));
  // A percentage on stderr while a file downloads, when someone is watching; the log lines end it.
  auto progress_open = std::make_shared<bool>(false);
  data::FetchOptions options;
  options.dir = flags.dir;
  options.mirror = flags.mirror;
  options.force = flags.force;
  options.log = [progress_open](const std::string& line) {
    if (*progress_open) std::fprintf(stderr, "\n");
    *progress_open = false;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  if (isatty(fileno(stderr))) {
    auto last_percent = std::make_shared<int64_t>(-1);
    options.http.progress = [progress_open, last_percent](int64_t done, int64_t total) {
      const int64_t percent = total > 0 ? done * 100 / total : 0;
      if (percent == *last_percent) return;
      *last_percent = percent;
      std::fprintf(stderr, "\r  %3lld%% of %.1f MB", static_cast<long long>(percent), static_cast<double>(total) / 1e6);
      *progress_open = true;
    };
  }
  GEOMX_ASSIGN_OR_RETURN(const data::FetchReport report, data::FetchDataset(*source, options));
  if (*progress_open) std::fprintf(stderr, "\n");
  std::printf("%s: %zu file(s) in %s (%zu downloaded, %zu already present%s); %s\n", source->name.c_str(),
              source->files.size(), report.dir.c_str(), report.downloaded.size(), report.present.size(),
              report.unpacked ? ", unpacked" : "", AutoPathNote(source->name, report.dir).c_str());
  return Status::Ok();
}

}  // namespace geomx::cli
