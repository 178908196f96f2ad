#include "cli/topology_rules.h"

#include <map>
#include <utility>

#include "cli/recipe_units.h"

namespace geomx::cli {

std::vector<TopologyRuleViolation> CheckTopologyRules(const Recipe& recipe,
                                                      const std::function<bool(const std::string&)>& has_error) {
  std::vector<TopologyRuleViolation> out;
  const comm::Topology& t = recipe.topology;
  const std::string list = "topology.datacentres";
  auto item = [&](size_t i) { return list + "[" + std::to_string(i) + "]"; };
  if (t.datacentres.empty() && !has_error(list)) {
    out.push_back({{list, "topology"},
                   list,
                   "needs at least one data centre, e.g. datacentres: [{name: dc-a, workers: 2, servers: 1}]"});
  }

  std::map<std::string, size_t> names;  // name -> first index
  for (size_t i = 0; i < t.datacentres.size(); ++i) {
    const std::string name_path = item(i) + ".name";
    const std::string& name = t.datacentres[i].name;
    if (has_error(name_path) || has_error(list)) continue;
    if (name.empty()) {
      out.push_back({{item(i), list}, name_path, "every data centre needs a name (its --party), e.g. {name: dc-a}"});
    } else if (auto [first, fresh] = names.emplace(name, i); !fresh) {
      out.push_back({{name_path},
                     name_path,
                     "duplicate data centre name '" + name + "' (also " + item(first->second) + ".name)"});
    }
  }

  // Two schedulers on one host cannot listen on one port (0 = picked at start, never a clash). Hosts are compared
  // as written: 127.0.0.1 and localhost count as different.
  std::map<std::pair<std::string, int>, std::string> ports;  // (host, port) -> the key that took it
  auto claim = [&](const std::string& host, int port, const std::string& host_path, const std::string& port_path) {
    if (port == 0 || has_error(host_path) || has_error(port_path)) return;
    auto [it, fresh] = ports.emplace(std::make_pair(host, port), port_path);
    if (!fresh) {
      out.push_back({{port_path},
                     port_path,
                     "port " + std::to_string(port) + " on " + host + " is already taken by " + it->second});
    }
  };
  claim(t.central_host, t.global_scheduler_port, "topology.central.host", "topology.central.scheduler_port");
  for (size_t i = 0; i < t.datacentres.size(); ++i) {
    claim(t.datacentres[i].host, t.datacentres[i].scheduler_port, item(i) + ".host", item(i) + ".scheduler_port");
  }

  const comm::CommOptions& o = t.options;
  const std::string interval = "topology.timeouts.heartbeat_interval";
  const std::string timeout = "topology.timeouts.heartbeat_timeout";
  if (o.heartbeat_interval_ms > 0 && o.heartbeat_timeout_ms <= o.heartbeat_interval_ms && !has_error(interval) &&
      !has_error(timeout)) {
    out.push_back({{timeout, interval},
                   timeout,
                   "must be longer than " + interval + " (" + DurationMillisText(o.heartbeat_interval_ms) + "), got " +
                       DurationMillisText(o.heartbeat_timeout_ms)});
  }
  // Under wait the other workers' requests wait for the lost one: they must not time out before the tier gives
  // up on it (declared lost after heartbeat_timeout, then rejoin).
  const std::string rejoin = "topology.timeouts.rejoin";
  const std::string request = "topology.timeouts.request";
  if (t.failure_policy == "wait" && !has_error(rejoin) && !has_error(request) && !has_error(timeout) &&
      static_cast<int64_t>(o.heartbeat_timeout_ms) + o.rejoin_timeout_ms >= o.request_timeout_ms) {
    out.push_back({{rejoin, timeout, request, "topology.failure_policy"},
                   rejoin,
                   "with failure_policy: wait, " + timeout + " (" + DurationMillisText(o.heartbeat_timeout_ms) +
                       ") + " + rejoin + " (" + DurationMillisText(o.rejoin_timeout_ms) + ") must be below " +
                       request + " (" + DurationMillisText(o.request_timeout_ms) +
                       "): the other workers' requests wait for the lost worker that long"});
  }
  return out;
}

}  // namespace geomx::cli
