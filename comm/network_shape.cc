#include "comm/network_shape.h"

#include <algorithm>

namespace geomx::comm {

const LinkOptions& NetworkShape::Uplink(const std::string& dc) const {
  auto it = uplinks.find(dc);
  return it != uplinks.end() ? it->second : wan;
}

LinkOptions NetworkShape::Between(const std::string& a, const std::string& b) const {
  if (a == b) return lan;
  if (a.empty() || b.empty()) return wan;
  if (a == central) return Uplink(b);
  if (b == central) return Uplink(a);
  auto it = direct.find(Pair(a, b));
  return it != direct.end() ? it->second : Chain(Uplink(a), Uplink(b));
}

LinkOptions Chain(const LinkOptions& a, const LinkOptions& b) {
  LinkOptions c;
  c.latency_s = a.latency_s + b.latency_s;
  if (a.bandwidth_bps > 0 && b.bandwidth_bps > 0) {
    c.bandwidth_bps = std::min(a.bandwidth_bps, b.bandwidth_bps);
  } else {
    c.bandwidth_bps = std::max(a.bandwidth_bps, b.bandwidth_bps);  // 0 = unlimited: the other one limits
  }
  c.loss = 1.0 - (1.0 - a.loss) * (1.0 - b.loss);
  return c;
}

std::string PartyOfNode(const std::string& node_name) {
  const size_t slash = node_name.find('/');
  return slash == std::string::npos ? std::string() : node_name.substr(0, slash);
}

}  // namespace geomx::comm
