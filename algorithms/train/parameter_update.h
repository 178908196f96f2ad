// ParameterUpdate: how gradients become new weights after backward, as a strategy, so a parameter-server worker
// swaps it in without forking the training loop (docs/style.md R12). LocalUpdate runs the optimizer in process;
// the sync modes' workers (algorithms/sync/sync_mode.h, WorkerSync) push and pull through the parameter server.
// Not thread-safe: the trainer's thread calls it.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/status.h"
#include "nn/optim/optimizer.h"
#include "nn/parameter.h"

namespace geomx::train {

class ParameterUpdate {
 public:
  virtual ~ParameterUpdate() = default;
  // Called after backward of iteration `round` (0-based, global across epochs). Errors (a peer that does not
  // answer) stop training.
  virtual Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) = 0;
  // The training loss of the step about to be Applied (the trainer calls it just before Apply). A sync worker
  // passes it to its servers with the push (DGT's adaptive k, comm/dgt/dgt_link.h); others ignore it.
  virtual void SetLoss(double loss) { (void)loss; }
  // Whether the update wants each parameter's gradient as soon as the backward pass has finished it (P3: that
  // layer's slices leave while the earlier layers' backward still runs). The trainer then calls GradientReady
  // during backward, last layers first, for each parameter that got a gradient, and Apply afterwards for the
  // rest. Not with gradient clipping (which needs every gradient first).
  virtual bool WantsGradientsEarly() const { return false; }
  // params[index]'s gradient of iteration `round` is final. An error stops training (returned after backward).
  virtual Status GradientReady(const std::vector<nn::Parameter*>& params, size_t index, int64_t round) {
    (void)params;
    (void)index;
    (void)round;
    return Status::Ok();
  }
  // True when the strategy has taken part in every synchronisation round of the job (ESync: rounds, not local
  // iterations, end a run); the Trainer then stops as completed. Checked after every Apply.
  virtual bool Finished() const { return false; }
  // Makes the parameters hold the complete result of every Apply so far. An update may return from Apply before
  // all new values are written (P3 writes each layer's just before its next forward pass); the trainer calls
  // Flush before it reads the weights without a forward pass: checkpoints and the end of the run.
  virtual Status Flush() { return Status::Ok(); }
};

class LocalUpdate final : public ParameterUpdate {
 public:
  explicit LocalUpdate(nn::Optimizer* optimizer) : optimizer_(optimizer) {}  // borrowed
  Status Apply(const std::vector<nn::Parameter*>& params, int64_t) override {
    optimizer_->Step(params);
    return Status::Ok();
  }

 private:
  nn::Optimizer* optimizer_;
};

}  // namespace geomx::train
