#include "cli/sync_rules.h"

#include <cstdio>

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

// accelerators.dgt: on the dense pushes of the local servers' forwarded sums.
void DgtRules(const Recipe& recipe, const comm::LinkSchemes& links, std::vector<sync::RuleViolation>* out) {
  const AcceleratorsConfig& a = recipe.accelerators;
  if (!sync::TraitsOf(recipe.sync.mode).forwards_sums || recipe.has_algorithm) {
    out->push_back({{"accelerators.dgt.enabled", "sync.mode", "algorithm"}, "accelerators.dgt.enabled",
                    "DGT carries the gradient sums local servers forward each round: it needs sync.mode fsa or "
                    "mixed with a neural model; the recipe has " +
                        (recipe.has_algorithm ? std::string("an algorithm") : "sync.mode: " + recipe.sync.mode)});
  }
  // The global tier's requests and answers share one codec (comm::TierCodec): DGT's dense blocks need it dense both
  // ways (a compressed answer made every local server leave the job at its first push).
  for (const auto& [key, scheme] : {std::pair{"local_to_global", links.local_to_global},
                                    std::pair{"global_to_local", links.global_to_local}}) {
    if (scheme == comm::LinkScheme::kNone) continue;
    out->push_back({{"accelerators.dgt.enabled", "accelerators.links." + std::string(key), "accelerators.compression"},
                    "accelerators.dgt.enabled",
                    "DGT sends dense f32 blocks from the local servers and the global tier answers them in the same "
                    "codec: set accelerators.links." + std::string(key) + " to none (it is " +
                        std::string(comm::LinkSchemeOf(scheme)->name) + ")"});
  }
  if (a.dgt_block_bytes % 4 != 0) {
    out->push_back({{"accelerators.dgt.block_bytes"}, "accelerators.dgt.block_bytes",
                    "a block holds whole floats: a multiple of 4 bytes, got " + std::to_string(a.dgt_block_bytes)});
  }
  if (a.dgt_k_min > a.dgt_k) {
    out->push_back({{"accelerators.dgt.k_min", "accelerators.dgt.k"}, "accelerators.dgt.k_min",
                    "k_min is the floor of k: at most accelerators.dgt.k (" + std::to_string(a.dgt_k) + ")"});
  }
}

// accelerators.tsengine: the senders of a tier relay the sums and the value of a mode whose rounds allow it.
void TsEngineRules(const Recipe& recipe, const comm::LinkSchemes& links, std::vector<sync::RuleViolation>* out) {
  const AcceleratorsConfig& a = recipe.accelerators;
  const bool global = a.tsengine_tier != "datacentre", datacentre = a.tsengine_tier != "global";
  if (!sync::TraitsOf(recipe.sync.mode).overlay || recipe.has_algorithm) {
    out->push_back({{"accelerators.tsengine.enabled", "sync.mode", "algorithm"}, "accelerators.tsengine.enabled",
                    "TSEngine relays the sums and the new model of synchronous rounds: it needs sync.mode fsa with "
                    "a neural model; the recipe has " +
                        (recipe.has_algorithm ? std::string("an algorithm") : "sync.mode: " + recipe.sync.mode)});
  }
  if (global && links.wan()) {
    out->push_back({{"accelerators.tsengine.enabled", "accelerators.links.local_to_global",
                     "accelerators.links.global_to_local", "accelerators.compression"},
                    "accelerators.tsengine.enabled",
                    "TSEngine's relays between data centres add dense f32 sums: set accelerators.links."
                    "local_to_global and global_to_local to none (or accelerators.tsengine.tier: datacentre)"});
  }
  if (datacentre && links.lan()) {
    out->push_back({{"accelerators.tsengine.tier", "accelerators.links.worker_to_local",
                     "accelerators.links.local_to_worker", "accelerators.compression"},
                    "accelerators.tsengine.tier",
                    "TSEngine's relays inside a data centre add dense f32 sums: set accelerators.links."
                    "worker_to_local and local_to_worker to none (or accelerators.tsengine.tier: global)"});
  }
  if (datacentre && a.p3) {
    out->push_back({{"accelerators.tsengine.tier", "accelerators.p3.enabled"}, "accelerators.tsengine.tier",
                    "TSEngine inside a data centre and P3 both decide how the workers' slices leave: enable one "
                    "of them (or accelerators.tsengine.tier: global)"});
  }
  if (global && a.dgt) {
    out->push_back({{"accelerators.tsengine.enabled", "accelerators.dgt.enabled"}, "accelerators.tsengine.enabled",
                    "TSEngine between data centres and DGT both carry the local servers' sums: enable one of them "
                    "(or accelerators.tsengine.tier: datacentre)"});
  }
  for (const auto& dc : recipe.topology.datacentres) {
    if (!global || dc.servers == 1) continue;
    out->push_back({{"accelerators.tsengine.enabled", "topology.datacentres"}, "accelerators.tsengine.enabled",
                    "TSEngine between data centres relays one sum per data centre: data centre " + dc.name +
                        " has " + std::to_string(dc.servers) + " servers; give each data centre 1"});
    break;
  }
  if (recipe.topology.failure_policy != "stop") {
    out->push_back({{"accelerators.tsengine.enabled", "topology.failure_policy"}, "accelerators.tsengine.enabled",
                    "TSEngine's overlay spans every sender of its tier in every round: topology.failure_policy "
                    "must be stop (it is " + recipe.topology.failure_policy + ")"});
  }
}

// The rules every mode shares, phrased with its traits.
void CommonRules(const Recipe& recipe, const comm::LinkSchemes& links, std::vector<sync::RuleViolation>* out) {
  const sync::SyncSettings& s = recipe.sync;
  const AcceleratorsConfig& a = recipe.accelerators;
  const sync::SyncModeTraits traits = sync::TraitsOf(s.mode);
  if (!recipe.has_topology) {
    if (traits.needs_topology) {
      out->push_back(
          {{"sync.mode"}, "sync.mode", "'" + s.mode + "' synchronises data centres: it needs a topology section"});
    }
    if (links.any()) {
      out->push_back({{"accelerators.compression", "accelerators.links", "accelerators"}, "accelerators",
                      "compression acts on the links between workers and servers: it needs a topology section"});
    }
    if (a.p3) out->push_back({{"accelerators.p3.enabled"}, "accelerators.p3.enabled", "P3 needs a topology section"});
    if (a.dgt) {
      out->push_back({{"accelerators.dgt.enabled"}, "accelerators.dgt.enabled", "DGT needs a topology section"});
    }
    if (a.tsengine) {
      out->push_back({{"accelerators.tsengine.enabled"}, "accelerators.tsengine.enabled",
                      "TSEngine relays between the senders of a tier: it needs a topology section"});
    }
    return;
  }
  if (recipe.topology.failure_policy == "continue" && (!traits.survives_lost_workers || recipe.has_algorithm)) {
    out->push_back({{"topology.failure_policy", "sync.mode", "algorithm"}, "topology.failure_policy",
                    std::string("continue lets a data centre's server average over the workers that are left, which "
                                "sync.mode fsa does for neural training; ") +
                        (recipe.has_algorithm ? "a classical algorithm's fit needs every worker's shard"
                                              : "sync.mode: " + s.mode + " cannot") +
                        ": use stop, or sync.mode: fsa"});
  }
  // Features that need the whole job's state on the global servers (fsa with the optimizer there, a neural model).
  auto needs_server_state = [&](bool mode_can, const std::string& key, const std::string& why,
                                const std::string& fix) {
    if (mode_can && !recipe.has_algorithm && recipe.optimizer_where == "global-server") return;
    out->push_back({{key, "sync.mode", "optimizer.where", "algorithm"}, key,
                    why + " that needs sync.mode fsa with optimizer.where: global-server" +
                        (recipe.has_algorithm ? "; a classical algorithm is fitted in one go"
                                              : "; the recipe has sync.mode: " + s.mode + ", optimizer.where: " +
                                                    recipe.optimizer_where) +
                        ": use " + fix + ", or those settings"});
  };
  if (recipe.topology.failure_policy == "wait") {
    needs_server_state(traits.survives_lost_workers, "topology.failure_policy",
                       "wait takes a restarted worker back at the round it missed, from the servers' weights:",
                       "stop or continue");
  }
  if (recipe.topology.worker_restarts > 0 && recipe.topology.failure_policy == "stop") {
    out->push_back({{"topology.worker_restarts", "topology.failure_policy"}, "topology.worker_restarts",
                    "a restarted worker rejoins a job that went on (continue) or waited (wait) for it: set "
                    "topology.failure_policy to continue or wait, or use topology.max_restarts to restart the "
                    "whole job"});
  }
  if (recipe.topology.snapshot_every > 0) {
    needs_server_state(traits.snapshots, "topology.snapshot_every",
                       "snapshots hold the global servers' model and optimizer state, the whole job's state:", "0");
  }
  if (recipe.topology.max_restarts > 0 && recipe.topology.snapshot_every == 0) {
    out->push_back({{"topology.max_restarts", "topology.snapshot_every"}, "topology.max_restarts",
                    "a restarted job continues from the servers' snapshots: set topology.snapshot_every too"});
  }
  if (s.initial_weights == "seed" && (!traits.averages_models || recipe.has_algorithm)) {
    out->push_back({{"sync.initial_weights", "sync.mode", "algorithm"}, "sync.initial_weights",
                    "seed lets the local servers of a model-averaging mode (hfa, diloco, esync) start from weights "
                    "they build themselves; " +
                        (recipe.has_algorithm ? std::string("a classical algorithm has none")
                                              : "with sync.mode: " + s.mode + " the workers pull the weights") +
                        ": use transfer"});
  }
  if (s.overlap > 0 && !traits.overlaps_wan_sync) {
    out->push_back({{"sync.overlap", "sync.mode"}, "sync.overlap",
                    "sync.mode: " + s.mode + " has no global synchronisations for the workers to train through "
                    "(hfa and diloco do): set sync.overlap to 0"});
  }
  if (traits.averages_models && links.lan()) {
    out->push_back(
        {{"accelerators.links.worker_to_local", "accelerators.links.local_to_worker", "accelerators.compression"},
         "accelerators.compression",
         "sync.mode: " + s.mode + " averages whole models inside a data centre, which stays dense f32: compress only "
         "the WAN links (accelerators.links.local_to_global / global_to_local), e.g. compression: bsc"});
  }
  if (a.dgt) DgtRules(recipe, links, out);
  if (a.tsengine) TsEngineRules(recipe, links, out);
  if (a.p3 && links.lan()) {
    out->push_back({{"accelerators.p3.enabled", "accelerators.compression"}, "accelerators.p3.enabled",
                    "P3 slices dense gradients between workers and local servers: compress only the WAN links "
                    "with it"});
  }
  const bool optimizer_momentum =
      (recipe.optimizer.name == "momentum" || recipe.optimizer.name == "nesterov") && recipe.optimizer.momentum > 0;
  const bool sparse_wan_push = comm::SparsifiesLargeSlices(links.local_to_global, /*wan=*/true);
  const bool bsc_push = sparse_wan_push || links.worker_to_local == comm::LinkScheme::kBsc;
  // accelerators.bsc.momentum is DGC's momentum correction: the encoder of a bsc push accumulates a velocity of
  // what it is pushed (answers never use it). Gradient modes: only instead of the optimizer's momentum.
  // Model-averaging modes push model deltas, which already carry every local step: a velocity over them counts
  // each about 1 / (1 - m) times.
  if (a.bsc_momentum > 0 && bsc_push) {
    if (traits.steps_on_gradients && optimizer_momentum) {
      out->push_back({{"accelerators.bsc.momentum", "optimizer.momentum"}, "accelerators.bsc.momentum",
                      "momentum correction in the compressor and optimizer '" + recipe.optimizer.name +
                          "' would apply momentum twice; set one of accelerators.bsc.momentum and optimizer.momentum "
                          "to 0"});
    } else if (!traits.steps_on_gradients) {
      char times[32];
      std::snprintf(times, sizeof(times), "%.3g", 1.0 / (1.0 - static_cast<double>(a.bsc_momentum)));
      out->push_back({{"accelerators.bsc.momentum"}, "accelerators.bsc.momentum",
                      "momentum correction accumulates gradients (DGC), but sync.mode: " + s.mode +
                          " sends model deltas over the WAN, which already hold the workers' optimizer steps: a "
                          "velocity over them would count each delta about 1 / (1 - momentum) = " + times +
                          " times; set accelerators.bsc.momentum to 0 (the workers' optimizer keeps its momentum)"});
    }
  }
  // sign and int8 (LinkSchemeDef::feedback_answers) keep an error-feedback residual on every link they encode, so
  // what they carry must be increments the receiver adds up: not weights, nor diloco's delta before its momentum.
  auto feedback = [](comm::LinkScheme k) {
    const comm::LinkSchemeDef* d = comm::LinkSchemeOf(k);
    return d != nullptr && d->feedback_answers;
  };
  if (traits.outer_momentum && feedback(links.local_to_global)) {
    out->push_back({{"accelerators.links.local_to_global", "accelerators.compression"},
                    "accelerators.links.local_to_global",
                    "sync.mode: " + s.mode + " steps its outer momentum on the data centres' mean delta; '" +
                        comm::LinkSchemeName(links.local_to_global) + "' sends it with error feedback, whose held-back "
                        "residual the momentum would amplify. Send the deltas as none or fp16 and compress the answer "
                        "(accelerators.links: {local_to_global: fp16, global_to_local: " +
                        comm::LinkSchemeName(links.local_to_global) + "}), or sparsify them with bsc, which moves the "
                        "momentum into the push's error feedback (SparseLoCo)"});
  }
  if (traits.steps_on_gradients && recipe.optimizer_where == "global-server") {
    const std::pair<const char*, comm::LinkScheme> down[] = {{"global_to_local", links.global_to_local},
                                                             {"local_to_worker", links.local_to_worker}};
    for (const auto& [link, scheme] : down) {
      if (!feedback(scheme)) continue;
      const std::string path = std::string("accelerators.links.") + link;
      out->push_back({{path, "accelerators.compression"}, path,
                      std::string("'") + comm::LinkSchemeName(scheme) + "' keeps an error-feedback residual of "
                      "what it sends, which suits increments, but with optimizer.where: global-server the answers are "
                      "weights; use optimizer.where: worker, or set " + path + " to none or fp16"});
    }
  }
}

// What the modes' rules and defaults see of a recipe with a topology.
sync::SyncRuleInput RuleInputOf(const Recipe& recipe, const comm::LinkSchemes& links) {
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
  return in;
}

}  // namespace

void ApplySyncDefaults(Recipe* recipe, const std::function<bool(const std::string&)>& given) {
  if (!recipe->has_topology) return;
  const sync::SyncModeDef* def = sync::SyncModeRegistry::Find(recipe->sync.mode);
  if (def == nullptr || !def->defaults) return;
  sync::SyncSettings settings = recipe->sync;
  def->defaults(RuleInputOf(*recipe, ResolveLinks(recipe->accelerators)), given, &settings);
  recipe->sync = settings;
}

std::vector<TopologyRuleViolation> CheckSyncRules(const Recipe& recipe,
                                                  const std::function<bool(const std::string&)>& has_error) {
  const comm::LinkSchemes links = ResolveLinks(recipe.accelerators);
  std::vector<sync::RuleViolation> found;
  if (recipe.has_topology) {
    const sync::SyncRuleInput in = RuleInputOf(recipe, links);
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
