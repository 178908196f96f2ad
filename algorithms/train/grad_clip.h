// Gradient-norm clipping (recipe key optimizer.clip_norm): PyTorch's clip_grad_norm_ with the L2 norm. Runs
// between backward and the ParameterUpdate (TrainStep), so in parameter-server modes each worker clips its own
// gradient before pushing it. Not thread-safe: the trainer's thread calls it.
#pragma once

#include <vector>

#include "nn/parameter.h"

namespace geomx::train {

// Computes the global L2 norm of every defined gradient of `params` (parameters without a gradient are skipped)
// and, when max_norm / (norm + 1e-6) < 1, scales every gradient in place by that factor. Returns the norm before
// clipping. The norm is summed on the gradients' device; reading it back is the one host-device sync.
// max_norm > 0.
double ClipGradNorm(const std::vector<nn::Parameter*>& params, float max_norm);

}  // namespace geomx::train
