#include "cli/cluster.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/progress.h"
#include "cli/run_dir.h"
#include "cli/run_report.h"
#include "cli/sync/sync_mode.h"
#include "cli/sync_rules.h"
#include "cli/setup.h"
#include "cli/trainer.h"
#include "comm/key_layout.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"
#include "comm/scheduler.h"
#include "datasets/loader.h"
#include "engine/base/logging.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli {
namespace {

using comm::DataCentre;
using comm::KeyLayout;
using comm::KeySpec;
using comm::NodeInfo;
using comm::NodeRole;
using comm::Postoffice;
using comm::TierSpec;

constexpr int kAppId = 0;
constexpr const char* kCentral = "central";

// ---- topology arithmetic (the same on every node) ----

Result<int> FindDataCentre(const Recipe& r, const std::string& party) {
  for (size_t i = 0; i < r.topology.datacentres.size(); ++i) {
    if (r.topology.datacentres[i].name == party) return static_cast<int>(i);
  }
  return Status::InvalidArgument("--party " + party + ": no such data centre in topology.datacentres");
}

TierSpec GlobalTier(const Recipe& r, const ClusterEnv& env) {
  TierSpec t;
  t.name = "global";
  t.scheduler_endpoint = env.scheduler_endpoint("global", r.topology.central_host, r.topology.global_scheduler_port);
  t.num_servers = r.topology.global_servers;
  t.num_workers = 1;  // the master worker
  for (const auto& dc : r.topology.datacentres) t.num_workers += dc.servers;
  t.options = r.topology.options;
  t.scheduler_party = kCentral;
  return t;
}

TierSpec DataCentreTier(const Recipe& r, const DataCentre& dc, const ClusterEnv& env) {
  TierSpec t;
  t.name = dc.name;
  t.scheduler_endpoint = env.scheduler_endpoint(dc.name, dc.host, dc.scheduler_port);
  t.num_servers = dc.servers;
  t.num_workers = dc.workers;
  t.options = r.topology.options;
  t.scheduler_party = dc.name;
  return t;
}

// In the global tier, the local servers are the workers (data centres in order), then the master worker.
int GlobalRankOfLocalServer(const Recipe& r, int dc_index, int rank) {
  int offset = 0;
  for (int i = 0; i < dc_index; ++i) offset += r.topology.datacentres[i].servers;
  return offset + rank;
}
int MasterWorkerRank(const Recipe& r) { return GlobalRankOfLocalServer(r, static_cast<int>(r.topology.datacentres.size()), 0); }

// Data shard of a worker: workers numbered over data centres in order.
int WorkerIndex(const Recipe& r, int dc_index, int rank) {
  int offset = 0;
  for (int i = 0; i < dc_index; ++i) offset += r.topology.datacentres[i].workers;
  return offset + rank;
}

// FSA needs every worker in every round: all use the iterations that the smallest shard allows.
int64_t FsaIterationsPerEpoch(int64_t train_size, int world, int batch) {
  const int64_t smallest_shard = train_size / world;
  return std::max<int64_t>(1, smallest_shard / batch);
}

std::vector<KeySpec> ModelKeys(nn::Module& model) {
  std::vector<KeySpec> keys;
  uint64_t i = 0;
  for (nn::Parameter* p : model.Parameters()) keys.push_back(KeySpec{i++, static_cast<uint64_t>(p->numel()), true});
  return keys;
}

Result<KeyLayout> Layout(const Recipe& r, nn::Module& model, int num_servers) {
  const int64_t split = r.accelerators.p3  // P3: slices of at most accelerators.p3.slice_elements, on every tier
                            ? std::min(r.topology.options.split_bytes, r.accelerators.p3_slice_elements * int64_t{4})
                            : r.topology.options.split_bytes;
  return KeyLayout::Build(ModelKeys(model), num_servers, split);
}

// Servers and schedulers wait for the end of the job in Finalize, which gives up after request_timeout_ms; a
// healthy tier whose workers are still training is waited for again.
Status FinalizeWhenDone(Postoffice& po) {
  for (;;) {
    Status s = po.Finalize();
    if (s.ok() || s.code() != StatusCode::kDeadlineExceeded || !po.health().ok()) return s;
  }
}

// Emulates a slower machine (topology.datacentres[].slowdown): before each update, sleeps (factor - 1) x the
// time since the previous update returned (the step's data loading, forward and backward).
class SlowdownUpdate final : public ParameterUpdate {
 public:
  SlowdownUpdate(ParameterUpdate* inner, float factor) : inner_(inner), factor_(factor) {}
  Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) override {
    const auto now = std::chrono::steady_clock::now();
    if (started_) {
      const std::chrono::duration<double> compute = now - last_;
      std::this_thread::sleep_for(std::chrono::duration<double>(compute.count() * (factor_ - 1.0f)));
    }
    Status s = inner_->Apply(params, round);
    last_ = std::chrono::steady_clock::now();
    started_ = true;
    return s;
  }
  bool Finished() const override { return inner_->Finished(); }

 private:
  ParameterUpdate* inner_;
  const float factor_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_;
};

ClusterContext MakeContext(const Recipe& recipe, RunSetup* setup) {
  ClusterContext ctx;
  ctx.recipe = &recipe;
  ctx.setup = setup;
  ctx.iterations_per_epoch =
      FsaIterationsPerEpoch(setup->data.train->size(), recipe.topology.total_workers(), recipe.data.batch_size);
  ctx.links = ResolveLinks(recipe.accelerators);
  return ctx;
}

std::string ServerName(const std::string& party, int rank) { return party + "/server" + std::to_string(rank); }
std::string WorkerName(const std::string& party, int rank) { return party + "/worker" + std::to_string(rank); }

}  // namespace

Status CheckTopologyTraining(const Recipe& recipe) {
  if (recipe.training.stop_at_target) {
    return Status::InvalidArgument(
        "training.stop_at_target: not supported with a topology yet (the other workers cannot know when to stop); "
        "the run records time_to_target_seconds without it");
  }
  return Status::Ok();
}

Status RunGlobalScheduler(const Recipe& recipe, const ClusterEnv& env) {
  const TierSpec tier = GlobalTier(recipe, env);
  auto van = env.make_van("central/global-scheduler");
  comm::Scheduler scheduler(tier, van.get());
  return scheduler.Run(tier.scheduler_endpoint);
}

Status RunScheduler(const Recipe& recipe, const std::string& party, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(int dc, FindDataCentre(recipe, party));
  const TierSpec tier = DataCentreTier(recipe, recipe.topology.datacentres[dc], env);
  auto van = env.make_van(party + "/scheduler");
  comm::Scheduler scheduler(tier, van.get());
  return scheduler.Run(tier.scheduler_endpoint);
}

Status RunGlobalServer(const Recipe& recipe, int rank, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));
  const ClusterContext ctx = MakeContext(recipe, &setup);
  const std::string name = std::string(kCentral) + "/global-server" + std::to_string(rank);
  auto van = env.make_van(name);
  Postoffice po(GlobalTier(recipe, env), NodeInfo{-1, NodeRole::kServer, rank, name, kCentral, ""}, van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, recipe.topology.central_host)));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout layout, Layout(recipe, *setup.model, recipe.topology.global_servers));
  GEOMX_ASSIGN_OR_RETURN(auto policy, MakeGlobalServerPolicy(ctx, layout));
  comm::KvServer server(&po, kAppId, policy->handler());
  GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
  return FinalizeWhenDone(po);
}

Status RunLocalServer(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(int dc_index, FindDataCentre(recipe, party));
  const DataCentre& dc = recipe.topology.datacentres[dc_index];
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));
  const ClusterContext ctx = MakeContext(recipe, &setup);
  const std::string name = ServerName(party, rank);

  // Upward: a worker of the global tier.
  auto global_van = env.make_van(name + "@global");
  Postoffice global_po(GlobalTier(recipe, env),
                       NodeInfo{-1, NodeRole::kWorker, GlobalRankOfLocalServer(recipe, dc_index, rank), name, party, ""},
                       global_van.get());
  GEOMX_RETURN_IF_ERROR(global_po.Start(env.node_bind(name + "@global", dc.host)));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout global_layout, Layout(recipe, *setup.model, recipe.topology.global_servers));
  auto upper = std::make_unique<comm::KvWorker>(&global_po, kAppId, global_layout);
  GEOMX_RETURN_IF_ERROR(global_po.Barrier("all"));

  // Downward: the server of its data centre's tier.
  auto local_van = env.make_van(name);
  Postoffice local_po(DataCentreTier(recipe, dc, env), NodeInfo{-1, NodeRole::kServer, rank, name, party, ""},
                      local_van.get());
  GEOMX_RETURN_IF_ERROR(local_po.Start(env.node_bind(name, dc.host)));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout local_layout, Layout(recipe, *setup.model, dc.servers));
  GEOMX_ASSIGN_OR_RETURN(auto policy,
                         MakeLocalServerPolicy(ctx, local_layout, LocalServerArgs{dc_index, rank, upper.get()}));
  comm::KvServer server(&local_po, kAppId, policy->handler());
  // Teardown, also on early returns: upward requests still pending are cancelled first, while the aggregator,
  // the server and both postoffices that their callbacks reach are alive.
  struct CancelUpward {
    std::unique_ptr<comm::KvWorker>& kv;
    ~CancelUpward() { kv.reset(); }
  } cancel_upward{upper};
  GEOMX_RETURN_IF_ERROR(local_po.Barrier("all"));
  GEOMX_RETURN_IF_ERROR(FinalizeWhenDone(local_po));
  return FinalizeWhenDone(global_po);
}

Status RunMasterWorker(const Recipe& recipe, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));  // initial weights from recipe.seed
  const ClusterContext ctx = MakeContext(recipe, &setup);
  const std::string name = std::string(kCentral) + "/master-worker";
  auto van = env.make_van(name);
  Postoffice po(GlobalTier(recipe, env), NodeInfo{-1, NodeRole::kWorker, MasterWorkerRank(recipe), name, kCentral, ""},
                van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, recipe.topology.central_host)));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout layout, Layout(recipe, *setup.model, recipe.topology.global_servers));
  comm::KvWorker kv(&po, kAppId, layout);
  GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
  GEOMX_RETURN_IF_ERROR(SendInitialState(ctx, kv));
  GEOMX_LOG(kInfo) << "master worker: optimizer " << recipe.optimizer.name << " and " << setup.model->Parameters().size()
                   << " initial tensors sent to the global servers";
  return FinalizeWhenDone(po);
}

Status RunWorker(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env,
                 const std::atomic<bool>* interrupted) {
  GEOMX_ASSIGN_OR_RETURN(int dc_index, FindDataCentre(recipe, party));
  const DataCentre& dc = recipe.topology.datacentres[dc_index];
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));
  const ClusterContext ctx = MakeContext(recipe, &setup);
  nn::Module& model = *setup.model;
  auto opt_or = nn::CreateOptimizer(recipe.optimizer);
  if (!opt_or.ok()) return opt_or.status().WithContext("optimizer");
  std::unique_ptr<nn::Optimizer> optimizer = std::move(opt_or).value();

  const std::string name = WorkerName(party, rank);
  auto van = env.make_van(name);
  Postoffice po(DataCentreTier(recipe, dc, env), NodeInfo{-1, NodeRole::kWorker, rank, name, party, ""}, van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, dc.host)));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout layout, Layout(recipe, model, dc.servers));
  comm::KvWorker kv(&po, kAppId, layout);
  GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
  WorkerArgs wargs;
  wargs.dc_index = dc_index;
  wargs.rank = rank;
  wargs.worker_index = WorkerIndex(recipe, dc_index, rank);
  wargs.kv = &kv;
  wargs.optimizer = optimizer.get();
  wargs.env = &env;
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<WorkerSync> sync, MakeWorkerSync(ctx, wargs));
  GEOMX_RETURN_IF_ERROR(sync->PullInitial(model.Parameters()));
  SlowdownUpdate slowed(sync.get(), dc.slowdown);
  ParameterUpdate* update = dc.slowdown > 1.0f ? static_cast<ParameterUpdate*>(&slowed) : sync.get();

  const int world = recipe.topology.total_workers();
  const int index = WorkerIndex(recipe, dc_index, rank);
  data::DataLoader loader(setup.data.train, data::TrainLoaderOptions(recipe.data, index, world, recipe.seed));

  const bool evaluator = index == 0;
  TrainerOptions to;
  to.training = recipe.training;
  to.schedule = recipe.lr_schedule;
  to.base_lr = recipe.optimizer.lr;
  to.device = setup.device;
  to.iterations_per_epoch = ctx.iterations_per_epoch;
  to.evaluate = evaluator;
  sync->Configure(&to);

  std::optional<RunDir> run;
  std::unique_ptr<Progress> progress;
  std::unique_ptr<RunListener> listener;
  // The evaluating worker reports the whole job's traffic: the sum of every process's published counters.
  const TrafficSource traffic = [dir = env.out_dir] {
    return dir.empty() ? comm::TrafficSnapshot{} : ReadTrafficDir(std::filesystem::path(dir) / "traffic");
  };
  if (evaluator && !env.out_dir.empty()) {
    GEOMX_ASSIGN_OR_RETURN(RunDir opened, RunDir::Open(env.out_dir));
    run.emplace(std::move(opened));
    progress = std::make_unique<Progress>(stdout, false, recipe.training.log_every);
    listener = std::make_unique<RunListener>(&*run, progress.get(), &model, optimizer.get(), recipe.model.name,
                                             traffic);
  }
  Trainer trainer(to, &model, optimizer.get(), &loader, setup.data.test.get(), listener.get(), interrupted, update);
  TrainState state;
  Result<StopReason> reason = trainer.Run(&state);
  if (run) {
    const char* status = !reason.ok() ? "failed" : *reason == StopReason::kInterrupted ? "interrupted" : "completed";
    Status ws = run->WriteSummary(SummaryJson(status, reason.ok() ? "" : reason.status().ToString(), recipe, setup,
                                              model.NumParameters(), state, *run, traffic()));
    if (!ws.ok()) GEOMX_LOG(kWarning) << "cannot write summary: " << ws.ToString();
  }
  if (env.on_worker_done) env.on_worker_done(name, model);
  if (!reason.ok()) return reason.status().WithContext(name);
  return po.Finalize();
}

}  // namespace geomx::cli
