// The averaging machinery of hfa, diloco and esync (averaging.h has the round described).
#include "algorithms/sync/averaging.h"

#include <map>
#include <optional>
#include <string>

#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/key_layout.h"

namespace geomx::sync {
namespace {

std::string KeyName(uint64_t wire_key) {
  return "key " + std::to_string(comm::KeyOfWireKey(wire_key)) + " slice " +
         std::to_string(comm::SliceOfWireKey(wire_key));
}

// The mean of `contributors` pushes summed in `aggregate` (dense f32), or an error naming the key.
Result<std::vector<float>> MeanOf(uint64_t wire_key, const Bytes& aggregate, int contributors, const char* what) {
  const size_t n = aggregate.count<float>();
  if (contributors < 1 || aggregate.size() != n * sizeof(float)) {
    return Status::InvalidArgument(KeyName(wire_key) + ": the " + what + " are not dense f32");
  }
  std::vector<float> mean(n);
  const float* sum = aggregate.as<float>();
  const float scale = 1.0f / static_cast<float>(contributors);
  for (size_t i = 0; i < n; ++i) mean[i] = sum[i] * scale;
  return mean;
}

// The global server's sink: mean delta over all workers, then the outer step; answers with the update.
class OuterSink final : public comm::AggregateSink {
 public:
  OuterSink(std::unique_ptr<OuterOptimizer> outer, SyncObserver* observer)
      : outer_(std::move(outer)), observer_(observer) {}
  void set_aggregator(const comm::SyncAggregator* agg) { aggregator_ = agg; }
  OuterOptimizer* outer() const { return outer_.get(); }

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  comm::AggregateDone done) override {
    Result<std::vector<float>> mean = MeanOf(wire_key, aggregate, contributors, "model deltas");
    if (!mean.ok()) return done(mean.status(), Bytes());
    if (!outer_->HasKey(wire_key)) {
      std::optional<std::vector<float>> init = aggregator_ ? aggregator_->StoredValues(wire_key) : std::nullopt;
      if (!init || init->size() != mean->size()) {
        return done(Status::FailedPrecondition(KeyName(wire_key) + " has no initial weights of " +
                                               std::to_string(mean->size()) + " values from the master worker"),
                    Bytes());
      }
      outer_->InitKey(wire_key, *init);
    }
    Result<std::vector<float>> update = outer_->Apply(wire_key, *mean, round);
    if (!update.ok()) return done(update.status(), Bytes());
    if (observer_) observer_->OnGlobalAverage(wire_key, round);
    done(Status::Ok(), Bytes::CopyVector(*update));
  }

 private:
  std::unique_ptr<OuterOptimizer> outer_;
  SyncObserver* const observer_;
  const comm::SyncAggregator* aggregator_ = nullptr;
};

class AveragingGlobalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const ServerArgs& args, const OuterRule& rule) {
    OuterRule outer_rule = rule;
    if (MomentumInPush(rule, args.codec)) {  // SparseLoCo: the momentum is in the local servers' error feedback
      outer_rule.momentum = 0.0f;
      outer_rule.sparse_answer = false;
    }
    GEOMX_ASSIGN_OR_RETURN(auto outer,
                           OuterOptimizer::Create(outer_rule, AnswerSparsifierOf(outer_rule, args.codec)));
    auto p = std::unique_ptr<AveragingGlobalServer>(new AveragingGlobalServer(std::move(outer), args.observer));
    comm::SyncAggregatorOptions opts;
    opts.expected_senders = static_cast<int>(args.job->datacentres.size());
    opts.tier = args.codec;
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_, comm::SyncAggregator::Create(args.layout, opts, &p->sink_));
    p->sink_.set_aggregator(p->aggregator_.get());
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }
  ps::ServerState* state() override { return sink_.outer(); }

 private:
  AveragingGlobalServer(std::unique_ptr<OuterOptimizer> outer, SyncObserver* observer)
      : sink_(std::move(outer), observer) {}
  OuterSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

// The local server's sink: the mean of its workers' models; every k2-th sync index the delta goes up.
// With overlap D > 0 the WAN synchronisation of round r runs while the workers go on from the data-centre mean
// m_r; at round r + D the global model it brings (milestone + update) replaces m_r under the workers' progress:
// they get mean + (new milestone - m_r). A local average of round r + D that completes before the update waits.
class AveragingLocalSink final : public comm::AggregateSink, public ps::ServerState {
 public:
  AveragingLocalSink(comm::KvLink* upper, int k2, int overlap, SyncObserver* observer, comm::KeyLayout layout,
                     const std::map<uint64_t, std::vector<float>>* initial)
      : upper_(upper), k2_(k2), overlap_(overlap), observer_(observer), layout_(std::move(layout)),
        initial_(initial) {}

  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  comm::AggregateDone done) override {
    Result<std::vector<float>> mean = MeanOf(wire_key, aggregate, contributors, "workers' models");
    if (!mean.ok()) return done(mean.status(), Bytes());
    if (observer_) observer_->OnLocalAverage(wire_key, round);
    std::unique_lock<std::mutex> lock(mu_);
    auto it = pending_.find(wire_key);
    if (it != pending_.end() && round >= it->second.apply_round) {
      Pending& p = it->second;
      if (!p.arrived) {  // completed by the update's arrival
        p.waiting = Waiting{round, contributors, std::move(mean).value(), std::move(done)};
        return;
      }
      Status s = TakeUpdate(wire_key, &*mean);
      lock.unlock();
      if (!s.ok()) return done(s, Bytes());
    } else {
      lock.unlock();
    }
    AfterCorrection(wire_key, round, contributors, std::move(mean).value(), std::move(done));
  }

  // Initial weights: the global model (the master worker's init push), which is also the first milestone; with
  // sync.initial_weights: seed the same values built here (LocalServerArgs::initial), without the WAN.
  bool FetchInitial(uint64_t wire_key, comm::AggregateDone done) override {
    if (std::optional<std::vector<float>> own = OwnInitial(wire_key)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        milestone_[wire_key] = *own;
      }
      done(Status::Ok(), Bytes::CopyVector(*own));
      return true;
    }
    upper_->PullSlice(wire_key, comm::kInitRound,
                      [this, wire_key, done = std::move(done)](Status s, std::vector<float> w) {
                        if (!s.ok()) return done(s.WithContext("initial weights of " + KeyName(wire_key)), Bytes());
                        {
                          std::lock_guard<std::mutex> lock(mu_);
                          milestone_[wire_key] = w;
                        }
                        done(Status::Ok(), Bytes::CopyVector(w));
                      });
    return true;
  }

  // ps::ServerState: the milestone of every wire key ("<prefix>milestone/<wire key>").
  Status SaveState(const std::string& prefix, ps::StateTensors* out) const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [wk, m] : milestone_) (*out)[prefix + "milestone/" + std::to_string(wk)] = ps::StateVector(m);
    return Status::Ok();
  }
  Status RestoreState(const std::string& prefix, const ps::StateTensors& in) override {
    std::map<uint64_t, std::vector<float>> milestones;
    const std::string head = prefix + "milestone/";
    for (const auto& [name, t] : in) {
      if (name.rfind(head, 0) != 0) continue;
      const std::optional<uint64_t> wk = ps::StateIndexAfter(name, head);
      if (!wk || t.dtype() != DType::kF32) return Status::DataLoss("server state: bad milestone entry " + name);
      milestones[*wk] = t.ToFloatVector();
    }
    std::lock_guard<std::mutex> lock(mu_);
    milestone_ = std::move(milestones);
    return Status::Ok();
  }

 private:
  // The slice `wire_key` of the initial values built here, if there are some for it.
  std::optional<std::vector<float>> OwnInitial(uint64_t wire_key) const {
    if (initial_ == nullptr) return std::nullopt;
    const comm::KeySlice* slice = layout_.FindWireKey(wire_key);
    if (slice == nullptr) return std::nullopt;
    auto it = initial_->find(slice->key);
    if (it == initial_->end() || slice->offset + slice->length > it->second.size()) return std::nullopt;
    const auto first = it->second.begin() + static_cast<std::ptrdiff_t>(slice->offset);
    return std::vector<float>(first, first + static_cast<std::ptrdiff_t>(slice->length));
  }

  struct Waiting {  // a local average held until the WAN update it must include arrives
    int64_t round;
    int contributors;
    std::vector<float> mean;
    comm::AggregateDone done;
  };
  struct Pending {  // a WAN synchronisation whose update the workers have not received yet (overlap > 0)
    int64_t apply_round;
    std::vector<float> sent_mean;  // the data-centre mean it started from
    bool arrived = false;
    Status status;
    std::vector<float> update;
    std::optional<Waiting> waiting;
  };

  // Under mu_: folds the arrived update of `wire_key` into the milestone and into `mean` (mean += new milestone
  // - sent mean), and forgets it; the update's error otherwise.
  Status TakeUpdate(uint64_t wire_key, std::vector<float>* mean) {
    auto it = pending_.find(wire_key);
    Pending p = std::move(it->second);
    pending_.erase(it);
    if (!p.status.ok()) return p.status;
    std::vector<float>& m = milestone_[wire_key];
    if (m.size() != mean->size() || p.sent_mean.size() != mean->size()) {
      return Status::Internal(KeyName(wire_key) + ": milestone and mean differ in length");
    }
    for (size_t i = 0; i < m.size(); ++i) {
      m[i] += p.update[i];
      (*mean)[i] += m[i] - p.sent_mean[i];
    }
    return Status::Ok();
  }

  // The rest of a local average of `round` once any due WAN update is in `mean`: answer it, after a WAN
  // synchronisation on every k2-th round (at once with overlap, the workers going on from `mean`).
  void AfterCorrection(uint64_t wire_key, int64_t round, int contributors, std::vector<float> mean,
                       comm::AggregateDone done) {
    if ((round + 1) % k2_ != 0) return done(Status::Ok(), Bytes::CopyVector(mean));  // a data-centre average
    const size_t n = mean.size();
    std::vector<float> delta(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = milestone_.find(wire_key);
      if (it == milestone_.end() || it->second.size() != n) {
        return done(Status::FailedPrecondition(KeyName(wire_key) +
                                               " has no milestone: the workers did not pull the initial weights"),
                    Bytes());
      }
      // Weighted by the workers it averages, so the global mean is over workers, not data centres.
      for (size_t i = 0; i < n; ++i) delta[i] = (mean[i] - it->second[i]) * static_cast<float>(contributors);
      if (overlap_ > 0) pending_[wire_key] = Pending{.apply_round = round + overlap_, .sent_mean = mean};
    }
    const int64_t wan_round = (round + 1) / k2_ - 1;
    if (overlap_ > 0) {
      upper_->PushPullSlice(wire_key, delta, wan_round, contributors,
                            [this, wire_key, n](Status s, std::vector<float> update) {
                              OnUpdate(wire_key, n, std::move(s), std::move(update));
                            });
      return done(Status::Ok(), Bytes::CopyVector(mean));
    }
    upper_->PushPullSlice(wire_key, delta, wan_round, contributors,
                          [this, wire_key, n, done = std::move(done)](Status s, std::vector<float> update) {
                            if (s.ok() && update.size() != n) {
                              s = Status::DataLoss("not " + std::to_string(n) + " values");
                            }
                            if (!s.ok()) return done(s.WithContext("global sync of " + KeyName(wire_key)), Bytes());
                            std::vector<float> model;
                            {
                              std::lock_guard<std::mutex> lock(mu_);
                              std::vector<float>& m = milestone_[wire_key];
                              for (size_t i = 0; i < n; ++i) m[i] += update[i];
                              model = m;
                            }
                            done(Status::Ok(), Bytes::CopyVector(model));
                          });
  }

  // An overlapped WAN synchronisation's answer: kept for its round, or handed to the local average waiting.
  void OnUpdate(uint64_t wire_key, size_t n, Status s, std::vector<float> update) {
    if (s.ok() && update.size() != n) s = Status::DataLoss("not " + std::to_string(n) + " values");
    std::unique_lock<std::mutex> lock(mu_);
    auto it = pending_.find(wire_key);
    if (it == pending_.end()) return;  // cannot happen: one synchronisation per key in flight
    Pending& p = it->second;
    p.arrived = true;
    p.status = s.ok() ? s : s.WithContext("global sync of " + KeyName(wire_key));
    p.update = std::move(update);
    if (!p.waiting) return;
    Waiting w = std::move(*p.waiting);
    Status taken = TakeUpdate(wire_key, &w.mean);
    lock.unlock();
    if (!taken.ok()) return w.done(taken, Bytes());
    AfterCorrection(wire_key, w.round, w.contributors, std::move(w.mean), std::move(w.done));
  }

  comm::KvLink* const upper_;
  const int k2_;
  const int overlap_;  // local averages a WAN synchronisation may take (0: the workers wait for it)
  SyncObserver* const observer_;
  const comm::KeyLayout layout_;
  const std::map<uint64_t, std::vector<float>>* const initial_;  // by key; null: fetch the initial weights
  mutable std::mutex mu_;
  std::map<uint64_t, std::vector<float>> milestone_;  // GUARDED_BY(mu_): the last global model, per wire key
  std::map<uint64_t, Pending> pending_;               // GUARDED_BY(mu_)
};

class AveragingLocalServer final : public ServerPolicy {
 public:
  static Result<std::unique_ptr<ServerPolicy>> Create(const LocalServerArgs& args, int k2, int overlap) {
    if (k2 < 1) return Status::InvalidArgument("sync.k2: must be >= 1, got " + std::to_string(k2));
    if (overlap < 0 || overlap > k2) {
      return Status::InvalidArgument("sync.overlap: must be between 0 and sync.k2 (" + std::to_string(k2) +
                                     "), got " + std::to_string(overlap));
    }
    auto p = std::unique_ptr<AveragingLocalServer>(new AveragingLocalServer(args, k2, overlap));
    GEOMX_ASSIGN_OR_RETURN(p->aggregator_,
                           comm::SyncAggregator::Create(args.layout, LocalAggregatorOptions(args), &p->sink_));
    return std::unique_ptr<ServerPolicy>(std::move(p));
  }
  comm::ServerHandler* handler() override { return aggregator_.get(); }
  ps::ServerState* state() override { return &sink_; }

 private:
  AveragingLocalServer(const LocalServerArgs& args, int k2, int overlap)
      : sink_(args.upper, k2, overlap, args.observer, args.layout, args.initial) {}
  AveragingLocalSink sink_;
  std::unique_ptr<comm::SyncAggregator> aggregator_;
};

}  // namespace

bool MomentumInPush(const OuterRule& rule, const comm::TierCodec& tier) {
  return rule.momentum_in_push && tier.compressed && comm::SparsifiesLargeSlices(tier.push.scheme, tier.push.wan);
}

AnswerSparsifier AnswerSparsifierOf(const OuterRule& rule, const comm::TierCodec& tier) {
  AnswerSparsifier s;
  const comm::LinkCodecConfig& answer = tier.answer;
  s.enabled = rule.sparse_answer && tier.compressed && comm::SparsifiesLargeSlices(answer.scheme, answer.wan);
  s.size_lower_bound = answer.size_lower_bound;
  s.bsc = answer.bsc;
  s.bsc.momentum = 0.0f;  // error feedback only: the outer optimizer has the momentum
  return s;
}

OuterOptimizer::OuterOptimizer(const AnswerSparsifier& sparsifier)
    : opt_(nn::LrScheduleConfig{}, 1, 1), sparsifier_(sparsifier) {}

Result<std::unique_ptr<OuterOptimizer>> OuterOptimizer::Create(const OuterRule& rule,
                                                               const AnswerSparsifier& sparsifier) {
  nn::OptimizerConfig c;
  c.name = rule.momentum > 0 ? "nesterov" : "sgd";
  c.lr = rule.lr;
  c.momentum = rule.momentum;
  c.weight_decay = 0;
  auto outer = std::unique_ptr<OuterOptimizer>(new OuterOptimizer(sparsifier));
  Status s = outer->opt_.SetRule(c);
  if (!s.ok()) return s.WithContext("outer optimizer (sync.outer / sync.esync.global_lr)");
  if (sparsifier.enabled) {
    Result<std::unique_ptr<comm::Compressor>> topk = comm::MakeCompressor("bsc", outer->sparsifier_.bsc);
    if (!topk.ok()) return topk.status().WithContext("the global server's answer sparsifier (accelerators.bsc)");
    outer->topk_ = std::move(topk).value();
  }
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
  if (!topk_ || before.size() < sparsifier_.size_lower_bound) return before;
  // Compressed after the outer step: top-k of (update + residual); the rest stays in the residual.
  Result<Bytes> frame = topk_->Encode(before, residual_[wire_key]);
  if (!frame.ok()) return frame.status().WithContext(KeyName(wire_key) + ": sparse answer");
  std::vector<float> answer(before.size());
  GEOMX_RETURN_IF_ERROR(comm::DecodeFrame(*frame, answer));
  return answer;
}

std::vector<float> OuterOptimizer::Residual(uint64_t wire_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = residual_.find(wire_key);
  if (it != residual_.end() && !it->second.residual.empty()) return it->second.residual;
  Result<std::vector<float>> w = opt_.Weights(wire_key);
  return w.ok() ? std::vector<float>(w->size(), 0.0f) : std::vector<float>();
}

Status OuterOptimizer::SaveState(const std::string& prefix, ps::StateTensors* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [wk, st] : residual_) {
    if (!st.residual.empty()) (*out)[prefix + "residual/" + std::to_string(wk)] = ps::StateVector(st.residual);
  }
  return opt_.SaveState(prefix, out);
}

Status OuterOptimizer::RestoreState(const std::string& prefix, const ps::StateTensors& in) {
  std::map<uint64_t, comm::CompressorState> residual;
  const std::string head = prefix + "residual/";
  for (const auto& [name, t] : in) {
    if (name.rfind(head, 0) != 0) continue;
    const std::optional<uint64_t> wk = ps::StateIndexAfter(name, head);
    if (!wk || t.dtype() != DType::kF32) return Status::DataLoss("server state: bad residual entry " + name);
    residual[*wk].residual = t.ToFloatVector();
  }
  std::lock_guard<std::mutex> lock(mu_);
  GEOMX_RETURN_IF_ERROR(opt_.RestoreState(prefix, in));
  residual_ = std::move(residual);
  return Status::Ok();
}

Result<std::unique_ptr<ServerPolicy>> MakeAveragingGlobalServer(const ServerArgs& args, const OuterRule& rule) {
  return AveragingGlobalServer::Create(args, rule);
}

Result<std::unique_ptr<ServerPolicy>> MakeAveragingLocalServer(const LocalServerArgs& args, int k2, int overlap) {
  return AveragingLocalServer::Create(args, k2, overlap);
}

Status AveragingWorker::Apply(const std::vector<nn::Parameter*>& params, int64_t) {
  optimizer_->Step(params);
  if (++steps_in_round_ < StepsThisRound()) return Status::Ok();
  GEOMX_RETURN_IF_ERROR(exchange_.Exchange(params, HostValues(params), sync_index_, ParamExchange::Answer::kWeights));
  if (observer_ && observer_->WantsWorkerModels()) {
    GEOMX_RETURN_IF_ERROR(exchange_.Flush());
    std::vector<std::vector<float>> weights;
    for (const Tensor& t : HostValues(params)) weights.push_back(t.ToFloatVector());
    observer_->OnWorkerModel(worker_index_, sync_index_, weights);
  }
  steps_in_round_ = 0;
  ++sync_index_;
  return AfterSync();
}

}  // namespace geomx::sync
