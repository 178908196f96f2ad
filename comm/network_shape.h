// NetworkShape: the emulated network of a job, as one LinkOptions per pair of parties (docs/deployment.md,
// "Uneven and lossy WANs").
//
//   * inside a party: `lan`;
//   * between the central party and data centre d: d's own uplink (`uplinks[d]`) when it has one, else `wan`;
//   * between two data centres: their direct link when they have one, else the path through the central party
//     (a star, as in `geomx bench --netns`): the latencies add up, the lower bandwidth limits, the losses
//     compound.
//
// Plain data; every function is pure and thread-safe.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "comm/comm_options.h"

namespace geomx::comm {

struct NetworkShape {
  LinkOptions lan;
  LinkOptions wan;
  std::map<std::string, LinkOptions> uplinks;  // data centre -> its link to the central party (overrides wan)
  std::map<std::pair<std::string, std::string>, LinkOptions> direct;  // Pair(a, b) -> their direct link
  std::string central = "central";             // the central party's name

  // The key of `direct` for data centres a and b (the names in order).
  static std::pair<std::string, std::string> Pair(const std::string& a, const std::string& b) {
    return a < b ? std::pair{a, b} : std::pair{b, a};
  }

  // The link between parties `a` and `b` (either order). An empty party name (a node whose name does not say its
  // party) gets `wan` for a different party and `lan` for the same one.
  LinkOptions Between(const std::string& a, const std::string& b) const;
  // The link from the central party to data centre `dc`.
  const LinkOptions& Uplink(const std::string& dc) const;
};

// Two links one after the other: latency a + b, bandwidth the lower of the limited ones, loss 1 - (1-a)(1-b).
LinkOptions Chain(const LinkOptions& a, const LinkOptions& b);

// The party of a node name "party/role[@tier]" ("dc-a/worker1" -> "dc-a"); "" when the name has no '/'.
std::string PartyOfNode(const std::string& node_name);

}  // namespace geomx::comm
