// sync.mode esync (docs/synchronization.md): model averaging where each worker's number of local steps per round
// is decided by a state server so that fast and slow workers reach the servers together.
//
// Round r of a worker: it asks the state server for its steps k_r (reporting its seconds per local step measured
// in round r-1; 0 = not measured yet), takes k_r local steps with its own optimizer, then pushes its model
// through its local server to the global server (averaging.h with K2 = 1): w = w_last + global_lr x the mean
// delta over all workers. A run is the job's total rounds (iterations_per_epoch x epochs, or max_iterations when
// smaller): the slowest worker takes as many steps as an FSA worker would.
//
// The rule (EsyncLocalSteps): the state server answers round r once every worker has asked for it; with t_slow
// the largest reported seconds per step, worker i takes k_i = clamp(floor(t_slow / c_i), 1, max_local_steps);
// a worker without a measurement (c_i = 0, round 0) takes 1. The slowest takes 1.
//
// Transport: the state server (`geomx serve --role state-server`, SyncMode::RunStateServer) binds
// StateServerArgs::endpoint; every worker has its own Van (StateServerAccess) and sends kControl requests whose
// body fields are
//   op: ask | finish, rank: worker index (over all data centres), seconds: per local step, endpoint: its Van
// with Meta.round = the round; answers echo the round with the field steps (ask) or nothing (finish), or carry
// Meta.status_code and the reason in Meta.body. The state server exits when every worker finished.
// Observers: SyncObserver::OnEsyncRound (state server) and OnEsyncWorkerRound (workers).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/sync/sync_mode.h"
#include "comm/van.h"
#include "engine/base/status.h"

namespace geomx::sync {

// The rule above. `seconds_per_step[i]` <= 0 means unknown.
std::vector<int> EsyncLocalSteps(std::span<const double> seconds_per_step, int max_local_steps);

// The state server's bookkeeping, without transport. Not thread-safe (the state server has one thread).
class EsyncPlanner {
 public:
  // `observer` (may be null) hears every planned round.
  EsyncPlanner(int workers, int max_local_steps, SyncObserver* observer = nullptr);
  // Worker `rank` asks for the steps of `round`. Returns every worker's steps when this request completes the
  // round (all workers asked), else nullopt. kInvalidArgument for a bad rank, a round other than the open one,
  // or a second request of the same worker for a round.
  Result<std::optional<std::vector<int>>> Ask(int rank, int64_t round, double seconds_per_step);
  // Worker `rank` finished its run. kInvalidArgument for a bad rank.
  Status Finish(int rank);
  bool all_finished() const;
  // Workers that have not finished ("0, 3"), for error messages.
  std::string Unfinished() const;
  int64_t round() const { return round_; }

 private:
  const int max_local_steps_;
  SyncObserver* const observer_;
  int64_t round_ = 0;
  std::vector<std::optional<double>> asked_;  // this round's reports
  std::vector<bool> finished_;
};

// The esync worker (what sync.mode esync's MakeWorker builds): connects to the state server, then takes the steps
// it is told each round. It reports its measured seconds per local step, or `fixed_seconds_per_step` when > 0
// (a test's emulated machine speed, so the plan is known in advance).
Result<std::unique_ptr<WorkerSync>> MakeEsyncWorker(const WorkerArgs& args, int max_local_steps,
                                                    double fixed_seconds_per_step = 0.0);

// The state server: answers until every worker finished (kDeadlineExceeded after args.timeout_ms of silence).
Status RunEsyncStateServer(const StateServerArgs& args, int max_local_steps);

// The worker's side of the protocol. One per worker; calls are not thread-safe (the worker's training thread).
class EsyncStateClient {
 public:
  // Binds the worker's Van and connects to the state server.
  static Result<std::unique_ptr<EsyncStateClient>> Connect(const StateServerAccess& access, int rank);
  ~EsyncStateClient();
  // The local steps of `round`, reporting the seconds per local step measured in the previous round.
  Result<int> Ask(int64_t round, double seconds_per_step);
  // This worker took part in every round; the state server may exit once all have said so.
  Status Finish(int64_t rounds);

 private:
  EsyncStateClient(std::unique_ptr<comm::Van> van, std::string endpoint, int rank, int timeout_ms)
      : van_(std::move(van)), endpoint_(std::move(endpoint)), rank_(rank), timeout_ms_(timeout_ms) {}
  Result<std::map<std::string, std::string>> Call(const std::string& op, int64_t round, double seconds);

  std::unique_ptr<comm::Van> van_;
  const std::string endpoint_;
  const int rank_;
  const int timeout_ms_;
};

}  // namespace geomx::sync
