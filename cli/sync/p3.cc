// sync.mode fsa with accelerators.p3.enabled: the worker side of P3 (priority-based parameter propagation,
// docs/accelerators.md). The servers are fsa's (cli/sync/fsa.cc): the local server answers each wire key's
// pushpull once the global round of that key completed, so answers come back slice by slice.
//
//   layout   every tier cuts tensors into slices of at most accelerators.p3.slice_elements elements
//            (cli/cluster.cc Layout()); one slice = one wire key = one request of its own
//   Apply    copies the gradients out, queues every slice in a PrioritySender with priority -(parameter index)
//            (parameter i of Module::Parameters() is key i, so the first layers go first and a later-queued
//            first-layer slice overtakes queued later-layer ones) and returns without waiting
//   answers  land in a per-key buffer on the receive thread; the parameter itself is written only on the
//            trainer thread
//   forward  a before-forward hook on every module (nn::Module::SetForwardHook) waits for the layer's own keys
//            and writes their new values into the parameters, so the next forward pass of layer 0 starts as
//            soon as layer 0's slices are back while later layers are still on the network
//
// What never reads half-updated weights: a forward pass (training and evaluation both go through the hooks);
// the next Apply (it first waits for and applies every key of the previous round); and the rounds after which
// the trainer reads the weights without a forward pass: the last round of the run, every epoch end and every
// `training.checkpoint_every` iteration are synchronous (Apply waits for all answers before it returns), so
// checkpoints and the final weights (ClusterEnv::on_worker_done) hold the complete round. Known gap: a checkpoint
// written on interruption (Ctrl-C) between two such rounds holds the previous round's weights of the keys whose
// answers were not consumed yet.
//
// optimizer.where: worker: the answers are the mean gradients and the worker's optimizer steps over all
// parameters at once, so Apply sends in priority order but waits for every answer (no overlap with the next
// forward pass); the math is fsa's either way.
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "cli/sync/sync_mode.h"
#include "comm/p3/priority_sender.h"

namespace geomx::cli {
namespace {

// Slices in flight per worker (handed to the network, answer not back). Enough to keep a 50 Mbit/s x 25 ms WAN
// busy with 40,000-element slices (8 x 160 KB > bandwidth x round trip) while the rest of a large model still
// queues behind it in priority order.
constexpr uint64_t kInFlightSlices = 8;

class P3Worker final : public WorkerSync {
 public:
  P3Worker(const ClusterContext& ctx, const WorkerArgs& args)
      : kv_(args.kv),
        model_(ctx.setup->model.get()),
        server_update_(ctx.recipe->optimizer_where != "worker"),
        local_optimizer_(args.optimizer),
        sender_(std::make_unique<comm::PrioritySender>(comm::PrioritySenderOptions{
            .max_in_flight_bytes = kInFlightSlices * sizeof(float) *
                                   static_cast<uint64_t>(ctx.recipe->accelerators.p3_slice_elements)})) {}

  ~P3Worker() override {
    model_->SetForwardHook(nullptr);
    sender_.reset();  // drops queued slices, waits until every slice in flight answered (or failed)
  }

  void Configure(TrainerOptions* options) override {
    iterations_per_epoch_ = options->iterations_per_epoch;
    checkpoint_every_ = options->training.checkpoint_every;
    total_ = static_cast<int64_t>(options->training.epochs) * iterations_per_epoch_;
    if (options->training.max_iterations > 0) total_ = std::min(total_, options->training.max_iterations);
    configured_ = iterations_per_epoch_ > 0;
  }

  Status PullInitial(const std::vector<nn::Parameter*>& params) override {
    GEOMX_RETURN_IF_ERROR(Prepare(params));
    std::vector<uint64_t> keys;
    std::vector<float*> outs;
    for (size_t i = 0; i < params.size(); ++i) {
      keys.push_back(i);
      outs.push_back(keys_[i].incoming.data());
    }
    GEOMX_RETURN_IF_ERROR(kv_->Wait(kv_->Pull(keys, outs, comm::kInitRound)));
    for (KeyState& k : keys_) CopyIn(k.incoming, k.param->data());
    return Status::Ok();
  }

  Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) override {
    GEOMX_RETURN_IF_ERROR(Prepare(params));
    GEOMX_RETURN_IF_ERROR(ApplyAll());  // the previous round, if a key was not consumed by a forward pass
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (KeyState& k : keys_) k.remaining = static_cast<int>(kv_->layout().slices(k.key).size());
    }
    for (KeyState& k : keys_) {
      const Tensor& g = k.param->grad();
      Tensor host = g.defined() ? g.To(Device::Cpu()) : Tensor::Zeros(k.param->data().shape());
      const Bytes grad = Bytes::Copy(host.data<float>(), k.incoming.size() * sizeof(float));
      k.pending = true;
      for (const comm::KeySlice& s : kv_->layout().slices(k.key)) {
        const Bytes payload = grad.Slice(s.offset * sizeof(float), s.length * sizeof(float));
        const bool queued = sender_->Enqueue(-static_cast<int64_t>(k.key), payload.size(),
                                             [this, &k, s, payload, round](comm::PrioritySender::Release release) {
                                               Send(k, s, payload, round, std::move(release));
                                             });
        if (!queued) return Status::Cancelled("P3 worker: the send queue is stopped");
      }
    }
    if (!server_update_) {
      GEOMX_RETURN_IF_ERROR(WaitAll());
      for (KeyState& k : keys_) {
        Tensor mean = Tensor::FromVector(k.incoming, k.param->data().shape(), k.param->data().device());
        k.param->var().set_grad(mean);
        k.pending = false;
      }
      local_optimizer_->Step(params);
      return Status::Ok();
    }
    if (SynchronousRound(round)) return ApplyAll();
    return Status::Ok();
  }

 private:
  struct KeyState {
    uint64_t key = 0;
    nn::Parameter* param = nullptr;
    std::vector<float> incoming;  // the answers of the current round (written on the receive thread)
    int remaining = 0;            // slices of the current round not answered yet (mu_)
    bool pending = false;         // answers not yet written into the parameter (trainer thread only)
  };

  // The key state and the hooks, on the first call.
  Status Prepare(const std::vector<nn::Parameter*>& params) {
    if (!keys_.empty() || params.empty()) return Status::Ok();
    keys_.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      KeyState& k = keys_[i];
      k.key = i;
      k.param = params[i];
      k.incoming.resize(static_cast<size_t>(params[i]->numel()));
      if (kv_->layout().length(i) != k.incoming.size()) {
        return Status::FailedPrecondition("P3 worker: key " + std::to_string(i) + " (" + params[i]->key() +
                                          ") has " + std::to_string(kv_->layout().length(i)) +
                                          " elements in the key layout, the parameter " +
                                          std::to_string(k.incoming.size()));
      }
      index_[params[i]] = i;
    }
    model_->SetForwardHook([this](nn::Module& m) { BeforeForward(m); });
    return Status::Ok();
  }

  // Sender thread: one slice, one request.
  void Send(KeyState& k, const comm::KeySlice& s, const Bytes& payload, int64_t round,
            comm::PrioritySender::Release release) {
    comm::RawRequest req;
    req.command = comm::Command::kPushPull;
    req.round = round;
    req.wire_keys = {s.wire_key};
    req.payloads = {payload};
    kv_->SendRaw(std::move(req), [this, &k, s, release = std::move(release)](Status st, std::vector<Bytes> values) {
      OnAnswer(k, s, std::move(st), values);
      release();
    });
  }

  // Receive thread (or the sender thread for an immediate argument error).
  void OnAnswer(KeyState& k, const comm::KeySlice& s, Status st, const std::vector<Bytes>& values) {
    if (st.ok() && (values.size() != 1 || values[0].size() != s.length * sizeof(float))) {
      st = Status::Internal("P3 worker: the answer for wire key " + std::to_string(s.wire_key) + " of " +
                            k.param->key() + " is not " + std::to_string(s.length) + " dense f32 values");
    }
    if (st.ok()) std::memcpy(k.incoming.data() + s.offset, values[0].data(), values[0].size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      --k.remaining;
      if (!st.ok() && error_.ok()) error_ = st.WithContext("P3 slice " + std::to_string(s.wire_key));
    }
    cv_.notify_all();
  }

  // Trainer thread, before a module's forward pass: its own parameters must hold the latest round.
  void BeforeForward(nn::Module& m) {
    for (nn::Parameter* p : m.OwnParameters()) {
      auto it = index_.find(p);
      if (it != index_.end()) (void)ApplyKey(keys_[it->second]);
    }
  }

  // Waits for `k`'s answers and writes them into the parameter. On a failure the parameter keeps its old value
  // and the error is returned (here and by the next Apply).
  Status ApplyKey(KeyState& k) {
    if (!k.pending) return Status::Ok();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return k.remaining <= 0 || !error_.ok(); });
      if (!error_.ok()) return error_;
    }
    CopyIn(k.incoming, k.param->data());
    k.pending = false;
    return Status::Ok();
  }

  Status ApplyAll() {
    for (KeyState& k : keys_) GEOMX_RETURN_IF_ERROR(ApplyKey(k));
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

  Status WaitAll() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      if (!error_.ok()) return true;
      for (const KeyState& k : keys_) {
        if (k.remaining > 0) return false;
      }
      return true;
    });
    return error_;
  }

  // Rounds after which the trainer reads the weights without a forward pass (see the file comment). Without
  // Configure() every round is synchronous.
  bool SynchronousRound(int64_t round) const {
    if (!configured_) return true;
    const int64_t done = round + 1;
    return done >= total_ || done % iterations_per_epoch_ == 0 ||
           (checkpoint_every_ > 0 && done % checkpoint_every_ == 0);
  }

  static void CopyIn(const std::vector<float>& src, const Tensor& dst) {
    if (dst.device().is_cpu()) {
      std::memcpy(dst.raw_data(), src.data(), src.size() * sizeof(float));
    } else {
      Tensor host = Tensor::FromVector(src, dst.shape(), dst.device());
      Tensor(dst).CopyFrom(host);
    }
  }

  comm::KvWorker* const kv_;
  nn::Module* const model_;
  const bool server_update_;
  nn::Optimizer* const local_optimizer_;
  std::vector<KeyState> keys_;
  std::unordered_map<const nn::Parameter*, size_t> index_;
  std::mutex mu_;
  std::condition_variable cv_;
  Status error_;  // the first failed slice (mu_)
  bool configured_ = false;
  int64_t iterations_per_epoch_ = 0, checkpoint_every_ = 0, total_ = 0;
  std::unique_ptr<comm::PrioritySender> sender_;  // last: destroyed first (its releases touch the members above)
};

}  // namespace

Result<std::unique_ptr<WorkerSync>> MakeP3Worker(const ClusterContext& ctx, const WorkerArgs& args) {
  if (!ctx.LocalTierCodec().empty()) {
    return Status::InvalidArgument(
        "accelerators.p3.enabled: P3 sends dense slices to the local servers; compress only the WAN links");
  }
  if (ctx.setup == nullptr || ctx.setup->model == nullptr || args.kv == nullptr) {
    return Status::InvalidArgument("P3 worker: needs the run's model and a KvWorker");
  }
  return std::unique_ptr<WorkerSync>(new P3Worker(ctx, args));
}

}  // namespace geomx::cli
