#include "cli/sync_rules.h"

namespace geomx::cli {

ResolvedLinks ResolveLinks(const AcceleratorsConfig& a) {
  ResolvedLinks r;
  const std::string& c = a.compression;
  if (c == "bsc") {
    r.local_to_global = r.global_to_local = "bsc";
  } else if (c == "fp16" || c == "mpq") {
    r.worker_to_local = r.local_to_global = r.global_to_local = r.local_to_worker = c;
  }
  auto over = [](const std::string& v, std::string* out) {
    if (v != "auto") *out = v;
  };
  over(a.worker_to_local, &r.worker_to_local);
  over(a.local_to_global, &r.local_to_global);
  over(a.global_to_local, &r.global_to_local);
  over(a.local_to_worker, &r.local_to_worker);
  return r;
}

std::vector<TopologyRuleViolation> CheckSyncRules(const Recipe& recipe,
                                                  const std::function<bool(const std::string&)>& has_error) {
  std::vector<TopologyRuleViolation> out;
  const SyncConfig& s = recipe.sync;
  const AcceleratorsConfig& a = recipe.accelerators;
  auto add = [&](std::vector<std::string> at, std::string path, std::string message) {
    for (const std::string& p : at) {
      if (has_error(p)) return;
    }
    out.push_back({std::move(at), std::move(path), std::move(message)});
  };
  const std::string& mode = s.mode;
  const bool averaging = mode == "hfa" || mode == "diloco" || mode == "esync";
  const ResolvedLinks links = ResolveLinks(a);

  if (!recipe.has_topology) {
    if (mode != "fsa") {
      add({"sync.mode"}, "sync.mode", "'" + mode + "' synchronises data centres: it needs a topology section");
    }
    if (links.any()) {
      add({"accelerators.compression", "accelerators.links", "accelerators"}, "accelerators",
          "compression acts on the links between workers and servers: it needs a topology section");
    }
    if (a.p3) add({"accelerators.p3.enabled"}, "accelerators.p3.enabled", "P3 needs a topology section");
    return out;
  }

  if (s.dcasgd_lambda > 0 && mode != "mixed") {
    add({"sync.dcasgd.lambda", "sync.mode"}, "sync.dcasgd.lambda",
        "DC-ASGD compensates the staleness of asynchronous updates: it needs sync.mode: mixed (got '" + mode + "')");
  }
  if (s.max_staleness > 0 && mode != "mixed") {
    add({"sync.max_staleness", "sync.mode"}, "sync.max_staleness",
        "bounds the staleness of asynchronous updates: it needs sync.mode: mixed (got '" + mode + "')");
  }
  const int num_dcs = static_cast<int>(recipe.topology.datacentres.size());
  if (mode == "mixed" && s.max_staleness > 0 && s.max_staleness < num_dcs - 1) {
    add({"sync.max_staleness", "topology.datacentres"}, "sync.max_staleness",
        std::to_string(s.max_staleness) + " cannot be kept with " + std::to_string(num_dcs) +
            " data centres: updates computed from the same weights are applied one after the other, so the last "
            "is " + std::to_string(num_dcs - 1) + " stale; use at least " + std::to_string(num_dcs - 1) +
            " (or 0: no bound)");
  }
  if (s.dcasgd_adaptive && s.dcasgd_lambda <= 0) {
    add({"sync.dcasgd.adaptive", "sync.dcasgd.lambda"}, "sync.dcasgd.adaptive",
        "adaptive DC-ASGD scales sync.dcasgd.lambda (its lambda0): set sync.dcasgd.lambda > 0 (e.g. 2)");
  }
  if (mode == "mixed" && recipe.optimizer_where == "worker") {
    add({"optimizer.where", "sync.mode"}, "optimizer.where",
        "sync.mode: mixed applies each data centre's update at the global server on arrival: it needs "
        "optimizer.where: global-server");
  }
  // The global server answers with weights (a server-side optimizer, MixedSync): they are dense, so a sparse
  // pull would save nothing; refuse instead of pretending.
  const bool weights_down = (mode == "fsa" && recipe.optimizer_where != "worker") || mode == "mixed";
  if (weights_down && (links.global_to_local == "bsc" || links.global_to_local == "mpq")) {
    add({"accelerators.links.global_to_local", "accelerators.compression"}, "accelerators.links.global_to_local",
        "'" + links.global_to_local + "' sends the sparse aggregate of gradients down, but with " +
            (mode == "mixed" ? std::string("sync.mode: mixed") : std::string("optimizer.where: global-server")) +
            " the global server returns dense weights; use optimizer.where: worker" +
            (mode == "mixed" ? std::string(" with sync.mode: fsa") : std::string()) +
            ", or set accelerators.links.global_to_local to none or fp16");
  }
  if (averaging && links.lan()) {
    add({"accelerators.links.worker_to_local", "accelerators.links.local_to_worker", "accelerators.compression"},
        "accelerators.compression",
        "sync.mode: " + mode + " averages whole models inside a data centre, which stays dense f32: compress only "
        "the WAN links (accelerators.links.local_to_global / global_to_local), e.g. compression: bsc");
  }
  if (a.p3 && mode != "fsa") {
    add({"accelerators.p3.enabled", "sync.mode"}, "accelerators.p3.enabled",
        "P3 schedules every iteration's gradient push: it needs sync.mode: fsa (got '" + mode + "')");
  }
  if (a.p3 && links.lan()) {
    add({"accelerators.p3.enabled", "accelerators.compression"}, "accelerators.p3.enabled",
        "P3 slices dense gradients between workers and local servers: compress only the WAN links with it");
  }
  const bool optimizer_momentum =
      (recipe.optimizer.name == "momentum" || recipe.optimizer.name == "nesterov") && recipe.optimizer.momentum > 0;
  const bool bsc_push = links.local_to_global == "bsc" || links.local_to_global == "mpq" ||
                        links.worker_to_local == "bsc";
  if (a.bsc_momentum > 0 && bsc_push && optimizer_momentum && (mode == "fsa" || mode == "mixed")) {
    add({"accelerators.bsc.momentum", "optimizer.momentum"}, "accelerators.bsc.momentum",
        "momentum correction in the compressor and optimizer '" + recipe.optimizer.name +
            "' would apply momentum twice; set one of accelerators.bsc.momentum and optimizer.momentum to 0");
  }
  return out;
}

}  // namespace geomx::cli
