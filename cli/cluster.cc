#include "cli/cluster.h"

#include <algorithm>
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
#include "cli/setup.h"
#include "cli/trainer.h"
#include "comm/codec.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/forward_sink.h"
#include "comm/handlers/sync_aggregator.h"
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
  return KeyLayout::Build(ModelKeys(model), num_servers, r.topology.options.split_bytes);
}

// Servers and schedulers wait for the end of the job in Finalize, which gives up after request_timeout_ms; a
// healthy tier whose workers are still training is waited for again.
Status FinalizeWhenDone(Postoffice& po) {
  for (;;) {
    Status s = po.Finalize();
    if (s.ok() || s.code() != StatusCode::kDeadlineExceeded || !po.health().ok()) return s;
  }
}

// ---- optimizer settings shipped by the master worker as typed fields ----

std::map<std::string, std::string> OptimizerFields(const nn::OptimizerConfig& c) {
  auto f = [](float v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    return std::string(buf);
  };
  return {{"command", "set-optimizer"}, {"name", c.name},   {"lr", f(c.lr)},         {"weight_decay", f(c.weight_decay)},
          {"momentum", f(c.momentum)},  {"beta1", f(c.beta1)}, {"beta2", f(c.beta2)}, {"rho", f(c.rho)},
          {"eps", f(c.eps)}};
}

Result<nn::OptimizerConfig> OptimizerFromFields(const std::map<std::string, std::string>& f) {
  nn::OptimizerConfig c;
  auto num = [&](const char* k, float* out) -> Status {
    auto it = f.find(k);
    if (it == f.end()) return Status::InvalidArgument(std::string("optimizer settings: missing field ") + k);
    char* end = nullptr;
    *out = std::strtof(it->second.c_str(), &end);
    if (end == it->second.c_str()) return Status::InvalidArgument(std::string("optimizer settings: bad ") + k);
    return Status::Ok();
  };
  auto name = f.find("name");
  if (name == f.end()) return Status::InvalidArgument("optimizer settings: missing field name");
  c.name = name->second;
  GEOMX_RETURN_IF_ERROR(num("lr", &c.lr));
  GEOMX_RETURN_IF_ERROR(num("weight_decay", &c.weight_decay));
  GEOMX_RETURN_IF_ERROR(num("momentum", &c.momentum));
  GEOMX_RETURN_IF_ERROR(num("beta1", &c.beta1));
  GEOMX_RETURN_IF_ERROR(num("beta2", &c.beta2));
  GEOMX_RETURN_IF_ERROR(num("rho", &c.rho));
  GEOMX_RETURN_IF_ERROR(num("eps", &c.eps));
  GEOMX_RETURN_IF_ERROR(nn::ValidateOptimizerConfig(c));
  return c;
}

// ---- the global server's sink: mean gradient, then the server-side optimizer on its master copy ----

class OptimizerSink final : public comm::AggregateSink {
 public:
  OptimizerSink(const Recipe& r, int64_t iterations_per_epoch)
      : server_update_(r.optimizer_where != "worker"),
        schedule_(r.lr_schedule),
        per_epoch_(iterations_per_epoch),
        total_(iterations_per_epoch * r.training.epochs) {}

  void set_aggregator(const comm::SyncAggregator* agg) { aggregator_ = agg; }

  // kControl from the master worker.
  Status OnControl(const comm::KvRequest& req) {
    std::map<std::string, std::string> fields;
    GEOMX_RETURN_IF_ERROR(comm::DecodeFields(req.meta.body, &fields));
    if (fields["command"] != "set-optimizer") {
      return Status::InvalidArgument("unknown control command '" + fields["command"] + "'");
    }
    GEOMX_ASSIGN_OR_RETURN(nn::OptimizerConfig config, OptimizerFromFields(fields));
    GEOMX_ASSIGN_OR_RETURN(auto opt, nn::CreateOptimizer(config));
    std::lock_guard<std::mutex> lock(mu_);
    base_lr_ = config.lr;
    optimizer_ = std::move(opt);
    return Status::Ok();
  }

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  comm::AggregateDone done) override {
    const size_t n = aggregate.count<float>();
    if (contributors < 1 || aggregate.size() != n * sizeof(float)) {
      done(Status::InvalidArgument("aggregate of key " + std::to_string(wire_key) + " is not dense f32"), Bytes());
      return;
    }
    Bytes mean(n * sizeof(float));
    const float* sum = aggregate.as<float>();
    float* m = reinterpret_cast<float*>(mean.mutable_data());
    const float scale = 1.0f / static_cast<float>(contributors);
    for (size_t i = 0; i < n; ++i) m[i] = sum[i] * scale;
    if (!server_update_) {  // optimizer.where: worker -> the workers step on the mean gradient
      done(Status::Ok(), std::move(mean));
      return;
    }
    Bytes value;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!optimizer_) {
        done(Status::FailedPrecondition("no optimizer settings from the master worker yet"), Bytes());
        return;
      }
      auto it = weights_.find(wire_key);
      if (it == weights_.end()) {
        std::optional<Bytes> init = aggregator_ ? aggregator_->Stored(wire_key) : std::nullopt;
        if (!init || init->size() != n * sizeof(float)) {
          done(Status::FailedPrecondition("key " + std::to_string(wire_key) + " has no initial weights"), Bytes());
          return;
        }
        Tensor w = Tensor::Empty(Shape({static_cast<int64_t>(n)}));
        std::memcpy(w.raw_data(), init->data(), init->size());
        it = weights_.emplace(wire_key, w).first;
      }
      while (optimizer_->step() < round + 1) optimizer_->AdvanceStep();  // Adam's bias correction counts rounds
      const int epoch = per_epoch_ > 0 ? static_cast<int>(round / per_epoch_) : 0;
      optimizer_->SetLr(nn::ScheduledLr(schedule_, base_lr_, round, epoch, total_));
      Tensor grad = Tensor::Empty(Shape({static_cast<int64_t>(n)}));
      std::memcpy(grad.raw_data(), mean.data(), mean.size());
      optimizer_->StepKey(std::to_string(wire_key), grad, &it->second);
      value = Bytes::Copy(it->second.raw_data(), n * sizeof(float));
    }
    done(Status::Ok(), std::move(value));
  }

 private:
  const bool server_update_;
  const nn::LrScheduleConfig schedule_;
  const int64_t per_epoch_;
  const int64_t total_;
  const comm::SyncAggregator* aggregator_ = nullptr;
  std::mutex mu_;
  std::unique_ptr<nn::Optimizer> optimizer_;  // GUARDED_BY(mu_)
  float base_lr_ = 0;                          // GUARDED_BY(mu_)
  std::map<uint64_t, Tensor> weights_;         // GUARDED_BY(mu_): the master copy, per wire key
};

// ---- the worker's parameter update through the parameter server ----

class PsUpdate final : public ParameterUpdate {
 public:
  // `kv` and `local_optimizer` are borrowed. With a server-side optimizer the PS returns new weights; otherwise
  // it returns the mean gradient and `local_optimizer` steps.
  PsUpdate(comm::KvWorker* kv, bool server_update, nn::Optimizer* local_optimizer)
      : kv_(kv), server_update_(server_update), local_optimizer_(local_optimizer) {}

  Status PullInitial(const std::vector<nn::Parameter*>& params) {
    Prepare(params);
    const int64_t ts = kv_->Pull(keys_, outs_, comm::kInitRound);
    GEOMX_RETURN_IF_ERROR(kv_->Wait(ts));
    for (size_t i = 0; i < params.size(); ++i) CopyIn(buffers_[i], params[i]->data());
    return Status::Ok();
  }

  Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) override {
    Prepare(params);
    std::vector<const float*> values(params.size());
    std::vector<Tensor> host(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& g = params[i]->grad();
      if (!g.defined()) {
        host[i] = Tensor::Zeros(params[i]->data().shape());
      } else {
        host[i] = g.To(Device::Cpu());
      }
      values[i] = host[i].data<float>();
    }
    const int64_t ts = kv_->PushPull(keys_, values, outs_, round);
    GEOMX_RETURN_IF_ERROR(kv_->Wait(ts));
    if (server_update_) {
      for (size_t i = 0; i < params.size(); ++i) CopyIn(buffers_[i], params[i]->data());
    } else {
      for (size_t i = 0; i < params.size(); ++i) {
        Tensor mean = Tensor::FromVector(buffers_[i], params[i]->data().shape(), params[i]->data().device());
        params[i]->var().set_grad(mean);
      }
      local_optimizer_->Step(params);
    }
    return Status::Ok();
  }

 private:
  void Prepare(const std::vector<nn::Parameter*>& params) {
    if (!keys_.empty()) return;
    for (size_t i = 0; i < params.size(); ++i) {
      keys_.push_back(i);
      buffers_.emplace_back(static_cast<size_t>(params[i]->numel()));
    }
    for (auto& b : buffers_) outs_.push_back(b.data());
  }
  static void CopyIn(const std::vector<float>& src, const Tensor& dst) {
    if (dst.device().is_cpu()) {
      std::memcpy(dst.raw_data(), src.data(), src.size() * sizeof(float));
    } else {
      Tensor host = Tensor::FromVector(src, dst.shape(), dst.device());
      Tensor(dst).CopyFrom(host);
    }
  }

  comm::KvWorker* kv_;
  const bool server_update_;
  nn::Optimizer* local_optimizer_;
  std::vector<uint64_t> keys_;
  std::vector<std::vector<float>> buffers_;
  std::vector<float*> outs_;
};

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
  const int world = recipe.topology.total_workers();
  const int64_t per_epoch = FsaIterationsPerEpoch(setup.data.train->size(), world, recipe.data.batch_size);
  const std::string name = std::string(kCentral) + "/global-server" + std::to_string(rank);
  auto van = env.make_van(name);
  Postoffice po(GlobalTier(recipe, env), NodeInfo{-1, NodeRole::kServer, rank, name, kCentral, ""}, van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, recipe.topology.central_host)));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout layout, Layout(recipe, *setup.model, recipe.topology.global_servers));
  OptimizerSink sink(recipe, per_epoch);
  comm::SyncAggregatorOptions opts;
  // Each slice is held by one local server per data centre, so one push per data centre and round arrives.
  opts.expected_senders = static_cast<int>(recipe.topology.datacentres.size());
  opts.on_control = [&sink](const comm::KvRequest& req) { return sink.OnControl(req); };
  GEOMX_ASSIGN_OR_RETURN(auto aggregator, comm::SyncAggregator::Create(layout, opts, &sink));
  sink.set_aggregator(aggregator.get());
  comm::KvServer server(&po, kAppId, aggregator.get());
  GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
  return FinalizeWhenDone(po);
}

Status RunLocalServer(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(int dc_index, FindDataCentre(recipe, party));
  const DataCentre& dc = recipe.topology.datacentres[dc_index];
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));
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
  comm::ForwardSink sink(upper.get());
  comm::SyncAggregatorOptions opts;
  opts.expected_senders = dc.workers;
  GEOMX_ASSIGN_OR_RETURN(auto aggregator, comm::SyncAggregator::Create(local_layout, opts, &sink));
  comm::KvServer server(&local_po, kAppId, aggregator.get());
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
  const std::string name = std::string(kCentral) + "/master-worker";
  auto van = env.make_van(name);
  Postoffice po(GlobalTier(recipe, env), NodeInfo{-1, NodeRole::kWorker, MasterWorkerRank(recipe), name, kCentral, ""},
                van.get());
  GEOMX_RETURN_IF_ERROR(po.Start(env.node_bind(name, recipe.topology.central_host)));
  GEOMX_ASSIGN_OR_RETURN(KeyLayout layout, Layout(recipe, *setup.model, recipe.topology.global_servers));
  comm::KvWorker kv(&po, kAppId, layout);
  GEOMX_RETURN_IF_ERROR(po.Barrier("all"));
  GEOMX_RETURN_IF_ERROR(kv.SendControl(comm::EncodeFields(OptimizerFields(recipe.optimizer))));
  std::vector<uint64_t> keys;
  std::vector<Tensor> host;
  std::vector<const float*> values;
  for (nn::Parameter* p : setup.model->Parameters()) {
    keys.push_back(keys.size());
    host.push_back(p->data().To(Device::Cpu()));
  }
  for (const Tensor& t : host) values.push_back(t.data<float>());
  GEOMX_RETURN_IF_ERROR(kv.Wait(kv.Push(keys, values, comm::kInitRound)));
  GEOMX_LOG(kInfo) << "master worker: optimizer " << recipe.optimizer.name << " and " << keys.size()
                   << " initial tensors sent to the global servers";
  return FinalizeWhenDone(po);
}

Status RunWorker(const Recipe& recipe, const std::string& party, int rank, const ClusterEnv& env,
                 const std::atomic<bool>* interrupted) {
  GEOMX_ASSIGN_OR_RETURN(int dc_index, FindDataCentre(recipe, party));
  const DataCentre& dc = recipe.topology.datacentres[dc_index];
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe));
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
  PsUpdate update(&kv, recipe.optimizer_where != "worker", optimizer.get());
  GEOMX_RETURN_IF_ERROR(update.PullInitial(model.Parameters()));

  const int world = recipe.topology.total_workers();
  const int index = WorkerIndex(recipe, dc_index, rank);
  data::DataLoader loader(setup.data.train, data::TrainLoaderOptions(recipe.data, index, world, recipe.seed));

  const bool evaluator = index == 0;
  TrainerOptions to;
  to.training = recipe.training;
  to.schedule = recipe.lr_schedule;
  to.base_lr = recipe.optimizer.lr;
  to.device = setup.device;
  to.iterations_per_epoch = FsaIterationsPerEpoch(setup.data.train->size(), world, recipe.data.batch_size);
  to.evaluate = evaluator;

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
  Trainer trainer(to, &model, optimizer.get(), &loader, setup.data.test.get(), listener.get(), interrupted, &update);
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
