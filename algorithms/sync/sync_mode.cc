#include "algorithms/sync/sync_mode.h"

#include <map>

namespace geomx::sync {
namespace {

std::map<std::string, SyncModeDef, std::less<>>& Modes() {
  static std::map<std::string, SyncModeDef, std::less<>> modes;
  return modes;
}

}  // namespace

const char* OptimizerPlacementName(OptimizerPlacement where) {
  return where == OptimizerPlacement::kWorker ? "worker" : "global-server";
}

Result<OptimizerPlacement> ParseOptimizerPlacement(std::string_view text) {
  if (text == "global-server") return OptimizerPlacement::kGlobalServer;
  if (text == "worker") return OptimizerPlacement::kWorker;
  return Status::InvalidArgument("optimizer.where: expected global-server or worker, got '" + std::string(text) + "'");
}

comm::SyncAggregatorOptions LocalAggregatorOptions(const LocalServerArgs& args) {
  comm::SyncAggregatorOptions opts;
  opts.expected_senders = args.workers;
  opts.tier = args.codec;
  opts.relayed_pushes = args.overlay != nullptr;  // TSEngine inside the data centre
  return opts;
}

Status SyncMode::RunStateServer(const StateServerArgs&) const {
  return Status::InvalidArgument("this sync mode has no state server");
}

bool SyncModeRegistry::Add(SyncModeDef def) {
  const std::string name = def.name;
  return Modes().emplace(name, std::move(def)).second;
}

const SyncModeDef* SyncModeRegistry::Find(std::string_view name) {
  auto it = Modes().find(name);
  return it == Modes().end() ? nullptr : &it->second;
}

std::vector<std::string> SyncModeRegistry::Names() {
  std::vector<std::string> out;
  for (const auto& [name, def] : Modes()) out.push_back(name);
  return out;
}

std::vector<const SyncModeDef*> SyncModeRegistry::All() {
  std::vector<const SyncModeDef*> out;
  for (const auto& [name, def] : Modes()) out.push_back(&def);
  return out;
}

Result<std::unique_ptr<SyncMode>> CreateSyncMode(const SyncSettings& settings) {
  const SyncModeDef* def = SyncModeRegistry::Find(settings.mode);
  if (def == nullptr) return Status::InvalidArgument("sync.mode: '" + settings.mode + "' is not built into this binary");
  return def->create(settings);
}

SyncModeTraits TraitsOf(std::string_view mode) {
  const SyncModeDef* def = SyncModeRegistry::Find(mode);
  return def != nullptr ? def->traits : SyncModeTraits{};
}

}  // namespace geomx::sync
