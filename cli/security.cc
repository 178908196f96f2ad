#include "cli/security.h"

#include <cstdio>

#include "algorithms/sync/sync_mode.h"
#include "cli/role_command.h"

namespace geomx::cli {

std::vector<std::string> MemberNames(const Recipe& recipe) {
  std::vector<std::string> names;
  if (!recipe.has_topology) return names;
  using Kind = RoleSpec::Kind;
  auto add = [&](Kind kind, const std::string& party, int rank) {
    names.push_back(ProcessName(RoleSpec{.kind = kind, .party = party, .rank = rank, .out_dir = ""}));
  };
  const comm::Topology& t = recipe.topology;
  add(Kind::kGlobalScheduler, "central", 0);
  for (int r = 0; r < t.global_servers; ++r) add(Kind::kGlobalServer, "central", r);
  if (sync::TraitsOf(recipe.sync.mode).state_server) add(Kind::kStateServer, "central", 0);
  for (const comm::DataCentre& dc : t.datacentres) {
    add(Kind::kScheduler, dc.name, 0);
    for (int r = 0; r < dc.servers; ++r) add(Kind::kServer, dc.name, r);
    for (int r = 0; r < dc.workers; ++r) add(Kind::kWorker, dc.name, r);
  }
  add(Kind::kMasterWorker, "central", 0);
  return names;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool SecurityEnabled(const std::string& encryption, const std::vector<std::string>& hosts) {
  if (encryption == "on") return true;
  if (encryption == "off") return false;
  for (const std::string& h : hosts) {
    if (!IsLoopbackHost(h)) return true;
  }
  return false;
}

bool SecurityEnabled(const Recipe& recipe) {
  std::vector<std::string> hosts = {recipe.topology.central_host};
  for (const comm::DataCentre& dc : recipe.topology.datacentres) hosts.push_back(dc.host);
  return recipe.has_topology && SecurityEnabled(recipe.security.encryption, hosts);
}

Result<std::optional<ProcessSecurity>> LoadProcessSecurity(const Recipe& recipe, const std::string& member) {
  if (!SecurityEnabled(recipe)) return std::optional<ProcessSecurity>();
  if (recipe.security.keys.empty()) {
    return AtRecipeKey(recipe, "security.keys",
                       Status::InvalidArgument(
                           "security.keys: security is on (security.encryption: " + recipe.security.encryption +
                           (recipe.security.encryption == "auto" ? ", and a topology host is not loopback" : "") +
                           ") but no key directory is given; write one with `geomx keys generate DIR --recipe " +
                           recipe.source + "` and set security.keys: DIR (docs/security.md)"));
  }
  ProcessSecurity s;
  GEOMX_ASSIGN_OR_RETURN(s.identity, comm::LoadIdentity(recipe.security.keys, member));
  GEOMX_ASSIGN_OR_RETURN(s.public_keys, comm::LoadPublicKeys(recipe.security.keys));
  for (const std::string& m : MemberNames(recipe)) {
    if (!s.public_keys.count(m)) {
      return Status::NotFound("security.keys " + recipe.security.keys + ": no public key of " + m + " (" +
                              comm::CurvePublicKeyPath(recipe.security.keys, m) + ")");
    }
  }
  return std::optional<ProcessSecurity>(std::move(s));
}

std::string DescribeSecurity(const Recipe& recipe, bool enabled, const std::string& keys) {
  if (!enabled) {
    return "security: off (security.encryption: " + recipe.security.encryption +
           (recipe.security.encryption == "auto" ? ", every host is loopback" : "") + ")\n";
  }
  return "security: on (CurveZMQ encryption and authentication of every link; keys " + keys + ")\n";
}

Status RunKeysGenerate(const std::string& dir, const std::string& recipe_path, const std::vector<std::string>& sets,
                       const std::vector<std::string>& names, bool force) {
  std::vector<std::string> members = names;
  if (members.empty()) {
    if (recipe_path.empty()) {
      return Status::InvalidArgument("keys generate: give --recipe RECIPE (every member of its topology) or "
                                     "--name PARTY/ROLE");
    }
    GEOMX_ASSIGN_OR_RETURN(Recipe recipe, LoadRecipe(recipe_path, sets));
    if (!recipe.has_topology) {
      return Status::InvalidArgument("keys generate: " + recipe_path + " has no topology section (no processes "
                                     "to give keys to)");
    }
    members = MemberNames(recipe);
  }
  GEOMX_RETURN_IF_ERROR(comm::GenerateKeys(dir, members, force));
  std::printf("geomx: wrote %zu key pairs to %s (DIR/<party>/<role>.pub and .secret); give every host all .pub "
              "files and the .secret files of the processes it runs (docs/security.md)\n",
              members.size(), dir.c_str());
  return Status::Ok();
}

}  // namespace geomx::cli
