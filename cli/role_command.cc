#include "cli/role_command.h"

#include <cstdio>

#include "algorithms/sync/sync_mode.h"
#include "cli/recipe_schema.h"

namespace geomx::cli {
namespace {

struct RoleEntry {
  const char* name;
  RoleSpec::Kind kind;
  bool central;  // runs in the central party
};

constexpr RoleEntry kRoles[] = {
    {"global-scheduler", RoleSpec::Kind::kGlobalScheduler, true},
    {"global-server", RoleSpec::Kind::kGlobalServer, true},
    {"scheduler", RoleSpec::Kind::kScheduler, false},
    {"server", RoleSpec::Kind::kServer, false},
    {"worker", RoleSpec::Kind::kWorker, false},
    {"master-worker", RoleSpec::Kind::kMasterWorker, true},
    {"state-server", RoleSpec::Kind::kStateServer, true},  // sync.mode esync
};

const RoleEntry* FindRole(const std::string& name) {
  for (const RoleEntry& r : kRoles) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string Plural(int n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string HostPort(const std::string& host, int port) {
  return host + ":" + (port == 0 ? std::string("<picked at start>") : std::to_string(port));
}

}  // namespace

const std::vector<std::string>& ServeRoleNames() {
  static const std::vector<std::string> kNames = {"global-scheduler", "global-server", "scheduler", "server",
                                                  "master-worker", "state-server"};
  return kNames;
}

std::string RoleName(RoleSpec::Kind kind) {
  for (const RoleEntry& r : kRoles) {
    if (r.kind == kind) return r.name;
  }
  return "?";
}

std::string ProcessName(const RoleSpec& spec) {
  const bool ranked = spec.kind == RoleSpec::Kind::kGlobalServer || spec.kind == RoleSpec::Kind::kServer ||
                      spec.kind == RoleSpec::Kind::kWorker;
  return spec.party + "/" + RoleName(spec.kind) + (ranked ? std::to_string(spec.rank) : "");
}

Result<RoleSpec> ResolveRoleSpec(const Recipe& recipe, const RoleFlags& flags) {
  const bool is_worker = flags.role == "worker";
  if (!recipe.has_topology) {
    return Status::InvalidArgument(std::string(is_worker ? "train --party" : "serve") +
                                   " needs a recipe with a topology section (docs/deployment.md); " + recipe.source +
                                   " has none: train it on one process with `geomx train " + recipe.source + "`");
  }
  const bool state_server = sync::TraitsOf(recipe.sync.mode).state_server;
  if (flags.role == "state-server" && !state_server) {
    std::vector<std::string> modes;  // the registered modes that have a state server
    for (const sync::SyncModeDef* def : sync::SyncModeRegistry::All()) {
      if (def->traits.state_server) modes.push_back(def->name);
    }
    return Status::InvalidArgument("--role state-server: the state server coordinates sync.mode " + Join(modes) +
                                   "; the recipe's sync.mode is '" + recipe.sync.mode + "'");
  }
  if ((flags.role == "state-server" || (is_worker && state_server)) && recipe.topology.state_server_port == 0) {
    return Status::InvalidArgument("topology.central.state_server_port: sync.mode " + recipe.sync.mode +
                                   " needs the state server's port to start its processes one by one (`geomx "
                                   "train` picks one itself)");
  }
  const RoleEntry* role = FindRole(flags.role);
  if (role == nullptr) {
    std::string hint = ClosestName(flags.role, ServeRoleNames());
    return Status::InvalidArgument("--role: unknown role '" + flags.role + "'" +
                                   (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                                   "; roles: " + Join(ServeRoleNames()));
  }
  const comm::Topology& t = recipe.topology;
  if (!flags.resume.empty() && !flags.out.empty() && flags.resume != flags.out) {
    return Status::InvalidArgument("--resume " + flags.resume + " and --out " + flags.out +
                                   ": a resumed run continues in its own folder; give only --resume");
  }
  RoleSpec spec{.kind = role->kind,
                .party = "central",
                .rank = flags.rank,
                .out_dir = flags.resume.empty() ? flags.out : flags.resume,
                .resume = !flags.resume.empty()};
  if (flags.rank < 0) return Status::InvalidArgument("--rank must be >= 0, got " + std::to_string(flags.rank));

  if (role->central) {
    if (!flags.party.empty() && flags.party != "central") {
      return Status::InvalidArgument("--party: the " + std::string(role->name) +
                                     " runs in the central party; omit --party (or give --party central), got '" +
                                     flags.party + "'");
    }
    if (role->kind == RoleSpec::Kind::kGlobalServer) {
      if (flags.rank >= t.global_servers) {
        return Status::InvalidArgument("--rank " + std::to_string(flags.rank) + ": the topology has " +
                                       Plural(t.global_servers, "global server") + " (ranks 0.." +
                                       std::to_string(t.global_servers - 1) + ")");
      }
    } else if (flags.rank != 0) {
      return Status::InvalidArgument("--rank " + std::to_string(flags.rank) + ": there is one " + role->name +
                                     "; its rank is 0");
    }
    return spec;
  }

  std::vector<std::string> names;
  for (const comm::DataCentre& d : t.datacentres) names.push_back(d.name);
  if (flags.party.empty() || flags.party == "central") {
    return Status::InvalidArgument("--party: the " + std::string(role->name) +
                                   " belongs to a data centre; name it with --party (" + Join(names) + ")");
  }
  const comm::DataCentre* dc = nullptr;
  for (const comm::DataCentre& d : t.datacentres) {
    if (d.name == flags.party) dc = &d;
  }
  if (dc == nullptr) {
    std::string hint = ClosestName(flags.party, names);
    return Status::InvalidArgument("--party: unknown data centre '" + flags.party + "'" +
                                   (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                                   "; the recipe has: " + Join(names));
  }
  spec.party = dc->name;
  const int count = role->kind == RoleSpec::Kind::kServer   ? dc->servers
                    : role->kind == RoleSpec::Kind::kWorker ? dc->workers
                                                            : 1;
  if (flags.rank >= count) {
    if (count == 1) {
      return Status::InvalidArgument("--rank " + std::to_string(flags.rank) + ": " + dc->name + " has one " +
                                     role->name + "; its rank is 0");
    }
    return Status::InvalidArgument("--rank " + std::to_string(flags.rank) + ": " + dc->name + " has " +
                                   Plural(count, role->name) + " (ranks 0.." + std::to_string(count - 1) + ")");
  }
  return spec;
}

std::string DescribeRole(const Recipe& recipe, const RoleSpec& spec) {
  const comm::Topology& t = recipe.topology;
  const std::string global = "global scheduler " + HostPort(t.central_host, t.global_scheduler_port);
  switch (spec.kind) {
    case RoleSpec::Kind::kGlobalScheduler:
      return "global scheduler of " + Plural(t.global_servers, "global server") + " and " +
             Plural(static_cast<int>(t.datacentres.size()), "data centre") + "; listens on " +
             HostPort(t.central_host, t.global_scheduler_port);
    case RoleSpec::Kind::kGlobalServer:
      return "global server " + std::to_string(spec.rank) + " of " + std::to_string(t.global_servers) + "; " + global;
    case RoleSpec::Kind::kMasterWorker:
      return "master worker (initialises the model on the global servers); " + global;
    case RoleSpec::Kind::kStateServer:
      return "ESync state server of " + Plural(t.total_workers(), "worker") + "; listens on " +
             HostPort(t.central_host, t.state_server_port);
    default:
      break;
  }
  const comm::DataCentre* dc = nullptr;
  for (const comm::DataCentre& d : t.datacentres) {
    if (d.name == spec.party) dc = &d;
  }
  if (dc == nullptr) return RoleName(spec.kind) + " of unknown data centre " + spec.party;
  const std::string local = "scheduler " + HostPort(dc->host, dc->scheduler_port);
  switch (spec.kind) {
    case RoleSpec::Kind::kScheduler:
      return "scheduler of " + dc->name + " (" + Plural(dc->servers, "server") + ", " + Plural(dc->workers, "worker") +
             "); listens on " + HostPort(dc->host, dc->scheduler_port);
    case RoleSpec::Kind::kServer:
      return "server " + std::to_string(spec.rank) + " of " + dc->name + " (" + Plural(dc->servers, "server") + "); " +
             local + ", " + global;
    default:
      return "worker " + std::to_string(spec.rank) + " of " + dc->name + " (" + Plural(dc->workers, "worker") + "); " +
             local;
  }
}

Status RunRoleCommand(const RoleFlags& flags, const std::atomic<bool>* interrupted) {
  GEOMX_ASSIGN_OR_RETURN(Recipe recipe, LoadRecipe(flags.recipe, flags.sets));
  GEOMX_ASSIGN_OR_RETURN(RoleSpec spec, ResolveRoleSpec(recipe, flags));
  if (flags.dry_run) {
    std::printf("%s: %s\n", ProcessName(spec).c_str(), DescribeRole(recipe, spec).c_str());
    return Status::Ok();
  }
  return RunRole(recipe, spec, interrupted);
}

}  // namespace geomx::cli
