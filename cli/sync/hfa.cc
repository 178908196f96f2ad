// PLACEHOLDER until the mode lands: every factory refuses with kUnimplemented.
#include "cli/sync/sync_mode.h"

namespace geomx::cli {
namespace {
Status NotYet(const char* what) { return Status::Unimplemented(std::string(what) + " is not built yet"); }
}  // namespace
Result<std::unique_ptr<ServerPolicy>> MakeHfaGlobalServer(const ClusterContext&, const comm::KeyLayout&) {
  return NotYet("sync.mode hfa");
}
Result<std::unique_ptr<ServerPolicy>> MakeHfaLocalServer(const ClusterContext&, const comm::KeyLayout&,
                                                         const LocalServerArgs&) {
  return NotYet("sync.mode hfa");
}
Result<std::unique_ptr<WorkerSync>> MakeHfaWorker(const ClusterContext&, const WorkerArgs&) { return NotYet("sync.mode hfa"); }
}  // namespace geomx::cli
