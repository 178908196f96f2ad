// sync.mode esync: the rule, the state server, its client, the worker and the mode (esync.h).
#include "algorithms/sync/esync.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "algorithms/sync/averaging.h"
#include "comm/codec.h"
#include "engine/base/logging.h"
#include "nn/optim/optimizer.h"

namespace geomx::sync {
namespace {

Result<int64_t> IntField(const std::map<std::string, std::string>& f, const char* key) {
  auto it = f.find(key);
  if (it == f.end()) return Status::InvalidArgument(std::string("esync request: missing field ") + key);
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0') {
    return Status::InvalidArgument(std::string("esync request: bad ") + key + " '" + it->second + "'");
  }
  return static_cast<int64_t>(v);
}

// Answers one request of the state server's protocol.
Status Answer(comm::Van& van, int rank, const comm::Message& req, const Status& status,
              std::map<std::string, std::string> fields) {
  comm::Message m;
  m.meta.command = comm::Command::kControl;
  m.meta.request = false;
  m.meta.sender = 0;
  m.meta.recipient = rank + 1;
  m.meta.round = req.meta.round;
  m.meta.timestamp = req.meta.timestamp;
  if (!status.ok()) {
    m.meta.status_code = static_cast<int32_t>(status.code());
    m.meta.body = status.message();
  } else {
    m.meta.body = comm::EncodeFields(fields);
  }
  return van.Send(rank + 1, m).status();
}

// The worker of esync: the state server's steps per round, its learning rate follows rounds, not iterations.
class EsyncWorker final : public AveragingWorker {
 public:
  EsyncWorker(const WorkerArgs& args, int max_local_steps, std::unique_ptr<EsyncStateClient> client,
              double fixed_seconds_per_step)
      : AveragingWorker(args),
        client_(std::move(client)),
        rank_(args.worker_index),
        schedule_(args.job->job.schedule),
        base_lr_(args.job->job.optimizer.lr),
        per_epoch_(args.job->job.plan.iterations_per_epoch),
        max_local_steps_(max_local_steps),
        rounds_(std::max<int64_t>(args.job->job.plan.total_rounds(), 1)),
        fixed_seconds_(fixed_seconds_per_step),
        observer_(args.observer) {}

  Status PullInitial(const std::vector<nn::Parameter*>& params) override {
    GEOMX_RETURN_IF_ERROR(AveragingWorker::PullInitial(params));
    GEOMX_ASSIGN_OR_RETURN(steps_, client_->Ask(0, 0.0));
    last_end_ = Clock::now();
    return Status::Ok();
  }

  // Rounds end the run: enough epochs for a worker that takes max_local_steps in every round.
  void Configure(train::TrainingConfig* training) override {
    const int64_t epochs = static_cast<int64_t>(training->epochs) * std::max(1, max_local_steps_);
    training->epochs = static_cast<int>(std::min<int64_t>(epochs, INT32_MAX));
    training->max_iterations = 0;
  }

  Status Apply(const std::vector<nn::Parameter*>& params, int64_t iteration) override {
    if (Finished()) return Status::FailedPrecondition("esync: every round of the run is done");
    const auto start = Clock::now();
    measured_s_ += std::chrono::duration<double>(start - last_end_).count();
    ++measured_steps_;
    const int64_t r = sync_index();
    optimizer()->SetLr(nn::ScheduledLr(schedule_, base_lr_, r, static_cast<int>(r / std::max<int64_t>(1, per_epoch_)),
                                       rounds_));
    Status s = AveragingWorker::Apply(params, iteration);
    last_end_ = Clock::now();
    return s;
  }

  bool Finished() const override { return sync_index() >= rounds_; }

 protected:
  int StepsThisRound() const override { return steps_; }

  Status AfterSync() override {
    if (observer_) observer_->OnEsyncWorkerRound(EsyncWorkerTrace{rank_, sync_index() - 1, steps_, measured_steps_});
    double per_step = measured_steps_ > 0 ? measured_s_ / measured_steps_ : 0.0;
    if (fixed_seconds_ > 0) per_step = fixed_seconds_;
    measured_s_ = 0;
    measured_steps_ = 0;
    if (Finished()) return client_->Finish(rounds_);
    GEOMX_ASSIGN_OR_RETURN(steps_, client_->Ask(sync_index(), per_step));
    return Status::Ok();
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<EsyncStateClient> client_;
  const int rank_;
  const nn::LrScheduleConfig schedule_;
  const float base_lr_;
  const int64_t per_epoch_;
  const int max_local_steps_;
  const int64_t rounds_;
  const double fixed_seconds_;  // > 0: reported instead of the measured seconds per step
  SyncObserver* const observer_;
  int steps_ = 1;
  Clock::time_point last_end_;
  double measured_s_ = 0;
  int measured_steps_ = 0;
};

}  // namespace

// ---- the rule and the planner ----

std::vector<int> EsyncLocalSteps(std::span<const double> seconds, int max_local_steps) {
  const int most = std::max(1, max_local_steps);
  double slowest = 0;
  for (double c : seconds) slowest = std::max(slowest, c);
  std::vector<int> steps(seconds.size(), 1);
  for (size_t i = 0; i < seconds.size(); ++i) {
    if (seconds[i] <= 0 || slowest <= 0) continue;
    const double k = std::floor(slowest / seconds[i] * (1 + 1e-9));  // 0.3 / 0.1 is 2.9999999999999996
    steps[i] = k >= most ? most : std::max(1, static_cast<int>(k));
  }
  return steps;
}

EsyncPlanner::EsyncPlanner(int workers, int max_local_steps, SyncObserver* observer)
    : max_local_steps_(max_local_steps), observer_(observer), asked_(static_cast<size_t>(std::max(0, workers))),
      finished_(static_cast<size_t>(std::max(0, workers)), false) {}

Result<std::optional<std::vector<int>>> EsyncPlanner::Ask(int rank, int64_t round, double seconds) {
  if (rank < 0 || rank >= static_cast<int>(asked_.size())) {
    return Status::InvalidArgument("esync: rank " + std::to_string(rank) + " is not a worker of this job (" +
                                   std::to_string(asked_.size()) + " workers)");
  }
  if (finished_[rank]) return Status::InvalidArgument("esync: worker " + std::to_string(rank) + " already finished");
  if (round != round_) {
    return Status::InvalidArgument("esync: worker " + std::to_string(rank) + " asked for round " +
                                   std::to_string(round) + ", but round " + std::to_string(round_) + " is open");
  }
  if (asked_[rank]) {
    return Status::InvalidArgument("esync: worker " + std::to_string(rank) + " asked twice for round " +
                                   std::to_string(round));
  }
  if (!std::isfinite(seconds) || seconds < 0) {
    return Status::InvalidArgument("esync: worker " + std::to_string(rank) + " reported " + comm::NumberField(seconds) +
                                   " s per step");
  }
  asked_[rank] = seconds;
  for (const auto& a : asked_) {
    if (!a) return std::optional<std::vector<int>>();
  }
  EsyncRoundTrace trace;
  trace.round = round_;
  for (const auto& a : asked_) trace.seconds.push_back(*a);
  trace.steps = EsyncLocalSteps(trace.seconds, max_local_steps_);
  if (observer_) observer_->OnEsyncRound(trace);
  for (auto& a : asked_) a.reset();
  ++round_;
  return std::optional<std::vector<int>>(trace.steps);
}

Status EsyncPlanner::Finish(int rank) {
  if (rank < 0 || rank >= static_cast<int>(finished_.size())) {
    return Status::InvalidArgument("esync: rank " + std::to_string(rank) + " is not a worker of this job");
  }
  finished_[rank] = true;
  return Status::Ok();
}

bool EsyncPlanner::all_finished() const { return std::all_of(finished_.begin(), finished_.end(), [](bool b) { return b; }); }

std::string EsyncPlanner::Unfinished() const {
  std::string out;
  for (size_t i = 0; i < finished_.size(); ++i) {
    if (finished_[i]) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(i);
  }
  return out;
}

// ---- the client ----

Result<std::unique_ptr<EsyncStateClient>> EsyncStateClient::Connect(const StateServerAccess& access, int rank) {
  if (!access.make_van) return Status::InvalidArgument("esync: the worker has no way to reach its state server");
  std::unique_ptr<comm::Van> van = access.make_van();
  GEOMX_ASSIGN_OR_RETURN(std::string endpoint, van->Bind(access.bind));
  Status s = van->Connect(comm::kSchedulerId, access.endpoint, comm::LinkClass::kWan, "central/state-server");
  if (!s.ok()) return s.WithContext("esync: connecting to the state server");
  return std::unique_ptr<EsyncStateClient>(
      new EsyncStateClient(std::move(van), std::move(endpoint), rank, access.timeout_ms));
}

EsyncStateClient::~EsyncStateClient() {
  if (van_) van_->Stop();
}

Result<std::map<std::string, std::string>> EsyncStateClient::Call(const std::string& op, int64_t round,
                                                                   double seconds) {
  comm::Message m;
  m.meta.command = comm::Command::kControl;
  m.meta.request = true;
  m.meta.sender = rank_ + 1;
  m.meta.recipient = comm::kSchedulerId;
  m.meta.round = round;
  m.meta.body = comm::EncodeFields(
      {{"op", op}, {"rank", std::to_string(rank_)}, {"seconds", comm::NumberField(seconds)}, {"endpoint", endpoint_}});
  const std::string what = "esync state server (" + op + ", round " + std::to_string(round) + ")";
  Result<size_t> sent = van_->Send(comm::kSchedulerId, m);
  if (!sent.ok()) return sent.status().WithContext(what);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Status::DeadlineExceeded(what + ": no answer within " + std::to_string(timeout_ms_) + " ms");
    }
    comm::Message reply;
    Status s = van_->Recv(&reply, static_cast<int>(left.count()));
    if (s.code() == StatusCode::kDataLoss) continue;
    if (s.code() == StatusCode::kDeadlineExceeded) continue;
    if (!s.ok()) return s.WithContext(what);
    if (reply.meta.request || reply.meta.round != round) continue;  // not the answer to this call
    if (reply.meta.status_code != 0) {
      return Status(static_cast<StatusCode>(reply.meta.status_code), what + ": " + reply.meta.body);
    }
    std::map<std::string, std::string> fields;
    GEOMX_RETURN_IF_ERROR(comm::DecodeFields(reply.meta.body, &fields));
    return fields;
  }
}

Result<int> EsyncStateClient::Ask(int64_t round, double seconds_per_step) {
  GEOMX_ASSIGN_OR_RETURN(auto fields, Call("ask", round, seconds_per_step));
  GEOMX_ASSIGN_OR_RETURN(int64_t steps, IntField(fields, "steps"));
  if (steps < 1) return Status::DataLoss("esync state server: " + std::to_string(steps) + " steps for a round");
  return static_cast<int>(steps);
}

Status EsyncStateClient::Finish(int64_t rounds) { return Call("finish", rounds, 0.0).status(); }

// ---- the state server ----

Status RunEsyncStateServer(const StateServerArgs& args, int max_local_steps) {
  const int workers = args.workers;
  std::unique_ptr<comm::Van> van = args.make_van();
  auto bound = van->Bind(args.endpoint);
  if (!bound.ok()) return bound.status().WithContext("esync state server: topology.central.state_server_port");
  GEOMX_LOG(kInfo) << "esync state server for " << workers << " workers on " << *bound;
  EsyncPlanner planner(workers, max_local_steps, args.observer);
  std::map<int, std::string> connected;  // rank -> endpoint
  const int timeout_ms = args.timeout_ms;
  while (!planner.all_finished()) {
    comm::Message req;
    Status s = van->Recv(&req, timeout_ms);
    if (s.code() == StatusCode::kDataLoss) {
      GEOMX_LOG(kWarning) << "esync state server: " << s.ToString();
      continue;
    }
    if (s.code() == StatusCode::kDeadlineExceeded) {
      return Status::DeadlineExceeded("esync state server: no request for " + std::to_string(timeout_ms) +
                                      " ms in round " + std::to_string(planner.round()) +
                                      "; workers not finished: " + planner.Unfinished());
    }
    if (!s.ok()) return s.WithContext("esync state server");
    std::map<std::string, std::string> f;
    Status decoded = comm::DecodeFields(req.meta.body, &f);
    Result<int64_t> rank = decoded.ok() ? IntField(f, "rank") : Result<int64_t>(decoded);
    if (!rank.ok() || *rank < 0 || *rank >= workers || f["endpoint"].empty()) {
      GEOMX_LOG(kWarning) << "esync state server: dropped a malformed request"
                          << (rank.ok() ? std::string() : ": " + rank.status().ToString());
      continue;
    }
    const int r = static_cast<int>(*rank);
    if (van->authenticates() &&
        (static_cast<size_t>(r) >= args.worker_names.size() || req.peer != args.worker_names[r])) {
      // A member (or a stranger admitted by nobody's mistake) speaking for another worker: no answer, no state.
      GEOMX_LOG(kWarning) << "esync state server: dropped a request for worker rank " << r << " from member '"
                          << req.peer << "'"
                          << (static_cast<size_t>(r) < args.worker_names.size()
                                  ? " (rank " + std::to_string(r) + " is " + args.worker_names[r] + ")"
                                  : std::string());
      continue;
    }
    if (connected[r] != f["endpoint"]) {
      // The worker's authenticated member name when the van authenticates (the key its request came with).
      GEOMX_RETURN_IF_ERROR(van->Connect(r + 1, f["endpoint"], comm::LinkClass::kWan, req.peer));
      connected[r] = f["endpoint"];
    }
    if (f["op"] == "finish") {
      Status fs = planner.Finish(r);
      GEOMX_RETURN_IF_ERROR(Answer(*van, r, req, fs, {}));
      continue;
    }
    if (f["op"] != "ask") {
      GEOMX_RETURN_IF_ERROR(Answer(*van, r, req, Status::InvalidArgument("esync: unknown op '" + f["op"] + "'"), {}));
      continue;
    }
    char* end = nullptr;
    const double seconds = std::strtod(f["seconds"].c_str(), &end);
    Result<std::optional<std::vector<int>>> planned =
        end == f["seconds"].c_str() ? Result<std::optional<std::vector<int>>>(
                                          Status::InvalidArgument("esync: bad seconds '" + f["seconds"] + "'"))
                                    : planner.Ask(r, req.meta.round, seconds);
    if (!planned.ok()) {
      GEOMX_RETURN_IF_ERROR(Answer(*van, r, req, planned.status(), {}));
      continue;
    }
    if (!planned->has_value()) continue;
    const std::vector<int>& steps = **planned;
    for (int w = 0; w < workers; ++w) {
      GEOMX_RETURN_IF_ERROR(Answer(*van, w, req, Status::Ok(), {{"steps", std::to_string(steps[w])}}));
    }
  }
  // Let the last answers leave before the sockets close (ZeroMQ drops unsent messages at close).
  comm::Message late;
  while (van->Recv(&late, 500).ok()) {
  }
  van->Stop();
  return Status::Ok();
}

// ---- the mode ----

Result<std::unique_ptr<WorkerSync>> MakeEsyncWorker(const WorkerArgs& args, int max_local_steps,
                                                    double fixed_seconds_per_step) {
  GEOMX_ASSIGN_OR_RETURN(auto client, EsyncStateClient::Connect(args.state_server, args.worker_index));
  return std::unique_ptr<WorkerSync>(new EsyncWorker(args, max_local_steps, std::move(client), fixed_seconds_per_step));
}

namespace {

struct EsyncConfig {
  int max_local_steps = 16;
  float global_lr = 1.0f;
};

class Esync final : public SyncMode {
 public:
  explicit Esync(EsyncConfig config) : config_(config) {}
  Result<std::unique_ptr<ServerPolicy>> MakeGlobalServer(const ServerArgs& args) const override {
    return MakeAveragingGlobalServer(args, OuterRule{config_.global_lr, 0.0f});
  }
  Result<std::unique_ptr<ServerPolicy>> MakeLocalServer(const LocalServerArgs& args) const override {
    return MakeAveragingLocalServer(args, /*k2=*/1);
  }
  Result<std::unique_ptr<WorkerSync>> MakeWorker(const WorkerArgs& args) const override {
    return MakeEsyncWorker(args, config_.max_local_steps);
  }
  Status RunStateServer(const StateServerArgs& args) const override {
    return RunEsyncStateServer(args, config_.max_local_steps);
  }

 private:
  const EsyncConfig config_;
};

Result<std::unique_ptr<SyncMode>> CreateEsync(const SyncSettings& s) {
  if (s.esync_max_local_steps < 1) {
    return Status::InvalidArgument("sync.esync.max_local_steps: must be >= 1, got " +
                                   std::to_string(s.esync_max_local_steps));
  }
  return std::unique_ptr<SyncMode>(
      new Esync(EsyncConfig{.max_local_steps = s.esync_max_local_steps, .global_lr = s.esync_global_lr}));
}

GEOMX_REGISTER_SYNC_MODE((SyncModeDef{
    .name = "esync",
    .help = "model averaging; a state server balances the local steps of fast and slow workers",
    .traits = {.averages_models = true, .steps_on_gradients = false, .state_server = true},
    .create = CreateEsync,
    .rules = [](const SyncRuleInput&, std::vector<RuleViolation>*) {}}));

}  // namespace

}  // namespace geomx::sync
