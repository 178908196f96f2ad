// sync.mode fsa: synchronous on both tiers (cli/cluster.h has the round described step by step).
//   worker      PushPull(gradients, r) to its local servers; gets the new weights (or, with optimizer.where:
//               worker, the mean gradient, and steps its own optimizer)
//   local srv   SyncAggregator over its workers -> ForwardSink: the sum goes up with num_merged = its workers
//   global srv  SyncAggregator over the data centres -> OptimizerSink: mean over all workers, then the
//               optimizer step on the master copy (or, with optimizer.where: worker, the mean gradient itself)
// Compression (accelerators, cli/sync/link_io.h): a compressed tier aggregates with "gx_sum"; each sender
// (worker, local server upward, global server answering, local server answering) encodes with its own
// LinkEncoder, so the error-feedback residuals live with the sender.
#include <cstring>
#include <optional>

#include "cli/sync/link_io.h"
#include "cli/sync/server_optimizer.h"
#include "cli/sync/sync_mode.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/forward_sink.h"
#include "comm/handlers/sync_aggregator.h"

namespace geomx::cli {
namespace {

// The global server's sink: mean gradient, then the server-side optimizer on its master copy.
class OptimizerSink final : public comm::AggregateSink {
 public:
  // `down`: the global->local encoder (null: the global tier is dense f32).
  OptimizerSink(const Recipe& r, int64_t iterations_per_epoch, std::unique_ptr<comm::LinkEncoder> down)
      : server_update_(r.optimizer_where != "worker"),
        optimizer_(r.lr_schedule, iterations_per_epoch, iterations_per_epoch * r.training.epochs),
        down_(std::move(down)) {}

  void set_aggregator(const comm::SyncAggregator* agg) { aggregator_ = agg; }
  ServerOptimizer& optimizer() { return optimizer_; }

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
      Answer(wire_key, std::move(mean), std::move(done));
      return;
    }
    if (!optimizer_.HasKey(wire_key)) {
      std::optional<Bytes> init = aggregator_ ? aggregator_->Stored(wire_key) : std::nullopt;
      std::vector<float> weights(n);
      if (!init || !DecodeValue(*init, down_ != nullptr, weights).ok()) {
        done(Status::FailedPrecondition("key " + std::to_string(wire_key) + " has no initial weights"), Bytes());
        return;
      }
      optimizer_.InitKey(wire_key, weights);
    }
    Result<Bytes> value = optimizer_.Step(wire_key, std::span<const float>(mean.as<float>(), n), round);
    if (!value.ok()) {
      done(value.status(), Bytes());
      return;
    }
    Answer(wire_key, std::move(value).value(), std::move(done));
  }

 private:
  // Dense f32 `value` as the global tier's answer (a frame when the tier is compressed).
  void Answer(uint64_t wire_key, Bytes value, comm::AggregateDone done) {
    if (!down_) return done(Status::Ok(), std::move(value));
    Result<Bytes> frame =
        EncodeAnswer(down_.get(), wire_key, std::span<const float>(value.as<float>(), value.count<float>()));
    if (!frame.ok()) return done(frame.status(), Bytes());
    done(Status::Ok(), std::move(frame).value());
  }

  const bool server_update_;
  ServerOptimizer optimizer_;
  const std::unique_ptr<comm::LinkEncoder> down_;
  const comm::SyncAggregator* aggregator_ = nullptr;
};

class FsaGlobalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ClusterContext& ctx, const comm::KeyLayout& layout) {
    GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<comm::LinkEncoder> down,
                           MakeLinkEncoder(ctx, LinkDirection::kGlobalToLocal));
    auto p = std::unique_ptr<FsaGlobalServer>(new FsaGlobalServer(ctx, std::move(down)));
    comm::SyncAggregatorOptions opts;
    opts.reducer = GxReducerName(ctx.GlobalTierCodec());
    // Each slice is held by one local server per data centre, so one push per data centre and round arrives.
    opts.expected_senders = static_cast<int>(ctx.recipe->topology.datacentres.size());
    OptimizerSink* sink = &p->sink_;
    opts.on_control = [sink](const comm::KvRequest& req) { return sink->optimizer().OnControl(req); };
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_, comm::SyncAggregator::Create(layout, opts, &p->sink_));
    p->sink_.set_aggregator(p->aggregator_.get());
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }

 private:
  FsaGlobalServer(const ClusterContext& ctx, std::unique_ptr<comm::LinkEncoder> down)
      : sink_(*ctx.recipe, ctx.iterations_per_epoch, std::move(down)) {}
  OptimizerSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

class FsaLocalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                      const LocalServerArgs& args) {
    GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<comm::LinkEncoder> up, MakeLinkEncoder(ctx, LinkDirection::kLocalToGlobal));
    GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<comm::LinkEncoder> down,
                           MakeLinkEncoder(ctx, LinkDirection::kLocalToWorker));
    auto p = std::unique_ptr<FsaLocalServer>(new FsaLocalServer(args.upper, std::move(up), std::move(down)));
    comm::SyncAggregatorOptions opts;
    opts.reducer = GxReducerName(ctx.LocalTierCodec());
    opts.expected_senders = ctx.recipe->topology.datacentres[args.dc_index].workers;
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_, comm::SyncAggregator::Create(layout, opts, &p->sink_));
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }

 private:
  FsaLocalServer(comm::KvWorker* upper, std::unique_ptr<comm::LinkEncoder> up,
                 std::unique_ptr<comm::LinkEncoder> down)
      : sink_(upper, std::move(up), std::move(down)) {}
  comm::ForwardSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

// The worker's parameter update through the parameter server. With a server-side optimizer the PS returns new
// weights; otherwise it returns the mean gradient and the worker's own optimizer steps.
class PsUpdate final : public WorkerSync {
 public:
  // `io`: the worker's KvWorker with the worker->local encoder (cli/sync/link_io.h).
  PsUpdate(std::unique_ptr<EncodedKv> io, bool server_update, nn::Optimizer* local_optimizer)
      : io_(std::move(io)), server_update_(server_update), local_optimizer_(local_optimizer) {}

  Status PullInitial(const std::vector<nn::Parameter*>& params) override {
    Prepare(params);
    GEOMX_RETURN_IF_ERROR(io_->Pull(keys_, outs_, comm::kInitRound));
    for (size_t i = 0; i < params.size(); ++i) CopyIn(buffers_[i], params[i]->data());
    return Status::Ok();
  }

  Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) override {
    Prepare(params);
    std::vector<const float*> values(params.size());
    std::vector<Tensor> host(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& g = params[i]->grad();
      host[i] = g.defined() ? g.To(Device::Cpu()) : Tensor::Zeros(params[i]->data().shape());
      values[i] = host[i].data<float>();
    }
    GEOMX_RETURN_IF_ERROR(io_->PushPull(keys_, values, outs_, round));
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

  const std::unique_ptr<EncodedKv> io_;
  const bool server_update_;
  nn::Optimizer* local_optimizer_;
  std::vector<uint64_t> keys_;
  std::vector<std::vector<float>> buffers_;
  std::vector<float*> outs_;
};

}  // namespace

Result<std::unique_ptr<ServerPolicy>> MakeFsaGlobalServer(const ClusterContext& ctx, const comm::KeyLayout& layout) {
  return FsaGlobalServer::Create(ctx, layout);
}

Result<std::unique_ptr<ServerPolicy>> MakeFsaLocalServer(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                         const LocalServerArgs& args) {
  return FsaLocalServer::Create(ctx, layout, args);
}

Result<std::unique_ptr<WorkerSync>> MakeFsaWorker(const ClusterContext& ctx, const WorkerArgs& args) {
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<EncodedKv> io,
                         EncodedKv::Create(ctx, args.kv, LinkDirection::kWorkerToLocal));
  return std::unique_ptr<WorkerSync>(
      new PsUpdate(std::move(io), ctx.recipe->optimizer_where != "worker", args.optimizer));
}

}  // namespace geomx::cli
