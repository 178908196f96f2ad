#include <cstdio>

#include "algorithms/catalogue.h"
#include "algorithms/estimators/estimator.h"
#include "engine/base/closest_name.h"
#include "cli/commands.h"
#include "datasets/dataset.h"
#include "engine/backend_registry.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {

namespace {

// `geomx algos NAME`: one estimator, its task, distributed form and parameters.
Status PrintEstimator(const std::string& name) {
  const algorithms::EstimatorDef* def = algorithms::EstimatorRegistry::Find(name);
  if (def == nullptr) {
    std::vector<std::string> names = algorithms::EstimatorRegistry::Names();
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    const std::string hint = ClosestName(name, names);
    return Status::NotFound("unknown algorithm '" + name + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                            "; trainable: " + known);
  }
  std::printf("%s: %s (%s)\n%s\nacross data centres: %s\n\nparameters (recipe keys under `algorithm:`):\n",
              def->name.c_str(), def->title.c_str(), data::TableTaskName(def->task), def->help.c_str(),
              def->distributed.c_str());
  for (const algorithms::ParamSpec& p : def->params) {
    std::printf("  %-16s default %-10s %s\n  %-16s %s\n", p.name.c_str(), p.default_value.c_str(),
                algorithms::ParamAllowedText(p).c_str(), "", p.help.c_str());
  }
  std::printf("\nrecipe:\n  algorithm:\n    name: %s\n", def->name.c_str());
  return Status::Ok();
}

}  // namespace

Status RunAlgosCommand(bool all, const std::string& name) {
  if (!name.empty()) return PrintEstimator(name);
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
  std::printf("\ntrainable estimators (geomx algos NAME for parameters): ");
  for (const auto& n : algorithms::EstimatorRegistry::Names()) std::printf("%s ", n.c_str());
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
