#include "comm/topology.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace geomx::comm {
namespace {

// Data-centre names become endpoint names, log prefixes and run-folder names: keep them boring.
bool IsValidName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// `inherit`: a field may also be DataCentre::kInheritLink.
void CheckLink(const LinkOptions& link, const std::string& path, std::vector<std::string>* errors,
               bool inherit = false) {
  auto given = [inherit](double v) { return !(inherit && v == DataCentre::kInheritLink); };
  if (given(link.bandwidth_bps) && !(link.bandwidth_bps >= 0)) {
    errors->push_back(path + ".bandwidth_bps: must be >= 0 (0 = unlimited), got " + std::to_string(link.bandwidth_bps));
  }
  if (given(link.latency_s) && !(link.latency_s >= 0)) {
    errors->push_back(path + ".latency_s: must be >= 0, got " + std::to_string(link.latency_s));
  }
  if (given(link.loss) && !(link.loss >= 0 && link.loss < 1)) {
    errors->push_back(path + ".loss: must be in [0, 1), got " + std::to_string(link.loss));
  }
}

void CheckOptions(const CommOptions& o, std::vector<std::string>* errors) {
  const std::string p = "topology.options.";
  if (o.rendezvous_timeout_ms <= 0) {
    errors->push_back(p + "rendezvous_timeout_ms: must be > 0, got " + std::to_string(o.rendezvous_timeout_ms));
  }
  if (o.request_timeout_ms <= 0) {
    errors->push_back(p + "request_timeout_ms: must be > 0, got " + std::to_string(o.request_timeout_ms));
  }
  if (o.heartbeat_interval_ms < 0) {
    errors->push_back(p + "heartbeat_interval_ms: must be >= 0 (0 disables), got " +
                      std::to_string(o.heartbeat_interval_ms));
  }
  if (o.heartbeat_interval_ms > 0 && o.heartbeat_timeout_ms <= o.heartbeat_interval_ms) {
    errors->push_back(p + "heartbeat_timeout_ms: must be > heartbeat_interval_ms (" +
                      std::to_string(o.heartbeat_interval_ms) + "), got " + std::to_string(o.heartbeat_timeout_ms));
  }
  if (o.split_bytes <= 0) errors->push_back(p + "split_bytes: must be > 0, got " + std::to_string(o.split_bytes));
  CheckLink(o.wan, p + "wan", errors);
  CheckLink(o.lan, p + "lan", errors);
}

}  // namespace

NetworkShape Topology::Network() const {
  NetworkShape n;
  n.lan = options.lan;
  n.wan = options.wan;
  auto pick = [](double own, double job) { return own == DataCentre::kInheritLink ? job : own; };
  for (const DataCentre& dc : datacentres) {
    n.uplinks[dc.name] = LinkOptions{.bandwidth_bps = pick(dc.uplink.bandwidth_bps, options.wan.bandwidth_bps),
                                     .latency_s = pick(dc.uplink.latency_s, options.wan.latency_s),
                                     .loss = pick(dc.uplink.loss, options.wan.loss)};
  }
  for (const DirectLink& d : direct_links) n.direct[NetworkShape::Pair(d.from, d.to)] = d.link;
  return n;
}

Status Topology::Validate() const {
  std::vector<std::string> errors;
  // host -> port -> the first field that claimed it (only explicitly set ports; 0 = picked later).
  std::map<std::string, std::map<int, std::string>> ports;
  auto claim_port = [&](const std::string& host, int port, const std::string& field) {
    if (port == 0) return;
    if (port < 0 || port > 65535) {
      errors.push_back(field + ": must be in [1, 65535] (or 0 to pick one), got " + std::to_string(port));
      return;
    }
    auto [it, inserted] = ports[host].emplace(port, field);
    if (!inserted) {
      errors.push_back(field + ": port " + std::to_string(port) + " on " + host + " is already used by " +
                       it->second);
    }
  };

  if (central_host.empty()) errors.push_back("topology.central_host: must not be empty");
  if (global_servers < 1) {
    errors.push_back("topology.global_servers: must be >= 1, got " + std::to_string(global_servers));
  }
  claim_port(central_host, global_scheduler_port, "topology.global_scheduler_port");

  if (datacentres.empty()) errors.push_back("topology.datacentres: at least one data centre is required");
  std::set<std::string> names;
  for (size_t i = 0; i < datacentres.size(); ++i) {
    const DataCentre& dc = datacentres[i];
    const std::string path = "topology.datacentres[" + std::to_string(i) + "]";
    if (!IsValidName(dc.name)) {
      errors.push_back(path + ".name: '" + dc.name + "' must be non-empty and use only [a-z0-9-]");
    } else if (dc.name == "central") {
      errors.push_back(path + ".name: 'central' is reserved for the global tier");
    } else if (!names.insert(dc.name).second) {
      errors.push_back(path + ".name: duplicate '" + dc.name + "'");
    }
    if (dc.host.empty()) errors.push_back(path + ".host: must not be empty");
    if (dc.workers < 1) errors.push_back(path + ".workers: must be >= 1, got " + std::to_string(dc.workers));
    if (dc.servers < 1) errors.push_back(path + ".servers: must be >= 1, got " + std::to_string(dc.servers));
    claim_port(dc.host, dc.scheduler_port, path + ".scheduler_port");
    CheckLink(dc.uplink, path + ".uplink", &errors, /*inherit=*/true);
  }
  std::set<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < direct_links.size(); ++i) {
    const DirectLink& d = direct_links[i];
    const std::string path = "topology.links.direct[" + std::to_string(i) + "]";
    for (const auto& [end, name] : {std::pair{".from", &d.from}, std::pair{".to", &d.to}}) {
      if (!names.count(*name)) errors.push_back(path + end + ": '" + *name + "' is not a data centre of the topology");
    }
    if (d.from == d.to) errors.push_back(path + ": a direct link joins two different data centres");
    if (!pairs.insert(NetworkShape::Pair(d.from, d.to)).second) {
      errors.push_back(path + ": a second link between " + d.from + " and " + d.to);
    }
    CheckLink(d.link, path, &errors);
  }
  CheckOptions(options, &errors);

  if (errors.empty()) return Status::Ok();
  std::string message = errors[0];
  for (size_t i = 1; i < errors.size(); ++i) message += "; " + errors[i];
  return Status::InvalidArgument(message);
}

}  // namespace geomx::comm
