// Topology arithmetic every role of a HiPS job shares (the same on every node): the two kinds of tier, the ranks of
// the nodes in them, the data shard of a worker, and the FSA round count. Pure functions; thread-safe.
//
//   global tier      the global scheduler; servers = the global servers; workers = every local server of every
//                    data centre (data centres in order), then the master worker
//   data centre tier its scheduler; servers = its local servers; workers = its workers
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/cluster/cluster_config.h"
#include "comm/node.h"
#include "comm/postoffice.h"
#include "comm/topology.h"

namespace geomx::cluster {

inline constexpr int kAppId = 0;
inline constexpr const char* kCentral = "central";

// The index of data centre `party` in the topology; kInvalidArgument naming --party otherwise.
Result<int> FindDataCentre(const comm::Topology& t, const std::string& party);

comm::TierSpec GlobalTier(const comm::Topology& t, const RoleEnv& env);
comm::TierSpec DataCentreTier(const comm::Topology& t, const comm::DataCentre& dc, const RoleEnv& env);

// The rank of local server `rank` of data centre `dc_index` among the global tier's workers.
int GlobalRankOfLocalServer(const comm::Topology& t, int dc_index, int rank);
int MasterWorkerRank(const comm::Topology& t);
// The node ids of every local server in the global tier, data centres in order (TSEngine's members there).
std::vector<int> LocalServerIds(const comm::Topology& t);
// The node ids of data centre `dc`'s workers in its tier, in rank order (TSEngine's members inside it).
std::vector<int> WorkerIdsOf(const comm::DataCentre& dc);
// Data shard of a worker: workers numbered over data centres in order.
int WorkerIndex(const comm::Topology& t, int dc_index, int rank);

// FSA needs every worker in every round: all use the iterations that the smallest shard allows.
int64_t FsaIterationsPerEpoch(int64_t train_size, int world, int batch);

// Servers and schedulers wait for the end of the job in Finalize, which gives up after request_timeout_ms; a
// healthy tier whose workers are still training is waited for again.
Status FinalizeWhenDone(comm::Postoffice& po);

// A node that fails leaves its tier saying why (comm::Postoffice::Leave), so the tier's other nodes hear the cause at
// once instead of after a heartbeat timeout. Returns `s`.
Status LeaveOnError(comm::Postoffice& po, Status s);

// A local server belongs to two tiers; the first failure of either is carried to the other (the server leaves it,
// naming the cause), so a dead global server reaches the data centres' workers, and a dead worker the global tier,
// without chained timeouts. Both postoffices must outlive the bridge; declare it after them.
class TierBridge {
 public:
  TierBridge(comm::Postoffice* a, comm::Postoffice* b);
  ~TierBridge();  // waits for a callback in progress
  TierBridge(const TierBridge&) = delete;
  TierBridge& operator=(const TierBridge&) = delete;

 private:
  comm::Postoffice* const a_;
  comm::Postoffice* const b_;
};

std::string ServerName(const std::string& party, int rank);  // "dc-a/server0"
std::string WorkerName(const std::string& party, int rank);  // "dc-a/worker1"

}  // namespace geomx::cluster
