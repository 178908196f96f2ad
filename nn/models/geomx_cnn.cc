// "geomx-cnn": exactly the demo CNN of the original GeoMX (its MXNet Gluon example):
//   conv1 5x5x16 (no padding) - relu - maxpool2 - conv2 5x5x32 - relu - maxpool2 - flatten
//   - fc1 256 - relu - fc2 128 - relu - fc3 num_classes.
// On 1x28x28 input with 10 classes: 416 + 12,832 + 131,328 + 32,896 + 1,290 = 178,762 parameters.
// The flatten size follows the input geometry: 32 * ((H - 4) / 2 - 4) / 2 * ((W - 4) / 2 - 4) / 2.
#include <memory>

#include "engine/autograd/functions.h"
#include "nn/init.h"
#include "nn/layers/activation.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/models/models.h"

namespace geomx::nn {
namespace {

class GeomxCnn : public Module {
 public:
  GeomxCnn(const ModelConfig& c, InitKind init, int64_t flat, Rng& rng) {
    conv1_ =
        RegisterModule("conv1", std::make_unique<Conv2d>(c.in_channels, 16, 5, rng, Conv2dOptions{.init = init}));
    conv2_ = RegisterModule("conv2", std::make_unique<Conv2d>(16, 32, 5, rng, Conv2dOptions{.init = init}));
    fc1_ = RegisterModule("fc1", std::make_unique<Linear>(flat, 256, rng, LinearOptions{.init = init}));
    fc2_ = RegisterModule("fc2", std::make_unique<Linear>(256, 128, rng, LinearOptions{.init = init}));
    fc3_ = RegisterModule("fc3", std::make_unique<Linear>(128, c.num_classes, rng, LinearOptions{.init = init}));
  }

  autograd::Variable Forward(const autograd::Variable& x) override {
    autograd::Variable h = pool_.Forward(relu_.Forward(conv1_->Forward(x)));
    h = pool_.Forward(relu_.Forward(conv2_->Forward(h)));
    h = flatten_.Forward(h);
    h = relu_.Forward(fc1_->Forward(h));
    h = relu_.Forward(fc2_->Forward(h));
    return fc3_->Forward(h);
  }
  std::string TypeName() const override { return "GeomxCnn"; }

 private:
  Conv2d* conv1_;
  Conv2d* conv2_;
  Linear* fc1_;
  Linear* fc2_;
  Linear* fc3_;
  // Stateless helpers (not registered: they have no parameters and no mode-dependent behaviour).
  Activation relu_{ActivationKind::kRelu};
  MaxPool2d pool_{2};
  Flatten flatten_;
};

Result<std::unique_ptr<Module>> MakeGeomxCnn(const ModelConfig& c, Rng& rng) {
  // conv 5 (no pad) -> pool 2 -> conv 5 -> pool 2, per spatial axis.
  auto side = [](int64_t in) { return WindowOutputSize(WindowOutputSize(in - 4, 2, 2, 0) - 4, 2, 2, 0); };
  const int64_t h = side(c.in_height), w = side(c.in_width);
  if (h < 1 || w < 1) {
    return Status::InvalidArgument("geomx-cnn needs an input of at least 16x16, got " +
                                   std::to_string(c.in_height) + "x" + std::to_string(c.in_width));
  }
  GEOMX_ASSIGN_OR_RETURN(InitKind init, ParseInitKind(c.init));
  return std::unique_ptr<Module>(std::make_unique<GeomxCnn>(c, init, 32 * h * w, rng));
}

GEOMX_REGISTER(ModelRegistry, "geomx-cnn", MakeGeomxCnn,
               "GeoMX's demo CNN: conv5x5x16-pool-conv5x5x32-pool-fc256-fc128-fc (178,762 params on 1x28x28)");

}  // namespace
}  // namespace geomx::nn
