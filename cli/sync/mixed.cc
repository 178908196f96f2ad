// sync.mode mixed (cli/sync/mixed.h).
//   worker      as fsa: PushPull(gradients, r) to its local servers, gets the new weights
//   local srv   as fsa: SyncAggregator over its workers -> ForwardSink: the sum goes up (num_merged = workers)
//   global srv  AsyncAggregator: each data centre's sum is applied on arrival by MixedSink, answered at once
#include "cli/sync/mixed.h"

#include <algorithm>
#include <vector>

#include "cli/sync/link_io.h"
#include "engine/base/logging.h"

namespace geomx::cli {

MixedSink::MixedSink(ServerOptimizer* optimizer, std::unique_ptr<DcAsgd> dcasgd,
                     std::unique_ptr<comm::LinkEncoder> down)
    : optimizer_(optimizer), dcasgd_(std::move(dcasgd)), down_(std::move(down)) {}

bool MixedSink::Init(uint64_t wire_key, std::span<const float> weights) {
  if (!optimizer_->InitKey(wire_key, weights)) return false;
  if (dcasgd_) dcasgd_->InitKey(wire_key, weights);
  return true;
}

bool MixedSink::HasWeights(uint64_t wire_key) const { return optimizer_->HasKey(wire_key); }

Result<Bytes> MixedSink::Answer(uint64_t wire_key, std::span<const float> weights) {
  return EncodeAnswer(down_.get(), wire_key, weights);
}

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
  const std::span<const float> w(weights.as<float>(), weights.count<float>());
  if (dcasgd_) dcasgd_->Record(sender, wire_key, w);
  if (!down_) return weights;
  return Answer(wire_key, w);
}

Result<Bytes> MixedSink::Read(uint64_t wire_key, int sender) {
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> weights, optimizer_->Weights(wire_key));
  if (dcasgd_ && sender >= 0) dcasgd_->Record(sender, wire_key, weights);
  return Answer(wire_key, weights);
}

comm::AsyncAggregatorOptions MixedAggregatorOptions(const ClusterContext& ctx) {
  const Recipe& r = *ctx.recipe;
  comm::AsyncAggregatorOptions o;
  for (const auto& dc : r.topology.datacentres) o.senders.push_back(dc.name);
  o.reducer = GxReducerName(ctx.GlobalTierCodec());
  o.max_staleness = r.sync.max_staleness;
  // Every worker runs the same iterations (rounds 0..total-1; cli/trainer.cc total_iterations).
  int64_t total = ctx.iterations_per_epoch * r.training.epochs;
  if (r.training.max_iterations > 0) total = std::min<int64_t>(total, r.training.max_iterations);
  o.last_round = total - 1;
  return o;
}

namespace {

class MixedGlobalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ClusterContext& ctx, const comm::KeyLayout& layout) {
    const Recipe& r = *ctx.recipe;
    GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<comm::LinkEncoder> down,
                           MakeLinkEncoder(ctx, LinkDirection::kGlobalToLocal));
    std::unique_ptr<DcAsgd> dcasgd;
    if (r.sync.dcasgd_lambda > 0) {
      DcAsgdOptions d;
      d.lambda = r.sync.dcasgd_lambda;
      d.adaptive = r.sync.dcasgd_adaptive;
      d.decay = r.sync.dcasgd_decay;
      dcasgd = std::make_unique<DcAsgd>(d, static_cast<int>(r.topology.datacentres.size()));
    }
    auto p = std::unique_ptr<MixedGlobalServer>(new MixedGlobalServer(ctx, std::move(dcasgd), std::move(down)));
    comm::AsyncAggregatorOptions opts = MixedAggregatorOptions(ctx);
    ServerOptimizer* optimizer = &p->optimizer_;
    opts.on_control = [optimizer](const comm::KvRequest& req) { return optimizer->OnControl(req); };
    Result<std::unique_ptr<comm::AsyncAggregator>> agg = comm::AsyncAggregator::Create(layout, opts, &p->sink_);
    if (!agg.ok()) return agg.status().WithContext("sync.mode mixed");
    p->aggregator_ = std::move(agg).value();
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

 private:
  MixedGlobalServer(const ClusterContext& ctx, std::unique_ptr<DcAsgd> dcasgd,
                    std::unique_ptr<comm::LinkEncoder> down)
      : optimizer_(ctx.recipe->lr_schedule, ctx.iterations_per_epoch,
                   ctx.iterations_per_epoch * ctx.recipe->training.epochs),
        sink_(&optimizer_, std::move(dcasgd), std::move(down)) {
    for (const auto& dc : ctx.recipe->topology.datacentres) names_.push_back(dc.name);
  }

  ServerOptimizer optimizer_;
  MixedSink sink_;
  std::vector<std::string> names_;
  std::unique_ptr<comm::AsyncAggregator> aggregator_;
};

}  // namespace

Result<std::unique_ptr<ServerPolicy>> MakeMixedGlobalServer(const ClusterContext& ctx, const comm::KeyLayout& layout) {
  return MixedGlobalServer::Create(ctx, layout);
}

}  // namespace geomx::cli
