// ParamExchange: a worker's exchange of one value per parameter (its gradient, or its weights) with the parameter
// server through its KvLink, and the writing of the answers into the parameters. Every mode's worker uses it.
//
//   eager  Exchange() returns once every answer is written into the parameters (or their gradients).
//   lazy   the link has P3's send path (comm/kv_link.h) and the answers are new weights: Exchange() returns once
//          every slice is queued; each parameter is written just before its module's next forward pass (an
//          nn::Module forward hook waits for that parameter's answers), so layer 0's next forward starts as soon
//          as layer 0's slices are back while later layers are still on the network. Flush() writes everything.
//
// What never reads a half-updated parameter: a forward pass (training and evaluation both run the hooks), the
// next Exchange (it first writes every answer of the previous one), and whoever calls Flush (the trainer before
// checkpoints and at the end of the run, train::ParameterUpdate::Flush). An eager exchange of weights writes the
// answers straight into host parameters (no staging copy), so after it FAILED some parameters may hold the new
// round's slices and others the old; the trainer returns that error and trains no further.
//
// Parameter i of the list passed to the first call is key i of the tier's layout. Not thread-safe: the trainer's
// thread calls it (answers land on the receive thread). Borrows the link and the model (both must outlive it);
// the destructor removes the hook and waits for answers still in flight.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "comm/kv_link.h"
#include "engine/base/status.h"
#include "engine/tensor.h"
#include "nn/module.h"

namespace geomx::sync {

class ParamExchange {
 public:
  // `model` may be null: every exchange is eager then.
  ParamExchange(comm::KvLink* link, nn::Module* model);
  ~ParamExchange();

  ParamExchange(const ParamExchange&) = delete;
  ParamExchange& operator=(const ParamExchange&) = delete;

  enum class Answer {
    kWeights,       // the answers replace the parameters' values (lazily with P3)
    kMeanGradient,  // the answers become the parameters' gradients (always eager; the caller steps)
  };

  // Round kInitRound: the job's initial weights into the parameters.
  Status PullInitial(const std::vector<nn::Parameter*>& params);
  // The servers' values once `round` completed (kInitRound: the initial weights) into the parameters.
  Status PullAfter(const std::vector<nn::Parameter*>& params, int64_t round);
  // How Exchange may send the values.
  enum class Values {
    kCopied,  // the link copies them before the call returns (the caller may write them again, e.g. weights)
    // Nothing writes the tensors' storage ever again (gradients: every backward pass makes fresh ones, and
    // HostGradients' copies are the exchange's own): on a dense tier the storage itself goes onto the network.
    kFinal,
  };
  // Sends values[i] (host f32, parameter i's size) for every parameter at `round` and writes the answers.
  Status Exchange(const std::vector<nn::Parameter*>& params, const std::vector<Tensor>& values, int64_t round,
                  Answer answer, Values sent = Values::kCopied);
  // Lazy exchanges of gradients for weights (P3): sends params[index]'s gradient of `round` now, while backward
  // still runs; the Exchange of that round then sends only the parameters not sent yet.
  Status SendEarly(const std::vector<nn::Parameter*>& params, size_t index, int64_t round);
  // Writes every answer received or still due (lazy exchanges). The first failed slice's error, if any.
  Status Flush();

  bool lazy() const { return lazy_; }

 private:
  struct KeyState {
    nn::Parameter* param = nullptr;
    std::vector<float> incoming;  // the answers of the current exchange (written on the receive thread)
    bool done = true;             // every slice answered (mu_)
    bool pending = false;         // answers not yet written into the parameter (trainer thread only)
  };

  Status Prepare(const std::vector<nn::Parameter*>& params);
  // Where an eager exchange writes key i's new weights: the parameter's own memory when it is host f32 (read now,
  // so a replaced tensor is followed), else its staging vector (outs_[i]); CopyStagedWeights then copies those.
  std::vector<float*> WeightTargets() const;
  void CopyStagedWeights(const std::vector<float*>& outs);
  // Starts the async push-pull of keys_[i] for every i in `which` (their states marked pending).
  void Start(const std::vector<size_t>& which, const std::vector<const float*>& in, int64_t round);
  // Waits for key i's answers and writes them into its parameter.
  Status ApplyKey(KeyState& k);
  void BeforeForward(nn::Module& m);

  comm::KvLink* const link_;
  nn::Module* const model_;
  const bool lazy_;
  std::vector<uint64_t> keys_;
  std::vector<KeyState> state_;
  std::vector<float*> outs_;
  std::unordered_map<const nn::Parameter*, size_t> index_;
  int64_t early_round_ = -2;       // the round SendEarly sent keys of (trainer thread)
  std::vector<bool> sent_early_;   // per key, in early_round_
  std::mutex mu_;
  std::condition_variable cv_;
  Status error_;  // the first failed slice (mu_)
};

// Copies `src` into `dst` (any device).
void CopyIntoTensor(const std::vector<float>& src, const Tensor& dst);
// The parameters' gradients (zeros where there is none) / values, as host f32 tensors.
std::vector<Tensor> HostGradients(const std::vector<nn::Parameter*>& params);
std::vector<Tensor> HostValues(const std::vector<nn::Parameter*>& params);

}  // namespace geomx::sync
