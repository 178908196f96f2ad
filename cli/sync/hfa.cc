// sync.mode hfa and diloco, and the averaging machinery esync shares (cli/sync/hfa.h has the round described).
#include "cli/sync/hfa.h"

#include "cli/sync/link_io.h"

#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "comm/codec.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/key_layout.h"
#include "comm/kv_worker.h"

namespace geomx::cli {
namespace {

std::string KeyName(uint64_t wire_key) {
  return "key " + std::to_string(comm::KeyOfWireKey(wire_key)) + " slice " +
         std::to_string(comm::SliceOfWireKey(wire_key));
}

Bytes FloatBytes(const std::vector<float>& v) { return Bytes::CopyVector(v); }

// The global server's sink: mean delta over all workers, then the outer step; answers with the update.
// On a compressed global tier (ClusterContext::GlobalTierCodec) the aggregate is the dense sum of the decoded
// frames, the stored initial weights are a frame, and the answer is a frame of the global_to_local link.
class OuterSink final : public comm::AggregateSink {
 public:
  OuterSink(std::unique_ptr<OuterOptimizer> outer, bool compressed, std::unique_ptr<comm::LinkEncoder> down)
      : outer_(std::move(outer)), compressed_(compressed), down_(std::move(down)) {}
  void set_aggregator(const comm::SyncAggregator* agg) { aggregator_ = agg; }

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  comm::AggregateDone done) override {
    const size_t n = aggregate.count<float>();
    if (contributors < 1 || aggregate.size() != n * sizeof(float)) {
      done(Status::InvalidArgument(KeyName(wire_key) + ": the model deltas are not dense f32"), Bytes());
      return;
    }
    if (!outer_->HasKey(wire_key)) {
      std::optional<Bytes> init = aggregator_ ? aggregator_->Stored(wire_key) : std::nullopt;
      std::vector<float> weights(n);
      if (!init || !DecodeValue(*init, compressed_, weights).ok()) {
        done(Status::FailedPrecondition(KeyName(wire_key) + " has no initial weights of " + std::to_string(n) +
                                        " values from the master worker"),
             Bytes());
        return;
      }
      outer_->InitKey(wire_key, weights);
    }
    std::vector<float> mean(n);
    const float* sum = aggregate.as<float>();
    const float scale = 1.0f / static_cast<float>(contributors);
    for (size_t i = 0; i < n; ++i) mean[i] = sum[i] * scale;
    Result<std::vector<float>> update = outer_->Apply(wire_key, mean, round);
    if (!update.ok()) {
      done(update.status(), Bytes());
      return;
    }
    AveragingStats& stats = AveragingStatsForTesting();
    ++stats.key_syncs;
    if (comm::KeyOfWireKey(wire_key) == 0 && comm::SliceOfWireKey(wire_key) == 0) ++stats.wan_syncs;
    Result<Bytes> answer = EncodeAnswer(down_.get(), wire_key, *update);
    if (!answer.ok()) {
      done(answer.status().WithContext("global_to_local"), Bytes());
      return;
    }
    done(Status::Ok(), std::move(answer).value());
  }

 private:
  std::unique_ptr<OuterOptimizer> outer_;
  const bool compressed_;
  const std::unique_ptr<comm::LinkEncoder> down_;  // null: dense tier
  const comm::SyncAggregator* aggregator_ = nullptr;
};

class AveragingGlobalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                      const OuterRule& rule) {
    GEOMX_ASSIGN_OR_RETURN(auto outer, OuterOptimizer::Create(rule));
    GEOMX_ASSIGN_OR_RETURN(auto down, MakeLinkEncoder(ctx, LinkDirection::kGlobalToLocal));
    const std::string codec = ctx.GlobalTierCodec();
    auto p = std::unique_ptr<AveragingGlobalServer>(
        new AveragingGlobalServer(std::move(outer), !codec.empty(), std::move(down)));
    comm::SyncAggregatorOptions opts;
    opts.reducer = GxReducerName(codec);
    opts.expected_senders = static_cast<int>(ctx.recipe->topology.datacentres.size());
    // The master worker's optimizer settings are the workers' (local) rule; the outer rule comes from sync.*.
    opts.on_control = [](const comm::KvRequest& req) -> Status {
      std::map<std::string, std::string> fields;
      GEOMX_RETURN_IF_ERROR(comm::DecodeFields(req.meta.body, &fields));
      if (fields["command"] != "set-optimizer") {
        return Status::InvalidArgument("unknown control command '" + fields["command"] + "'");
      }
      return OptimizerFromFields(fields).status();
    };
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_, comm::SyncAggregator::Create(layout, opts, &p->sink_));
    p->sink_.set_aggregator(p->aggregator_.get());
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }

 private:
  AveragingGlobalServer(std::unique_ptr<OuterOptimizer> outer, bool compressed,
                        std::unique_ptr<comm::LinkEncoder> down)
      : sink_(std::move(outer), compressed, std::move(down)) {}
  OuterSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

// The local server's sink: the mean of its workers' models; every k2-th sync index the delta goes up.
// Upward on a compressed global tier: the delta is encoded by the local_to_global encoder (its error feedback
// keeps what a sparse push left out for the next sync), answers and initial weights are decoded from frames.
class AveragingLocalSink final : public comm::AggregateSink {
 public:
  AveragingLocalSink(comm::KvWorker* upper, int k2, std::string codec, std::unique_ptr<comm::LinkEncoder> up)
      : upper_(upper), k2_(k2), codec_(std::move(codec)), up_(std::move(up)) {}

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  comm::AggregateDone done) override {
    const size_t n = aggregate.count<float>();
    if (contributors < 1 || aggregate.size() != n * sizeof(float)) {
      done(Status::InvalidArgument(KeyName(wire_key) + ": the workers' models are not dense f32"), Bytes());
      return;
    }
    ++AveragingStatsForTesting().local_averages;
    const float* sum = aggregate.as<float>();
    const float scale = 1.0f / static_cast<float>(contributors);
    std::vector<float> mean(n);
    for (size_t i = 0; i < n; ++i) mean[i] = sum[i] * scale;
    if ((round + 1) % k2_ != 0) {  // a data-centre average: answered at once
      done(Status::Ok(), FloatBytes(mean));
      return;
    }
    std::vector<float> delta(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = milestone_.find(wire_key);
      if (it == milestone_.end() || it->second.size() != n) {
        done(Status::FailedPrecondition(KeyName(wire_key) +
                                        " has no milestone: the workers did not pull the initial weights"),
             Bytes());
        return;
      }
      // Weighted by the workers it averages, so the global mean is over workers, not data centres.
      for (size_t i = 0; i < n; ++i) delta[i] = (mean[i] - it->second[i]) * static_cast<float>(contributors);
    }
    comm::RawRequest req;
    req.command = comm::Command::kPushPull;
    req.codec = codec_;
    req.round = (round + 1) / k2_ - 1;  // the WAN sync index
    req.num_merged = contributors;
    req.wire_keys = {wire_key};
    if (up_) {
      Result<Bytes> frame = up_->Encode(wire_key, delta);
      if (!frame.ok()) {
        done(frame.status().WithContext("local_to_global " + KeyName(wire_key)), Bytes());
        return;
      }
      req.payloads = {std::move(frame).value()};
    } else {
      req.payloads = {FloatBytes(delta)};
    }
    upper_->SendRaw(std::move(req), [this, wire_key, n, done = std::move(done)](Status s, std::vector<Bytes> values) {
      if (!s.ok()) {
        done(s.WithContext("global sync of " + KeyName(wire_key)), Bytes());
        return;
      }
      std::vector<float> update(n);
      Status decoded = values.size() == 1 ? DecodeValue(values[0], !codec_.empty(), update)
                                          : Status::DataLoss("not one value");
      if (!decoded.ok()) {
        done(decoded.WithContext("global sync of " + KeyName(wire_key) + ": the answer"), Bytes());
        return;
      }
      std::vector<float> model;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::vector<float>& m = milestone_[wire_key];
        for (size_t i = 0; i < n; ++i) m[i] += update[i];
        model = m;
      }
      done(Status::Ok(), FloatBytes(model));
    });
  }

  // Initial weights: the global model (the master worker's init push), which is also the first milestone.
  bool FetchInitial(uint64_t wire_key, comm::AggregateDone done) override {
    comm::RawRequest req;
    req.command = comm::Command::kPull;
    req.codec = codec_;
    req.round = comm::kInitRound;
    req.wire_keys = {wire_key};
    upper_->SendRaw(std::move(req), [this, wire_key, done = std::move(done)](Status s, std::vector<Bytes> values) {
      Result<std::vector<float>> w = Status::DataLoss("initial weights of " + KeyName(wire_key) + ": not one value");
      if (!s.ok()) {
        done(s, Bytes());
        return;
      }
      if (values.size() == 1) w = DecodeValue(values[0], !codec_.empty());
      if (!w.ok()) {
        done(w.status(), Bytes());
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        milestone_[wire_key] = *w;
      }
      done(Status::Ok(), FloatBytes(*w));  // the data centre's tier is dense (cli/sync_rules.cc)
    });
    return true;
  }

 private:
  comm::KvWorker* const upper_;
  const int k2_;
  const std::string codec_;                       // the global tier's Meta.codec
  const std::unique_ptr<comm::LinkEncoder> up_;   // null: dense tier
  std::mutex mu_;
  std::map<uint64_t, std::vector<float>> milestone_;  // GUARDED_BY(mu_): the global model at the last sync
};

class AveragingLocalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                      const LocalServerArgs& args, int k2) {
    if (k2 < 1) return Status::InvalidArgument("sync.k2: must be >= 1, got " + std::to_string(k2));
    if (!ctx.LocalTierCodec().empty()) {
      return Status::InvalidArgument("sync.mode " + ctx.recipe->sync.mode +
                                     ": the links inside a data centre carry whole models and stay dense");
    }
    GEOMX_ASSIGN_OR_RETURN(auto up, MakeLinkEncoder(ctx, LinkDirection::kLocalToGlobal));
    auto p = std::unique_ptr<AveragingLocalServer>(
        new AveragingLocalServer(args.upper, k2, ctx.GlobalTierCodec(), std::move(up)));
    comm::SyncAggregatorOptions opts;
    opts.expected_senders = ctx.recipe->topology.datacentres[args.dc_index].workers;
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_, comm::SyncAggregator::Create(layout, opts, &p->sink_));
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }

 private:
  AveragingLocalServer(comm::KvWorker* upper, int k2, std::string codec, std::unique_ptr<comm::LinkEncoder> up)
      : sink_(upper, k2, std::move(codec), std::move(up)) {}
  AveragingLocalSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

void CopyIn(const std::vector<float>& src, const Tensor& dst) {
  if (dst.device().is_cpu()) {
    std::memcpy(dst.raw_data(), src.data(), src.size() * sizeof(float));
  } else {
    Tensor host = Tensor::FromVector(src, dst.shape(), dst.device());
    Tensor(dst).CopyFrom(host);
  }
}

// hfa / diloco: K1 local steps per round.
class HfaWorker final : public AveragingWorker {
 public:
  HfaWorker(comm::KvWorker* kv, nn::Optimizer* optimizer, int k1) : AveragingWorker(kv, optimizer), k1_(k1) {}

 protected:
  int StepsThisRound() const override { return k1_; }

 private:
  const int k1_;
};

}  // namespace

OuterRule OuterRuleOf(const Recipe& r) {
  if (r.sync.mode == "diloco") return OuterRule{r.sync.outer_lr, r.sync.outer_momentum};
  if (r.sync.mode == "esync") return OuterRule{r.sync.esync_global_lr, 0.0f};
  return OuterRule{1.0f, 0.0f};
}

OuterOptimizer::OuterOptimizer() : opt_(nn::LrScheduleConfig{}, 1, 1) {}

Result<std::unique_ptr<OuterOptimizer>> OuterOptimizer::Create(const OuterRule& rule) {
  nn::OptimizerConfig c;
  c.name = rule.momentum > 0 ? "nesterov" : "sgd";
  c.lr = rule.lr;
  c.momentum = rule.momentum;
  c.weight_decay = 0;
  auto outer = std::unique_ptr<OuterOptimizer>(new OuterOptimizer());
  Status s = outer->opt_.SetRule(c);
  if (!s.ok()) return s.WithContext("outer optimizer (sync.outer / sync.esync.global_lr)");
  return outer;
}

Result<std::vector<float>> OuterOptimizer::Apply(uint64_t wire_key, std::span<const float> mean_delta,
                                                 int64_t round) {
  std::lock_guard<std::mutex> lock(mu_);
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> before, opt_.Weights(wire_key));
  std::vector<float> pseudo(mean_delta.size());
  for (size_t i = 0; i < pseudo.size(); ++i) pseudo[i] = -mean_delta[i];
  GEOMX_ASSIGN_OR_RETURN(Bytes after, opt_.Step(wire_key, pseudo, round));
  const float* a = after.as<float>();
  for (size_t i = 0; i < before.size(); ++i) before[i] = a[i] - before[i];
  return before;
}

AveragingStats& AveragingStatsForTesting() {
  static AveragingStats stats;
  return stats;
}

Result<std::unique_ptr<ServerPolicy>> MakeAveragingGlobalServer(const ClusterContext& ctx,
                                                                const comm::KeyLayout& layout, const OuterRule& rule) {
  return AveragingGlobalServer::Create(ctx, layout, rule);
}

Result<std::unique_ptr<ServerPolicy>> MakeAveragingLocalServer(const ClusterContext& ctx,
                                                               const comm::KeyLayout& layout,
                                                               const LocalServerArgs& args, int k2) {
  return AveragingLocalServer::Create(ctx, layout, args, k2);
}

// ---- AveragingWorker ----

void AveragingWorker::Prepare(const std::vector<nn::Parameter*>& params) {
  if (!keys_.empty()) return;
  for (size_t i = 0; i < params.size(); ++i) {
    keys_.push_back(i);
    buffers_.emplace_back(static_cast<size_t>(params[i]->numel()));
  }
  for (auto& b : buffers_) outs_.push_back(b.data());
}

Status AveragingWorker::PullInitial(const std::vector<nn::Parameter*>& params) {
  Prepare(params);
  GEOMX_RETURN_IF_ERROR(kv_->Wait(kv_->Pull(keys_, outs_, comm::kInitRound)));
  for (size_t i = 0; i < params.size(); ++i) CopyIn(buffers_[i], params[i]->data());
  return Status::Ok();
}

Status AveragingWorker::Apply(const std::vector<nn::Parameter*>& params, int64_t) {
  optimizer_->Step(params);
  if (++steps_in_round_ < StepsThisRound()) return Status::Ok();
  GEOMX_RETURN_IF_ERROR(Sync(params));
  steps_in_round_ = 0;
  ++sync_index_;
  return AfterSync();
}

Status AveragingWorker::Sync(const std::vector<nn::Parameter*>& params) {
  Prepare(params);
  std::vector<Tensor> host(params.size());
  std::vector<const float*> values(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    host[i] = params[i]->data().To(Device::Cpu());
    values[i] = host[i].data<float>();
  }
  GEOMX_RETURN_IF_ERROR(kv_->Wait(kv_->PushPull(keys_, values, outs_, sync_index_)));
  for (size_t i = 0; i < params.size(); ++i) CopyIn(buffers_[i], params[i]->data());
  return Status::Ok();
}

// ---- factories ----

Result<std::unique_ptr<ServerPolicy>> MakeHfaGlobalServer(const ClusterContext& ctx, const comm::KeyLayout& layout) {
  return MakeAveragingGlobalServer(ctx, layout, OuterRuleOf(*ctx.recipe));
}

Result<std::unique_ptr<ServerPolicy>> MakeHfaLocalServer(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                         const LocalServerArgs& args) {
  return MakeAveragingLocalServer(ctx, layout, args, ctx.recipe->sync.k2);
}

Result<std::unique_ptr<WorkerSync>> MakeHfaWorker(const ClusterContext& ctx, const WorkerArgs& args) {
  if (ctx.recipe->sync.k1 < 1) {
    return Status::InvalidArgument("sync.k1: must be >= 1, got " + std::to_string(ctx.recipe->sync.k1));
  }
  return std::unique_ptr<WorkerSync>(new HfaWorker(args.kv, args.optimizer, ctx.recipe->sync.k1));
}

}  // namespace geomx::cli
