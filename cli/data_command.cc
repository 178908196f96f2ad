#include <cstdio>

#include "cli/commands.h"
#include "datasets/dataset.h"

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

}  // namespace geomx::cli
