// sync.mode mixed (mixed.h).
//   worker      as fsa: PushPull(gradients, r) to its local servers, gets the new weights
//   local srv   as fsa: SyncAggregator over its workers -> ForwardSink: the sum goes up (num_merged = workers)
//   global srv  AsyncAggregator: each data centre's sum is applied on arrival by MixedSink, answered at once
#include "algorithms/sync/mixed.h"

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/sync/fsa.h"
#include "engine/base/logging.h"

namespace geomx::sync {

MixedSink::MixedSink(ServerOptimizer* optimizer, std::unique_ptr<DcAsgd> dcasgd)
    : optimizer_(optimizer), dcasgd_(std::move(dcasgd)) {}

bool MixedSink::Init(uint64_t wire_key, std::span<const float> weights) {
  if (!optimizer_->InitKey(wire_key, weights)) return false;
  if (dcasgd_) dcasgd_->InitKey(wire_key, weights);
  return true;
}

bool MixedSink::HasWeights(uint64_t wire_key) const { return optimizer_->HasKey(wire_key); }

Result<Bytes> MixedSink::Apply(uint64_t wire_key, int sender, int64_t round, std::span<const float> sum,
                               int num_merged) {
  if (num_merged < 1) return Status::InvalidArgument("num_merged must be >= 1");
  std::vector<float> grad(sum.begin(), sum.end());
  const float scale = 1.0f / static_cast<float>(num_merged);
  for (float& g : grad) g *= scale;
  if (dcasgd_) {
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> w_now, optimizer_->Weights(wire_key));
    dcasgd_->Compensate(sender, wire_key, grad, w_now);
  }
  GEOMX_ASSIGN_OR_RETURN(Bytes weights, optimizer_->Step(wire_key, grad, round));
  if (dcasgd_) dcasgd_->Record(sender, wire_key, std::span<const float>(weights.as<float>(), weights.count<float>()));
  return weights;
}

Result<Bytes> MixedSink::Read(uint64_t wire_key, int sender) {
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> weights, optimizer_->Weights(wire_key));
  if (dcasgd_ && sender >= 0) dcasgd_->Record(sender, wire_key, weights);
  return Bytes::CopyVector(weights);
}

comm::AsyncAggregatorOptions MixedAggregatorOptions(const SyncJob& job, const MixedConfig& config,
                                                    const comm::TierCodec& codec) {
  comm::AsyncAggregatorOptions o;
  o.senders = job.datacentres;
  o.tier = codec;
  o.max_staleness = config.max_staleness;
  o.last_round = job.job.plan.total_rounds() - 1;  // every worker runs the same iterations
  return o;
}

namespace {

constexpr const char* kName = "mixed";

class MixedGlobalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ServerArgs& args, const MixedConfig& c) {
    const SyncJob& job = *args.job;
    std::unique_ptr<DcAsgd> dcasgd;
    if (c.dcasgd_lambda > 0) {
      dcasgd = std::make_unique<DcAsgd>(
          DcAsgdOptions{.lambda = c.dcasgd_lambda, .adaptive = c.dcasgd_adaptive, .decay = c.dcasgd_decay},
          static_cast<int>(job.datacentres.size()));
    }
    auto p = std::unique_ptr<MixedGlobalServer>(new MixedGlobalServer(job, std::move(dcasgd)));
    GEOMX_RETURN_IF_ERROR(p->optimizer_.SetRule(job.job.optimizer).WithContext("optimizer"));
    Result<std::unique_ptr<comm::AsyncAggregator>> agg =
        comm::AsyncAggregator::Create(args.layout, MixedAggregatorOptions(job, c, args.codec), &p->sink_);
    if (!agg.ok()) return agg.status().WithContext("sync.mode mixed");
    p->aggregator_ = std::move(agg).value();
    p->state_.Add("opt/", &p->optimizer_);
    if (p->sink_.dcasgd()) p->state_.Add("dcasgd/", p->sink_.dcasgd());
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }

  ~MixedGlobalServer() override {
    const comm::AsyncAggregatorStats s = aggregator_->stats();
    std::string per_dc;
    for (size_t i = 0; i < s.applied_by_sender.size(); ++i) {
      per_dc.append(i ? ", " : "").append(names_[i]).append(" ").append(std::to_string(s.applied_by_sender[i]));
    }
    GEOMX_LOG(kInfo) << "mixed: " << s.applied << " updates applied (" << per_dc << "), max staleness "
                     << s.max_staleness << ", " << s.waited << " waited for the bound, " << s.ahead_of_others
                     << " applied before another data centre pushed that round";
  }

  comm::ServerHandler* handler() override { return aggregator_.get(); }
  ps::ServerState* state() override { return &state_; }

 private:
  MixedGlobalServer(const SyncJob& job, std::unique_ptr<DcAsgd> dcasgd)
      : optimizer_(job.job.schedule, job.job.plan.iterations_per_epoch, job.job.plan.scheduled_rounds()),
        sink_(&optimizer_, std::move(dcasgd)),
        names_(job.datacentres) {}

  ServerOptimizer optimizer_;
  MixedSink sink_;
  std::vector<std::string> names_;
  ps::CompositeState state_;
  std::unique_ptr<comm::AsyncAggregator> aggregator_;
};

class Mixed final : public SyncMode {
 public:
  explicit Mixed(MixedConfig config) : config_(config) {}
  Result<std::unique_ptr<ServerPolicy>> MakeGlobalServer(const ServerArgs& args) const override {
    return MixedGlobalServer::Create(args, config_);
  }
  Result<std::unique_ptr<ServerPolicy>> MakeLocalServer(const LocalServerArgs& args) const override {
    return MakeFsaLocalServer(args);
  }
  Result<std::unique_ptr<WorkerSync>> MakeWorker(const WorkerArgs& args) const override {
    return MakeFsaWorker(args);
  }

 private:
  const MixedConfig config_;
};

Result<std::unique_ptr<SyncMode>> CreateMixed(const SyncSettings& s) {
  if (s.max_staleness < 0) return Status::InvalidArgument("sync.max_staleness: must be >= 0");
  if (s.dcasgd_lambda < 0) return Status::InvalidArgument("sync.dcasgd.lambda: must be >= 0");
  return std::unique_ptr<SyncMode>(new Mixed(MixedConfig{.max_staleness = s.max_staleness,
                                                         .dcasgd_lambda = s.dcasgd_lambda,
                                                         .dcasgd_adaptive = s.dcasgd_adaptive,
                                                         .dcasgd_decay = s.dcasgd_decay}));
}

void MixedRules(const SyncRuleInput& in, std::vector<RuleViolation>* out) {
  if (!in.has_topology) return;
  const SyncSettings& s = *in.sync;
  const bool mine = s.mode == kName;
  const std::string got = " (got '" + s.mode + "')";
  if (s.dcasgd_lambda > 0 && !mine) {
    out->push_back({{"sync.dcasgd.lambda", "sync.mode"}, "sync.dcasgd.lambda",
                    "DC-ASGD compensates the staleness of asynchronous updates: it needs sync.mode: mixed" + got});
  }
  if (s.max_staleness > 0 && !mine) {
    out->push_back({{"sync.max_staleness", "sync.mode"}, "sync.max_staleness",
                    "bounds the staleness of asynchronous updates: it needs sync.mode: mixed" + got});
  }
  const int dcs = in.num_datacentres;
  if (mine && s.max_staleness > 0 && s.max_staleness < dcs - 1) {
    out->push_back({{"sync.max_staleness", "topology.datacentres"}, "sync.max_staleness",
                    std::to_string(s.max_staleness) + " cannot be kept with " + std::to_string(dcs) +
                        " data centres: updates computed from the same weights are applied one after the other, "
                        "so the last is " + std::to_string(dcs - 1) + " stale; use at least " +
                        std::to_string(dcs - 1) + " (or 0: no bound)"});
  }
  if (s.dcasgd_adaptive && s.dcasgd_lambda <= 0) {
    out->push_back({{"sync.dcasgd.adaptive", "sync.dcasgd.lambda"}, "sync.dcasgd.adaptive",
                    "adaptive DC-ASGD scales sync.dcasgd.lambda (its lambda0): set sync.dcasgd.lambda > 0 (e.g. 2)"});
  }
  if (mine && in.optimizer_where == OptimizerPlacement::kWorker) {
    out->push_back({{"optimizer.where", "sync.mode"}, "optimizer.where",
                    "sync.mode: mixed applies each data centre's update at the global server on arrival: it needs "
                    "optimizer.where: global-server"});
  }
  if (mine) CheckWeightsDown(in, "sync.mode: mixed", " with sync.mode: fsa", out);
}

GEOMX_REGISTER_SYNC_MODE((SyncModeDef{
    .name = kName,
    .help = "synchronous inside a data centre, asynchronous between them (+ DC-ASGD, staleness bound)",
    .traits = {.steps_on_gradients = true, .update_per_datacentre = true, .forwards_sums = true},
    .create = CreateMixed,
    .rules = MixedRules}));

}  // namespace
}  // namespace geomx::sync
