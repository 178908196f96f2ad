// Node identity and tier description of the parameter server.
//
// A *tier* is one rendezvous group: a scheduler (node id 0), `num_servers` servers and `num_workers` workers.
// geomx runs one tier per data centre plus one global tier; a process that belongs to two tiers (a local server
// is a server of its data centre's tier and a worker of the global tier) has one NodeInfo per tier.
//
// Ids inside a tier are assigned by the scheduler: 0 = scheduler, 1..S = servers by rank, S+1..S+W = workers by
// rank (see TierNodeId). Ranks are what users and layouts talk about; ids are what the Van routes on.
//
// Value types only; no threads, no ownership.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "comm/comm_options.h"
#include "engine/base/status.h"

namespace geomx::comm {

enum class NodeRole { kScheduler, kServer, kWorker };

// "scheduler", "server", "worker".
const char* NodeRoleName(NodeRole role);

struct NodeInfo {
  int id = -1;                        // node id in the tier; -1 until the scheduler assigns it
  NodeRole role = NodeRole::kWorker;
  int rank = -1;                      // rank among the nodes of the same role; -1 = "any free rank"
  std::string name;                   // for messages and logs, e.g. "dc-a/worker1"
  std::string party;                  // data centre owning the node, e.g. "dc-a" or "central"
  std::string endpoint;               // where the node's Van receives (filled by Postoffice::Start)
};

struct TierSpec {
  std::string name;                   // e.g. "dc-a" or "global"; prefixes every error about this tier
  std::string scheduler_endpoint;     // where the tier's scheduler listens
  int num_servers = 1;                // >= 1
  int num_workers = 1;                // >= 1
  CommOptions options;
  // Party hosting the scheduler. A node whose party differs talks to the scheduler over a WAN link.
  // Empty: the scheduler is in every node's party (LAN).
  std::string scheduler_party;
  // Optional: the names the nodes of each rank are expected to have (e.g. "dc-a/worker1"), so that errors about
  // a node that never registered can name it. Empty: such errors give role and rank only.
  std::vector<std::string> server_names;
  std::vector<std::string> worker_names;
  // The member name of the scheduler's process (comm/curve.h), e.g. "central/global-scheduler": the key an
  // authenticating Van expects the scheduler to hold. Empty: "<name>/scheduler" (SchedulerName).
  std::string scheduler_name;
  // CommOptions::continue_without_lost_workers: the tier fails instead of going on when fewer workers than this
  // would be left (the global tier: its master worker and at least one data centre's local server).
  int min_workers_left = 1;
};

// The scheduler's name in `spec`'s tier: spec.scheduler_name, or "<spec.name>/scheduler" when that is empty.
inline std::string SchedulerName(const TierSpec& spec) {
  return spec.scheduler_name.empty() ? spec.name + "/scheduler" : spec.scheduler_name;
}

// The id the scheduler gives to (role, rank) in a tier with `num_servers` servers.
inline int TierNodeId(NodeRole role, int rank, int num_servers) {
  switch (role) {
    case NodeRole::kScheduler: return 0;
    case NodeRole::kServer: return 1 + rank;
    case NodeRole::kWorker: return 1 + num_servers + rank;
  }
  return -1;
}

// Control bodies exchanged with the scheduler (kRegister, kNodeTable). Self-describing little-endian binary with
// a leading format byte; decoding is bounds-checked and returns kDataLoss on malformed input (a peer can cause it).
struct RegisterRequest {
  NodeInfo node;              // the sender (id ignored; rank may be -1)
  std::string tier;           // the tier the node believes it joins
  int num_servers = 0;        // the node's view of the tier's size (must match the scheduler's)
  int num_workers = 0;
};
std::string EncodeRegisterRequest(const RegisterRequest& r);
Result<RegisterRequest> DecodeRegisterRequest(std::string_view body);
std::string EncodeNodeTable(const std::vector<NodeInfo>& nodes);
Result<std::vector<NodeInfo>> DecodeNodeTable(std::string_view body);

}  // namespace geomx::comm
