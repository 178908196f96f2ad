#include "cli/sync_rules.h"

#include "algorithms/sync/sync_mode.h"

namespace geomx::cli {

comm::LinkSchemes ResolveLinks(const AcceleratorsConfig& a) {
  comm::LinkOverrides o;
  o.worker_to_local = a.worker_to_local;
  o.local_to_global = a.local_to_global;
  o.global_to_local = a.global_to_local;
  o.local_to_worker = a.local_to_worker;
  Result<comm::LinkSchemes> s = comm::ResolveLinkSchemes(a.compression, o);
  return s.ok() ? *s : comm::LinkSchemes{};
}

namespace {

// The rules every mode shares, phrased with its traits.
void CommonRules(const Recipe& recipe, const comm::LinkSchemes& links, std::vector<sync::RuleViolation>* out) {
  const sync::SyncSettings& s = recipe.sync;
  const AcceleratorsConfig& a = recipe.accelerators;
  const sync::SyncModeTraits traits = sync::TraitsOf(s.mode);
  if (!recipe.has_topology) {
    if (traits.needs_topology) {
      out->push_back({{"sync.mode"}, "sync.mode", "'" + s.mode + "' synchronises data centres: it needs a topology section"});
    }
    if (links.any()) {
      out->push_back({{"accelerators.compression", "accelerators.links", "accelerators"}, "accelerators",
                      "compression acts on the links between workers and servers: it needs a topology section"});
    }
    if (a.p3) out->push_back({{"accelerators.p3.enabled"}, "accelerators.p3.enabled", "P3 needs a topology section"});
    return;
  }
  if (traits.averages_models && links.lan()) {
    out->push_back(
        {{"accelerators.links.worker_to_local", "accelerators.links.local_to_worker", "accelerators.compression"},
         "accelerators.compression",
         "sync.mode: " + s.mode + " averages whole models inside a data centre, which stays dense f32: compress only "
         "the WAN links (accelerators.links.local_to_global / global_to_local), e.g. compression: bsc"});
  }
  if (a.p3 && links.lan()) {
    out->push_back({{"accelerators.p3.enabled", "accelerators.compression"}, "accelerators.p3.enabled",
                    "P3 slices dense gradients between workers and local servers: compress only the WAN links with it"});
  }
  const bool optimizer_momentum =
      (recipe.optimizer.name == "momentum" || recipe.optimizer.name == "nesterov") && recipe.optimizer.momentum > 0;
  const bool bsc_push = links.local_to_global == comm::LinkScheme::kBsc ||
                        links.local_to_global == comm::LinkScheme::kMpq ||
                        links.worker_to_local == comm::LinkScheme::kBsc;
  if (a.bsc_momentum > 0 && bsc_push && optimizer_momentum && traits.steps_on_gradients) {
    out->push_back({{"accelerators.bsc.momentum", "optimizer.momentum"}, "accelerators.bsc.momentum",
                    "momentum correction in the compressor and optimizer '" + recipe.optimizer.name +
                        "' would apply momentum twice; set one of accelerators.bsc.momentum and optimizer.momentum "
                        "to 0"});
  }
}

}  // namespace

std::vector<TopologyRuleViolation> CheckSyncRules(const Recipe& recipe,
                                                  const std::function<bool(const std::string&)>& has_error) {
  const comm::LinkSchemes links = ResolveLinks(recipe.accelerators);
  std::vector<sync::RuleViolation> found;
  if (recipe.has_topology) {
    sync::SyncRuleInput in;
    in.sync = &recipe.sync;
    in.has_topology = true;
    in.num_datacentres = static_cast<int>(recipe.topology.datacentres.size());
    Result<sync::OptimizerPlacement> where = sync::ParseOptimizerPlacement(recipe.optimizer_where);
    in.optimizer_where = where.ok() ? *where : sync::OptimizerPlacement::kGlobalServer;
    in.links = links;
    in.optimizer_name = recipe.optimizer.name;
    in.optimizer_momentum = recipe.optimizer.momentum;
    in.bsc_momentum = recipe.accelerators.bsc_momentum;
    in.p3 = recipe.accelerators.p3;
    for (const sync::SyncModeDef* def : sync::SyncModeRegistry::All()) {
      if (def->rules) def->rules(in, &found);
    }
  }
  CommonRules(recipe, links, &found);
  std::vector<TopologyRuleViolation> out;
  for (sync::RuleViolation& v : found) {
    bool skip = false;
    for (const std::string& p : v.at) skip = skip || has_error(p);
    if (!skip) out.push_back({std::move(v.at), std::move(v.path), std::move(v.message)});
  }
  return out;
}

}  // namespace geomx::cli
