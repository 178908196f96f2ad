// sync.mode esync: the rule, the state server, its client and the worker (cli/sync/esync.h).
#include "cli/sync/esync.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "cli/sync/hfa.h"
#include "cli/sync/sync_mode.h"
#include "comm/codec.h"
#include "engine/base/logging.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {
namespace {

constexpr const char* kTier = "esync";

struct Hooks {
  std::mutex mu;
  std::function<void(const EsyncRoundTrace&)> rounds;
  std::function<void(const EsyncWorkerTrace&)> workers;
};
Hooks& TraceHooks() {
  static Hooks hooks;
  return hooks;
}
void TraceRound(const EsyncRoundTrace& t) {
  Hooks& h = TraceHooks();
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.rounds) h.rounds(t);
}
void TraceWorker(const EsyncWorkerTrace& t) {
  Hooks& h = TraceHooks();
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.workers) h.workers(t);
}

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", s);
  return buf;
}

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

int StateServerTimeoutMs(const Recipe& r) {
  return static_cast<int>(std::min<int64_t>(
      INT32_MAX, static_cast<int64_t>(r.topology.options.rendezvous_timeout_ms) + r.topology.options.request_timeout_ms));
}

std::string StateServerEndpoint(const Recipe& r, const ClusterEnv& env) {
  return env.scheduler_endpoint(kTier, r.topology.central_host, r.topology.state_server_port);
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
  EsyncWorker(const ClusterContext& ctx, const WorkerArgs& args, std::unique_ptr<EsyncStateClient> client)
      : AveragingWorker(args.kv, args.optimizer),
        client_(std::move(client)),
        rank_(args.worker_index),
        schedule_(ctx.recipe->lr_schedule),
        base_lr_(ctx.recipe->optimizer.lr),
        per_epoch_(ctx.iterations_per_epoch),
        max_local_steps_(ctx.recipe->sync.esync_max_local_steps) {
    rounds_ = ctx.iterations_per_epoch * ctx.recipe->training.epochs;
    if (ctx.recipe->training.max_iterations > 0) rounds_ = std::min(rounds_, ctx.recipe->training.max_iterations);
    rounds_ = std::max<int64_t>(rounds_, 1);
  }

  Status PullInitial(const std::vector<nn::Parameter*>& params) override {
    GEOMX_RETURN_IF_ERROR(AveragingWorker::PullInitial(params));
    GEOMX_ASSIGN_OR_RETURN(steps_, client_->Ask(0, 0.0));
    last_end_ = Clock::now();
    return Status::Ok();
  }

  // Rounds end the run: enough epochs for a worker that takes max_local_steps in every round.
  void Configure(TrainerOptions* options) override {
    const int64_t epochs = static_cast<int64_t>(options->training.epochs) * std::max(1, max_local_steps_);
    options->training.epochs = static_cast<int>(std::min<int64_t>(epochs, INT32_MAX));
    options->training.max_iterations = 0;
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
    TraceWorker(EsyncWorkerTrace{rank_, sync_index() - 1, steps_, measured_steps_});
    const double per_step = measured_steps_ > 0 ? measured_s_ / measured_steps_ : 0.0;
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
  int64_t rounds_ = 1;
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

EsyncPlanner::EsyncPlanner(int workers, int max_local_steps)
    : max_local_steps_(max_local_steps), asked_(static_cast<size_t>(std::max(0, workers))),
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
    return Status::InvalidArgument("esync: worker " + std::to_string(rank) + " reported " + FormatSeconds(seconds) +
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
  TraceRound(trace);
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

void SetEsyncTraceForTesting(std::function<void(const EsyncRoundTrace&)> rounds,
                             std::function<void(const EsyncWorkerTrace&)> workers) {
  Hooks& h = TraceHooks();
  std::lock_guard<std::mutex> lock(h.mu);
  h.rounds = std::move(rounds);
  h.workers = std::move(workers);
}

// ---- the client ----

Result<std::unique_ptr<EsyncStateClient>> EsyncStateClient::Connect(const Recipe& recipe, const ClusterEnv& env,
                                                                    const std::string& node, const std::string& host,
                                                                    int rank) {
  std::unique_ptr<comm::Van> van = env.make_van(node);
  GEOMX_ASSIGN_OR_RETURN(std::string endpoint, van->Bind(env.node_bind(node, host)));
  Status s = van->Connect(comm::kSchedulerId, StateServerEndpoint(recipe, env), comm::LinkClass::kWan);
  if (!s.ok()) return s.WithContext("esync: connecting to the state server");
  return std::unique_ptr<EsyncStateClient>(
      new EsyncStateClient(std::move(van), std::move(endpoint), rank, StateServerTimeoutMs(recipe)));
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
      {{"op", op}, {"rank", std::to_string(rank_)}, {"seconds", FormatSeconds(seconds)}, {"endpoint", endpoint_}});
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

Status RunStateServer(const Recipe& recipe, const ClusterEnv& env) {
  if (recipe.sync.mode != "esync") {
    return Status::InvalidArgument("sync.mode: the state server serves sync.mode esync, got '" + recipe.sync.mode +
                                   "'");
  }
  const int workers = recipe.topology.total_workers();
  std::unique_ptr<comm::Van> van = env.make_van("central/state-server");
  auto bound = van->Bind(StateServerEndpoint(recipe, env));
  if (!bound.ok()) return bound.status().WithContext("esync state server: topology.central.state_server_port");
  GEOMX_LOG(kInfo) << "esync state server for " << workers << " workers on " << *bound;
  EsyncPlanner planner(workers, recipe.sync.esync_max_local_steps);
  std::map<int, std::string> connected;  // rank -> endpoint
  const int timeout_ms = StateServerTimeoutMs(recipe);
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
    if (connected[r] != f["endpoint"]) {
      GEOMX_RETURN_IF_ERROR(van->Connect(r + 1, f["endpoint"], comm::LinkClass::kWan));
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

// ---- factories ----

Result<std::unique_ptr<ServerPolicy>> MakeEsyncGlobalServer(const ClusterContext& ctx, const comm::KeyLayout& layout) {
  return MakeAveragingGlobalServer(ctx, layout, OuterRuleOf(*ctx.recipe));
}

Result<std::unique_ptr<ServerPolicy>> MakeEsyncLocalServer(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                           const LocalServerArgs& args) {
  return MakeAveragingLocalServer(ctx, layout, args, /*k2=*/1);
}

Result<std::unique_ptr<WorkerSync>> MakeEsyncWorker(const ClusterContext& ctx, const WorkerArgs& args) {
  if (args.env == nullptr) return Status::InvalidArgument("esync: the worker needs a ClusterEnv to reach its state server");
  const Recipe& r = *ctx.recipe;
  const comm::DataCentre& dc = r.topology.datacentres[args.dc_index];
  const std::string node = dc.name + "/worker" + std::to_string(args.rank) + "@esync";
  GEOMX_ASSIGN_OR_RETURN(auto client, EsyncStateClient::Connect(r, *args.env, node, dc.host, args.worker_index));
  return std::unique_ptr<WorkerSync>(new EsyncWorker(ctx, args, std::move(client)));
}

}  // namespace geomx::cli
