#include "cli/local_topology.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string_view>
#include <system_error>

#include "algorithms/sync/sync_mode.h"
#include "cli/free_ports.h"
#include "cli/recipe_units.h"
#include "cli/role_command.h"
#include "cli/run_dir.h"
#include "cli/security.h"

namespace geomx::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kLoopback[] = "127.0.0.1";

std::string ShellQuote(const std::string& arg) {
  bool plain = !arg.empty();
  for (char c : arg) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("_-./=:,@%+").find(c) == std::string::npos) {
      plain = false;
    }
  }
  if (plain) return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string LinkText(const comm::LinkOptions& link) {
  if (link.bandwidth_bps == 0 && link.latency_s == 0 && link.loss == 0) return "not shaped";
  return (link.bandwidth_bps == 0 ? std::string("unlimited") : BandwidthText(link.bandwidth_bps)) + ", " +
         DurationSecondsText(link.latency_s) + " one way" +
         (link.loss > 0 ? ", " + LossText(link.loss * 100) + "% loss" : std::string());
}

}  // namespace

Result<LocalTopologyPlan> PlanLocalTopology(const TrainFlags& flags, const Recipe& recipe, const std::string& exe) {
  if (!recipe.has_topology) return Status::InvalidArgument("the recipe has no topology section");
  const comm::Topology& t = recipe.topology;

  // Scheduler ports: the recipe's, or free loopback ports for those left at 0.
  int zeros = t.global_scheduler_port == 0 ? 1 : 0;
  for (const comm::DataCentre& d : t.datacentres) zeros += d.scheduler_port == 0 ? 1 : 0;
  const bool esync = sync::TraitsOf(recipe.sync.mode).state_server;  // + the state server (ESync)
  zeros += esync && t.state_server_port == 0 ? 1 : 0;
  GEOMX_ASSIGN_OR_RETURN(std::vector<int> free_ports, PickFreePorts(kLoopback, zeros));
  size_t next_free = 0;
  auto port_or_free = [&](int port) { return port != 0 ? port : free_ports[next_free++]; };
  const int global_port = port_or_free(t.global_scheduler_port);
  std::vector<int> dc_ports;
  for (const comm::DataCentre& d : t.datacentres) dc_ports.push_back(port_or_free(d.scheduler_port));
  const int state_port = esync ? port_or_free(t.state_server_port) : 0;

  LocalTopologyPlan plan;
  plan.run_dir = !flags.resume.empty() ? flags.resume
                 : !flags.out.empty()  ? flags.out
                                       : RunDir::DefaultPath("runs", recipe.name).string();

  // What every process is told on top of the recipe file: the user's overrides, then loopback hosts and the ports.
  std::vector<std::string> common;
  for (const std::string& s : flags.sets) common.insert(common.end(), {"--set", s});
  // `geomx bench --netns` (bench/netns.h): a listed party's processes run in its network namespace and its host
  // is the namespace's address, not loopback.
  const std::map<std::string, PartyNetns>& netns = flags.party_netns;
  auto host_of = [&](const std::string& party) {
    const auto it = netns.find(party);
    return it == netns.end() ? std::string(kLoopback) : it->second.ip;
  };
  if (t.central_host != host_of("central")) {
    common.insert(common.end(), {"--set", "topology.central.host=" + host_of("central")});
  }
  common.insert(common.end(), {"--set", "topology.central.scheduler_port=" + std::to_string(global_port)});
  for (size_t i = 0; i < t.datacentres.size(); ++i) {
    const std::string item = "topology.datacentres[" + std::to_string(i) + "].";
    const std::string host = host_of(t.datacentres[i].name);
    if (t.datacentres[i].host != host) common.insert(common.end(), {"--set", item + "host=" + host});
    common.insert(common.end(), {"--set", item + "scheduler_port=" + std::to_string(dc_ports[i])});
  }
  if (esync) common.insert(common.end(), {"--set", "topology.central.state_server_port=" + std::to_string(state_port)});
  // Security for the hosts the processes really use (loopback, or the namespaces' addresses).
  std::vector<std::string> hosts = {host_of("central")};
  for (const comm::DataCentre& d : t.datacentres) hosts.push_back(host_of(d.name));
  plan.secure = SecurityEnabled(recipe.security.encryption, hosts);
  plan.keys = recipe.security.keys;
  if (plan.secure && plan.keys.empty()) {
    plan.keys = (fs::path(plan.run_dir) / "keys").string();
    std::error_code ec;
    if (flags.resume.empty() || !fs::exists(plan.keys, ec)) plan.generated_keys = plan.keys;  // resumed: kept
    common.insert(common.end(), {"--set", "security.keys=" + plan.keys});
  }
  // Resuming: every process continues the run folder (the master worker starts the job after its snapshots).
  common.insert(common.end(), {flags.resume.empty() ? "--out" : "--resume", plan.run_dir});

  // The recipe file the processes read: the one given (or, resuming, the run's recipe.yaml).
  const std::string recipe_path = recipe.source;
  auto add = [&](RoleSpec::Kind kind, const std::string& party, int rank, const std::string& listens) {
    PlannedProcess p;
    p.spec = RoleSpec{.kind = kind, .party = party, .rank = rank, .out_dir = plan.run_dir};
    p.name = ProcessName(p.spec);
    p.listens = listens;
    // topology.failure_policy: continue: a worker that dies is dropped from its data centre, and a data centre
    // whose scheduler or local server dies is dropped as a whole, except the first (its worker 0 evaluates and
    // writes the run folder); the job goes on.
    // Under wait, a worker that dies is waited for instead. With topology.worker_restarts the launcher starts a
    // dead worker again and it rejoins, except the evaluating one (the first data centre's worker 0, which
    // writes the run folder).
    const bool droppable_dc = party != "central" && party != t.datacentres.front().name;
    const bool worker = kind == RoleSpec::Kind::kWorker;
    p.may_fail = (t.failure_policy == "continue" &&
                  (worker || (droppable_dc && (kind == RoleSpec::Kind::kScheduler ||
                                               kind == RoleSpec::Kind::kServer)))) ||
                 (t.failure_policy == "wait" && worker);
    p.restartable = worker && p.may_fail && t.worker_restarts > 0 &&
                    !(party == t.datacentres.front().name && rank == 0);
    p.argv = {exe};
    if (const auto ns = netns.find(party); ns != netns.end()) p.argv = {"ip", "netns", "exec", ns->second.ns, exe};
    if (kind == RoleSpec::Kind::kWorker) {
      p.argv.insert(p.argv.end(), {"train", recipe_path});
    } else {
      p.argv.insert(p.argv.end(), {"serve", "--role", RoleName(kind), recipe_path});
    }
    if (party != "central") p.argv.insert(p.argv.end(), {"--party", party});
    if (kind == RoleSpec::Kind::kGlobalServer || kind == RoleSpec::Kind::kServer || kind == RoleSpec::Kind::kWorker) {
      p.argv.insert(p.argv.end(), {"--rank", std::to_string(rank)});
    }
    p.argv.insert(p.argv.end(), common.begin(), common.end());
    plan.processes.push_back(std::move(p));
  };
  const std::string at = std::string(kLoopback) + ":";
  add(RoleSpec::Kind::kGlobalScheduler, "central", 0, at + std::to_string(global_port));
  for (int r = 0; r < t.global_servers; ++r) add(RoleSpec::Kind::kGlobalServer, "central", r, "");
  if (esync) add(RoleSpec::Kind::kStateServer, "central", 0, at + std::to_string(state_port));
  for (size_t i = 0; i < t.datacentres.size(); ++i) {
    const comm::DataCentre& d = t.datacentres[i];
    add(RoleSpec::Kind::kScheduler, d.name, 0, at + std::to_string(dc_ports[i]));
    for (int r = 0; r < d.servers; ++r) add(RoleSpec::Kind::kServer, d.name, r, "");
    for (int r = 0; r < d.workers; ++r) add(RoleSpec::Kind::kWorker, d.name, r, "");
  }
  add(RoleSpec::Kind::kMasterWorker, "central", 0, "");
  return plan;
}

std::string FormatLocalTopologyPlan(const LocalTopologyPlan& plan, const Recipe& recipe) {
  std::string out = "processes: " + std::to_string(plan.processes.size()) +
                    " on this machine (loopback), each its own process; output prefixed with [name]\n";
  for (const PlannedProcess& p : plan.processes) {
    out += "  " + p.name + "  (" + RoleName(p.spec.kind) + ", listens on " +
           (p.listens.empty() ? std::string("an ephemeral port, registered with its scheduler") : p.listens) + ")\n";
    out += "   ";
    for (const std::string& arg : p.argv) {
      out += ' ';
      out += ShellQuote(arg);
    }
    out += '\n';
  }
  out += "run folder: " + plan.run_dir + "\n";
  out += "links: wan " + LinkText(recipe.topology.options.wan) + ", lan " + LinkText(recipe.topology.options.lan) +
         " (emulated in-process)\n";
  const comm::NetworkShape network = recipe.topology.Network();
  for (const comm::DataCentre& dc : recipe.topology.datacentres) {
    const comm::LinkOptions& up = network.Uplink(dc.name);
    const comm::LinkOptions& wan = recipe.topology.options.wan;
    if (up.bandwidth_bps != wan.bandwidth_bps || up.latency_s != wan.latency_s || up.loss != wan.loss) {
      out += "  " + dc.name + " <-> central: " + LinkText(up) + " (its own link)\n";
    }
  }
  for (const comm::DirectLink& d : recipe.topology.direct_links) {
    out += "  " + d.from + " <-> " + d.to + ": " + LinkText(d.link) + " (direct)\n";
  }
  out += DescribeSecurity(recipe, plan.secure,
                          plan.generated_keys.empty() ? plan.keys : plan.keys + ", generated at start");
  out += "(ports the recipe leaves at 0 are free ports picked for this plan; a real run picks them again)\n";
  return out;
}

std::vector<ChildSpec> ChildSpecsOf(const LocalTopologyPlan& plan) {
  std::vector<ChildSpec> specs;
  for (const PlannedProcess& p : plan.processes) specs.push_back({p.name, p.argv, p.may_fail, p.restartable});
  return specs;
}

Status PrintLocalTopologyPlan(const TrainFlags& flags, const Recipe& recipe) {
  GEOMX_ASSIGN_OR_RETURN(std::string exe, ThisExecutable());
  GEOMX_ASSIGN_OR_RETURN(LocalTopologyPlan plan, PlanLocalTopology(flags, recipe, exe));
  std::printf("%s", FormatLocalTopologyPlan(plan, recipe).c_str());
  return Status::Ok();
}

Status RunLocalTopology(const TrainFlags& flags, const Recipe& recipe, const std::atomic<bool>* interrupted) {
  GEOMX_ASSIGN_OR_RETURN(std::string exe, ThisExecutable());
  GEOMX_ASSIGN_OR_RETURN(LocalTopologyPlan plan, PlanLocalTopology(flags, recipe, exe));
  std::printf("geomx: starting %zu processes of %s (run folder %s)\n", plan.processes.size(), recipe.name.c_str(),
              plan.run_dir.c_str());
  std::fflush(stdout);
  // Every process of the topology shares this machine's cores: idle OpenMP threads must sleep, not spin, or the
  // processes steal each other's cores (libgomp reads this once at start, so it is set for the children here).
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  if (!plan.generated_keys.empty()) {
    GEOMX_RETURN_IF_ERROR(comm::GenerateKeys(plan.generated_keys, MemberNames(recipe), /*force=*/false)
                              .WithContext("security: the run's keys"));
  }
  Launcher launcher(LauncherOptions{.max_restarts = recipe.topology.worker_restarts});
  GEOMX_RETURN_IF_ERROR(launcher.Start(ChildSpecsOf(plan)));
  return launcher.Wait(interrupted);
}

}  // namespace geomx::cli
