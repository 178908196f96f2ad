// sync.mode fsa (fsa.h has the round described).
#include "algorithms/sync/fsa.h"

#include <optional>
#include <string>

#include "algorithms/sync/param_exchange.h"
#include "algorithms/sync/server_optimizer.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/forward_sink.h"
#include "comm/handlers/sync_aggregator.h"

namespace geomx::sync {
namespace {

// The global server's sink: mean gradient, then the server-side optimizer on its master copy.
class OptimizerSink final : public comm::AggregateSink {
 public:
  OptimizerSink(const SyncJob& job, ServerOptimizer* optimizer)
      : server_update_(job.optimizer_where == OptimizerPlacement::kGlobalServer),
        total_workers_(job.total_workers),
        optimizer_(optimizer) {}

  void set_aggregator(const comm::SyncAggregator* agg) { aggregator_ = agg; }

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
    if (!server_update_) return done(Status::Ok(), std::move(mean));  // the workers step on the mean gradient
    if (!optimizer_->HasKey(wire_key)) {
      std::optional<std::vector<float>> init = aggregator_ ? aggregator_->StoredValues(wire_key) : std::nullopt;
      if (!init || init->size() != n) {
        done(Status::FailedPrecondition("key " + std::to_string(wire_key) + " has no initial weights"), Bytes());
        return;
      }
      optimizer_->InitKey(wire_key, *init);
    }
    // A round that fewer workers contributed to (lost ones under topology.failure_policy: continue, or one
    // rejoining later) averaged a smaller batch: the learning rate shrinks by the same share (the linear scaling
    // rule), so for SGD the step is the sum of the gradients over all the job's workers.
    const float lr_scale = contributors < total_workers_
                               ? static_cast<float>(contributors) / static_cast<float>(total_workers_)
                               : 1.0f;
    Result<Bytes> value =
        optimizer_->Step(wire_key, std::span<const float>(mean.as<float>(), n), round, lr_scale);
    if (!value.ok()) return done(value.status(), Bytes());
    done(Status::Ok(), std::move(value).value());
  }

 private:
  const bool server_update_;
  const int total_workers_;
  ServerOptimizer* const optimizer_;
  const comm::SyncAggregator* aggregator_ = nullptr;
};

class FsaGlobalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ServerArgs& args) {
    const SyncJob& job = *args.job;
    auto p = std::unique_ptr<FsaGlobalServer>(new FsaGlobalServer(job));
    GEOMX_RETURN_IF_ERROR(p->optimizer_.SetRule(job.job.optimizer).WithContext("optimizer"));
    comm::SyncAggregatorOptions opts;
    // Each slice is held by one local server per data centre, so one push per data centre and round arrives.
    opts.expected_senders = static_cast<int>(job.datacentres.size());
    opts.tier = args.codec;
    comm::AggregateSink* sink = &p->sink_;
    if (args.overlay != nullptr) {  // TSEngine: relayed sums in, the value broadcast through the local servers
      opts.relayed_pushes = true;
      args.overlay->SetSink(sink);
      sink = args.overlay;
    }
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_, comm::SyncAggregator::Create(args.layout, opts, sink));
    p->sink_.set_aggregator(p->aggregator_.get());
    if (args.round_done && job.optimizer_where == OptimizerPlacement::kGlobalServer) {
      // A round is over on this server when each of its slices stepped. No slice steps round r + 1 before the
      // workers pulled all of round r, which they cannot before the last slice's answer, sent after round_done.
      size_t mine = 0;
      for (uint64_t key : job.job.schema.KeysWith(ps::KeyRole::kParameter)) {
        if (!args.layout.contains(key)) continue;
        for (const comm::KeySlice& s : args.layout.slices(key)) mine += s.server_rank == args.rank ? 1 : 0;
      }
      if (mine > 0) p->optimizer_.OnRoundComplete(mine, args.round_done);
    }
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }
  ps::ServerState* state() override { return &optimizer_; }
  // A lost data centre's local server (topology.failure_policy: continue): rounds complete without its pushes.
  Status RemoveSender(int node_id) override {
    aggregator_->RemoveSender(node_id);
    return Status::Ok();
  }
  // The optimizer's state, and every restored slice's weights as the aggregator's stored value of `round`.
  Status Restore(const ps::StateTensors& saved, int64_t round) override {
    GEOMX_RETURN_IF_ERROR(optimizer_.RestoreState("", saved));
    for (const auto& [name, t] : saved) {
      const std::optional<uint64_t> wire_key = ps::StateIndexAfter(name, "w/");
      if (!wire_key) continue;
      GEOMX_ASSIGN_OR_RETURN(std::vector<float> w, optimizer_.Weights(*wire_key));
      GEOMX_RETURN_IF_ERROR(aggregator_->Restore(*wire_key, w, round).WithContext("snapshot entry " + name));
    }
    return Status::Ok();
  }

 private:
  explicit FsaGlobalServer(const SyncJob& job)
      : optimizer_(job.job.schedule, job.job.plan.iterations_per_epoch, job.job.plan.scheduled_rounds()),
        sink_(job, &optimizer_) {}
  ServerOptimizer optimizer_;
  OptimizerSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

class FsaLocalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const LocalServerArgs& args) {
    auto p = std::unique_ptr<FsaLocalServer>(new FsaLocalServer(args.upper));
    comm::AggregateSink* sink = args.upward != nullptr ? args.upward : &p->sink_;  // TSEngine relays upward
    if (args.overlay != nullptr) {  // TSEngine inside the data centre: relayed sums in, the value through workers
      args.overlay->SetSink(sink);
      sink = args.overlay;
    }
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_,
                           comm::SyncAggregator::Create(args.layout, LocalAggregatorOptions(args), sink));
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }
  Status RemoveSender(int node_id) override {
    aggregator_->RemoveSender(node_id);
    return Status::Ok();
  }

 private:
  explicit FsaLocalServer(comm::KvLink* upper) : sink_(upper) {}
  comm::ForwardSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

// The worker's parameter update through the parameter server. With a server-side optimizer the PS returns new
// weights; otherwise it returns the mean gradient and the worker's own optimizer steps.
class FsaWorker final : public WorkerSync {
 public:
  FsaWorker(const WorkerArgs& args)
      : link_(args.link),
        send_loss_(args.send_loss),
        exchange_(args.link, args.model),
        server_update_(args.job->optimizer_where == OptimizerPlacement::kGlobalServer),
        local_optimizer_(args.optimizer) {}

  Status PullInitial(const std::vector<nn::Parameter*>& params) override { return exchange_.PullInitial(params); }
  // The servers store the weights after each round only with a server-side optimizer; otherwise they store the
  // mean gradient and the model lives on the workers.
  Status PullRejoin(const std::vector<nn::Parameter*>& params, int64_t round) override {
    if (!server_update_) {
      return Status::FailedPrecondition("a restarted worker cannot rejoin with optimizer.where: worker (the "
                                        "model lives on the workers, not on the servers)");
    }
    return exchange_.PullAfter(params, round - 1);
  }

  Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) override {
    if (server_update_) {
      return exchange_.Exchange(params, HostGradients(params), round, ParamExchange::Answer::kWeights,
                                ParamExchange::Values::kFinal);
    }
    GEOMX_RETURN_IF_ERROR(exchange_.Exchange(params, HostGradients(params), round,
                                             ParamExchange::Answer::kMeanGradient, ParamExchange::Values::kFinal));
    local_optimizer_->Step(params);
    return Status::Ok();
  }

  Status Flush() override { return exchange_.Flush(); }
  // Goes with the next push to the local server (DGT's adaptive k at the local server's upward link).
  // P3 with the optimizer at the servers: each layer's gradient leaves as soon as backward has finished it.
  bool WantsGradientsEarly() const override { return server_update_ && exchange_.lazy(); }
  Status GradientReady(const std::vector<nn::Parameter*>& params, size_t index, int64_t round) override {
    return exchange_.SendEarly(params, index, round);
  }
  void SetLoss(double loss) override {
    if (send_loss_) link_->kv()->SetLoss(loss);
  }

 private:
  comm::KvLink* const link_;
  const bool send_loss_;
  ParamExchange exchange_;
  const bool server_update_;
  nn::Optimizer* local_optimizer_;
};

class Fsa final : public SyncMode {
 public:
  Result<std::unique_ptr<ServerPolicy>> MakeGlobalServer(const ServerArgs& args) const override {
    return FsaGlobalServer::Create(args);
  }
  Result<std::unique_ptr<ServerPolicy>> MakeLocalServer(const LocalServerArgs& args) const override {
    return MakeFsaLocalServer(args);
  }
  Result<std::unique_ptr<WorkerSync>> MakeWorker(const WorkerArgs& args) const override {
    return MakeFsaWorker(args);
  }
};

constexpr const char* kName = "fsa";

void FsaRules(const SyncRuleInput& in, std::vector<RuleViolation>* out) {
  if (in.sync->mode != kName || !in.has_topology) return;
  if (in.optimizer_where == OptimizerPlacement::kGlobalServer) {
    CheckWeightsDown(in, "optimizer.where: global-server", "", out);
  }
}

GEOMX_REGISTER_SYNC_MODE((SyncModeDef{
    .name = kName,
    .help = "fully synchronous on both tiers: every worker in every round (HiPS)",
    .traits = {.needs_topology = false, .steps_on_gradients = true, .survives_lost_workers = true,
               .snapshots = true, .forwards_sums = true, .overlay = true},
    .create = [](const SyncSettings&) -> Result<std::unique_ptr<SyncMode>> { return std::unique_ptr<SyncMode>(new Fsa()); },
    .rules = FsaRules}));

}  // namespace

Result<std::unique_ptr<ServerPolicy>> MakeFsaLocalServer(const LocalServerArgs& args) {
  return FsaLocalServer::Create(args);
}

Result<std::unique_ptr<WorkerSync>> MakeFsaWorker(const WorkerArgs& args) {
  if (args.link == nullptr || args.optimizer == nullptr) {
    return Status::InvalidArgument("fsa worker: needs a KvLink and an optimizer");
  }
  return std::unique_ptr<WorkerSync>(new FsaWorker(args));
}

void CheckWeightsDown(const SyncRuleInput& in, const std::string& why, const std::string& fix_suffix,
                      std::vector<RuleViolation>* out) {
  const comm::LinkScheme down = in.links.global_to_local;
  if (!comm::SparsifiesLargeSlices(down, /*wan=*/true)) return;
  std::string message = "'";
  message += comm::LinkSchemeName(down);
  message += "' sends the sparse aggregate of gradients down, but with " + why +
             " the global server returns dense weights; use optimizer.where: worker" + fix_suffix +
             ", or set accelerators.links.global_to_local to none or fp16";
  out->push_back({{"accelerators.links.global_to_local", "accelerators.compression"},
                  "accelerators.links.global_to_local", std::move(message)});
}

}  // namespace geomx::sync
