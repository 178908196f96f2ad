#include "nn/models/conv_pool_net.h"

#include <string>

#include "nn/init.h"
#include "nn/layers/activation.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"

namespace geomx::nn {
namespace {

class ConvPoolNet : public Module {
 public:
  ConvPoolNet(const ConvPoolNetSpec& s, const ModelConfig& c, InitKind init, int64_t flat, Rng& rng)
      : type_name_(s.type_name) {
    conv1_ = RegisterModule("conv1", std::make_unique<Conv2d>(c.in_channels, s.conv1_channels, 5, rng,
                                                              Conv2dOptions{.padding = s.conv1_padding, .init = init}));
    conv2_ = RegisterModule(
        "conv2", std::make_unique<Conv2d>(s.conv1_channels, s.conv2_channels, 5, rng, Conv2dOptions{.init = init}));
    fc1_ = RegisterModule("fc1", std::make_unique<Linear>(flat, s.fc1, rng, LinearOptions{.init = init}));
    fc2_ = RegisterModule("fc2", std::make_unique<Linear>(s.fc1, s.fc2, rng, LinearOptions{.init = init}));
    fc3_ = RegisterModule("fc3", std::make_unique<Linear>(s.fc2, c.num_classes, rng, LinearOptions{.init = init}));
  }

  // relu then max-pool, computed as max-pool then relu: the same function and the same gradients (relu does not
  // change which input of a window is the largest, nor the first of equal ones, and a window whose largest input is
  // not positive gives 0 and passes no gradient either way), with relu on a quarter of the values.
  autograd::Variable Forward(const autograd::Variable& x) override {
    autograd::Variable h = relu_.Forward(pool_.Forward(conv1_->Forward(x)));
    h = relu_.Forward(pool_.Forward(conv2_->Forward(h)));
    h = flatten_.Forward(h);
    h = relu_.Forward(fc1_->Forward(h));
    h = relu_.Forward(fc2_->Forward(h));
    return fc3_->Forward(h);
  }
  std::string TypeName() const override { return type_name_; }

 private:
  std::string type_name_;
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

// Output size of one axis after conv 5 (padding p) -> pool 2 -> conv 5 -> pool 2.
int64_t Side(int64_t in, int padding) {
  return WindowOutputSize(WindowOutputSize(WindowOutputSize(in, 5, 1, padding), 2, 2, 0) - 4, 2, 2, 0);
}

}  // namespace

Result<std::unique_ptr<Module>> MakeConvPoolNet(const ConvPoolNetSpec& s, const ModelConfig& c, Rng& rng) {
  const int64_t h = Side(c.in_height, s.conv1_padding), w = Side(c.in_width, s.conv1_padding);
  if (h < 1 || w < 1) {
    int64_t min_side = 1;
    while (Side(min_side, s.conv1_padding) < 1) ++min_side;
    return Status::InvalidArgument(std::string(s.name) + " needs an input of at least " + std::to_string(min_side) +
                                   "x" + std::to_string(min_side) + ", got " + std::to_string(c.in_height) + "x" +
                                   std::to_string(c.in_width));
  }
  GEOMX_ASSIGN_OR_RETURN(InitKind init, ParseInitKind(c.init));
  return std::unique_ptr<Module>(
      std::make_unique<ConvPoolNet>(s, c, init, static_cast<int64_t>(s.conv2_channels) * h * w, rng));
}

}  // namespace geomx::nn
