// "lenet5": classic LeNet-5 (LeCun et al. 1998) in its common modern form:
//   conv1 5x5x6 (pad 2) - relu - maxpool2 - conv2 5x5x16 - relu - maxpool2 - flatten
//   - fc1 120 - relu - fc2 84 - relu - fc3 num_classes.
// Choices, documented: ReLU instead of the paper's scaled tanh; max pooling instead of trainable subsampling;
// a full conv2 (every input map connected) instead of the paper's partial connection table; padding 2 on conv1
// so a 28x28 MNIST image behaves like the paper's 32x32 input (16x5x5 = 400 features before fc1). Other input
// sizes keep the same layers and derive the flatten size from the geometry (at least 12x12).
// On 1x28x28 with 10 classes: 156 + 2,416 + 48,120 + 10,164 + 850 = 61,706 parameters.
#include <memory>

#include "nn/init.h"
#include "nn/layers/activation.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/models/models.h"

namespace geomx::nn {
namespace {

class LeNet5 : public Module {
 public:
  LeNet5(const ModelConfig& c, InitKind init, int64_t flat, Rng& rng) {
    conv1_ = RegisterModule(
        "conv1", std::make_unique<Conv2d>(c.in_channels, 6, 5, rng, Conv2dOptions{.padding = 2, .init = init}));
    conv2_ = RegisterModule("conv2", std::make_unique<Conv2d>(6, 16, 5, rng, Conv2dOptions{.init = init}));
    fc1_ = RegisterModule("fc1", std::make_unique<Linear>(flat, 120, rng, LinearOptions{.init = init}));
    fc2_ = RegisterModule("fc2", std::make_unique<Linear>(120, 84, rng, LinearOptions{.init = init}));
    fc3_ = RegisterModule("fc3", std::make_unique<Linear>(84, c.num_classes, rng, LinearOptions{.init = init}));
  }

  autograd::Variable Forward(const autograd::Variable& x) override {
    autograd::Variable h = pool_.Forward(relu_.Forward(conv1_->Forward(x)));
    h = pool_.Forward(relu_.Forward(conv2_->Forward(h)));
    h = flatten_.Forward(h);
    h = relu_.Forward(fc1_->Forward(h));
    h = relu_.Forward(fc2_->Forward(h));
    return fc3_->Forward(h);
  }
  std::string TypeName() const override { return "LeNet5"; }

 private:
  Conv2d* conv1_;
  Conv2d* conv2_;
  Linear* fc1_;
  Linear* fc2_;
  Linear* fc3_;
  // Stateless helpers (not registered: no parameters, no mode-dependent behaviour).
  Activation relu_{ActivationKind::kRelu};
  MaxPool2d pool_{2};
  Flatten flatten_;
};

Result<std::unique_ptr<Module>> MakeLeNet5(const ModelConfig& c, Rng& rng) {
  // conv 5 (pad 2, size kept) -> pool 2 -> conv 5 -> pool 2, per spatial axis.
  auto side = [](int64_t in) { return WindowOutputSize(WindowOutputSize(in, 2, 2, 0) - 4, 2, 2, 0); };
  const int64_t h = side(c.in_height), w = side(c.in_width);
  if (h < 1 || w < 1) {
    return Status::InvalidArgument("lenet5 needs an input of at least 12x12, got " + std::to_string(c.in_height) +
                                   "x" + std::to_string(c.in_width));
  }
  GEOMX_ASSIGN_OR_RETURN(InitKind init, ParseInitKind(c.init));
  return std::unique_ptr<Module>(std::make_unique<LeNet5>(c, init, 16 * h * w, rng));
}

GEOMX_REGISTER(ModelRegistry, "lenet5", MakeLeNet5,
               "LeNet-5 (ReLU, max pooling, conv1 padded): conv5x5x6-pool-conv5x5x16-pool-fc120-fc84-fc");

}  // namespace
}  // namespace geomx::nn
