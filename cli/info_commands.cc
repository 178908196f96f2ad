#include <cstdio>

#include "algorithms/catalogue.h"
#include "cli/commands.h"
#include "datasets/dataset.h"
#include "engine/backend_registry.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {

Status RunAlgosCommand(bool all) {
  int available = 0;
  for (const auto& a : algorithms::Catalogue()) available += a.available;
  std::printf("GeoMX's 25 algorithms; %d trainable in this build%s.\n\n", available,
              all ? "" : " (shown; --all lists the planned ones too)");
  std::string category;
  for (const auto& a : algorithms::Catalogue()) {
    if (!all && !a.available) continue;
    if (a.category != category) {
      category = a.category;
      std::printf("%s\n", category.c_str());
    }
    std::printf("  %2d %-19s %-40s %s\n", a.number, a.id.c_str(), a.title.c_str(),
                a.available ? a.recipe.c_str() : "planned");
    if (all) std::printf("     %-19s over the parameter server: %s\n", "", a.distribution.c_str());
  }
  std::printf("\nmodels: ");
  for (const auto& m : nn::ModelNames()) std::printf("%s ", m.c_str());
  std::printf("\noptimizers: ");
  for (const auto& o : nn::OptimizerNames()) std::printf("%s ", o.c_str());
  std::printf("\n");
  return Status::Ok();
}

Status RunVersionCommand() {
  std::printf("geomx %s\n", GEOMX_VERSION);
  std::printf("backends: cpu (oneDNN %s)%s\n", GEOMX_WITH_ONEDNN ? "on" : "off",
              GEOMX_WITH_CUDA ? ", cuda" : "");
  std::printf("devices visible: ");
  for (const Device& d : AvailableDevices()) std::printf("%s ", d.ToString().c_str());
  std::printf("\ndatasets: ");
  for (const auto& d : data::DatasetNames()) std::printf("%s ", d.c_str());
  std::printf("\n");
  return Status::Ok();
}

}  // namespace geomx::cli
