#include "algorithms/sync/param_exchange.h"

#include <cstring>
#include <string>

namespace geomx::sync {

void CopyIntoTensor(const std::vector<float>& src, const Tensor& dst) {
  if (dst.device().is_cpu()) {
    if (!src.empty()) std::memcpy(dst.raw_data(), src.data(), src.size() * sizeof(float));
  } else {
    Tensor host = Tensor::FromVector(src, dst.shape(), dst.device());
    Tensor(dst).CopyFrom(host);
  }
}

std::vector<Tensor> HostGradients(const std::vector<nn::Parameter*>& params) {
  std::vector<Tensor> out(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& g = params[i]->grad();
    out[i] = g.defined() ? g.To(Device::Cpu()) : Tensor::Zeros(params[i]->data().shape());
  }
  return out;
}

std::vector<Tensor> HostValues(const std::vector<nn::Parameter*>& params) {
  std::vector<Tensor> out(params.size());
  for (size_t i = 0; i < params.size(); ++i) out[i] = params[i]->data().To(Device::Cpu());
  return out;
}

ParamExchange::ParamExchange(comm::KvLink* link, nn::Module* model)
    : link_(link), model_(model), lazy_(model != nullptr && link->send_path().p3) {}

ParamExchange::~ParamExchange() {
  if (lazy_ && !state_.empty()) model_->SetForwardHook(nullptr);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] {
    for (const KeyState& k : state_) {
      if (!k.done) return false;
    }
    return true;
  });
}

Status ParamExchange::Prepare(const std::vector<nn::Parameter*>& params) {
  if (!state_.empty() || params.empty()) return Status::Ok();
  state_.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    KeyState& k = state_[i];
    k.param = params[i];
    k.incoming.resize(static_cast<size_t>(params[i]->numel()));
    if (link_->layout().length(i) != k.incoming.size()) {
      return Status::FailedPrecondition("worker: key " + std::to_string(i) + " (" + params[i]->key() + ") has " +
                                        std::to_string(link_->layout().length(i)) +
                                        " elements in the key layout, the parameter " +
                                        std::to_string(k.incoming.size()));
    }
    keys_.push_back(i);
    outs_.push_back(k.incoming.data());
    index_[params[i]] = i;
  }
  if (lazy_) model_->SetForwardHook([this](nn::Module& m) { BeforeForward(m); });
  return Status::Ok();
}

Status ParamExchange::PullInitial(const std::vector<nn::Parameter*>& params) {
  return PullAfter(params, comm::kInitRound);
}

std::vector<float*> ParamExchange::WeightTargets() const {
  std::vector<float*> outs = outs_;
  for (size_t i = 0; i < state_.size(); ++i) {
    const Tensor& t = state_[i].param->data();
    if (t.device().is_cpu() && t.dtype() == DType::kF32) outs[i] = t.data<float>();
  }
  return outs;
}

void ParamExchange::CopyStagedWeights(const std::vector<float*>& outs) {
  for (size_t i = 0; i < state_.size(); ++i) {
    if (outs[i] == outs_[i]) CopyIntoTensor(state_[i].incoming, state_[i].param->data());
  }
}

Status ParamExchange::PullAfter(const std::vector<nn::Parameter*>& params, int64_t round) {
  GEOMX_RETURN_IF_ERROR(Prepare(params));
  const std::vector<float*> outs = WeightTargets();
  GEOMX_RETURN_IF_ERROR(link_->Pull(keys_, outs, round));
  CopyStagedWeights(outs);
  return Status::Ok();
}

Status ParamExchange::Exchange(const std::vector<nn::Parameter*>& params, const std::vector<Tensor>& values,
                               int64_t round, Answer answer, Values sent) {
  GEOMX_RETURN_IF_ERROR(Prepare(params));
  // The previous exchange, if a key was not consumed by a forward pass (SendEarly did it for a round it began).
  if (early_round_ != round) GEOMX_RETURN_IF_ERROR(Flush());
  std::vector<const float*> in(values.size());
  for (size_t i = 0; i < values.size(); ++i) in[i] = values[i].data<float>();
  if (!lazy_ || answer == Answer::kMeanGradient) {
    // Eager: every answer at once (P3 still orders the slices on the network). Final values go out without a
    // copy on a dense tier (their storage travels: a receiver in this process may even keep it), and new weights
    // land in the host parameters themselves: the answer is copied once, from the received frame.
    std::vector<Bytes> shared;
    if (sent == Values::kFinal) {
      for (const Tensor& v : values) shared.push_back(Bytes::Wrap(v.storage(), v.raw_data(), v.nbytes()));
    }
    const std::vector<float*> outs = answer == Answer::kWeights ? WeightTargets() : outs_;
    GEOMX_RETURN_IF_ERROR(sent == Values::kFinal ? link_->PushPull(keys_, shared, outs, round)
                                                 : link_->PushPull(keys_, in, outs, round));
    if (answer == Answer::kWeights) {
      CopyStagedWeights(outs);
      return Status::Ok();
    }
    for (KeyState& k : state_) {
      k.param->var().set_grad(Tensor::FromVector(k.incoming, k.param->data().shape(), k.param->data().device()));
    }
    return Status::Ok();
  }
  std::vector<size_t> which;
  for (size_t i = 0; i < state_.size(); ++i) {
    if (early_round_ != round || !sent_early_[i]) which.push_back(i);
  }
  early_round_ = -2;
  Start(which, in, round);
  return Status::Ok();
}

Status ParamExchange::SendEarly(const std::vector<nn::Parameter*>& params, size_t index, int64_t round) {
  GEOMX_RETURN_IF_ERROR(Prepare(params));
  if (!lazy_ || index >= state_.size()) return Status::Ok();  // Exchange sends it with the rest
  if (early_round_ != round) {
    GEOMX_RETURN_IF_ERROR(Flush());  // the previous exchange's answers (its forward pass consumed them already)
    early_round_ = round;
    sent_early_.assign(state_.size(), false);
  }
  if (sent_early_[index]) return Status::Ok();
  sent_early_[index] = true;
  const Tensor g = HostGradients({params[index]})[0];
  std::vector<const float*> in(state_.size(), nullptr);
  in[index] = g.data<float>();
  Start({index}, in, round);  // the link copies the values before it returns
  return Status::Ok();
}

void ParamExchange::Start(const std::vector<size_t>& which, const std::vector<const float*>& in, int64_t round) {
  if (which.empty()) return;
  std::vector<uint64_t> keys;
  std::vector<const float*> values;
  std::vector<float*> outs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i : which) {
      state_[i].done = false;
      state_[i].pending = true;
      keys.push_back(keys_[i]);
      values.push_back(in[i]);
      outs.push_back(outs_[i]);
    }
  }
  link_->PushPullAsync(keys, values, outs, round, [this, which](size_t j, Status s) {
    // Notify under the lock: the destructor returns (and destroys cv_) once every key is done (TSan).
    std::lock_guard<std::mutex> lock(mu_);
    KeyState& k = state_[which[j]];
    k.done = true;
    if (!s.ok() && error_.ok()) error_ = s.WithContext("parameter " + k.param->key());
    cv_.notify_all();
  });
}

Status ParamExchange::ApplyKey(KeyState& k) {
  if (!k.pending) return Status::Ok();
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return k.done; });
    if (!error_.ok()) return error_;
  }
  CopyIntoTensor(k.incoming, k.param->data());
  k.pending = false;
  return Status::Ok();
}

void ParamExchange::BeforeForward(nn::Module& m) {
  for (nn::Parameter* p : m.OwnParameters()) {
    auto it = index_.find(p);
    if (it != index_.end()) (void)ApplyKey(state_[it->second]);  // an error is returned by the next Flush
  }
}

Status ParamExchange::Flush() {
  for (KeyState& k : state_) GEOMX_RETURN_IF_ERROR(ApplyKey(k));
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace geomx::sync
