// "geomx-cnn": exactly the demo CNN of the original GeoMX (its MXNet Gluon example):
//   conv1 5x5x16 (no padding) - relu - maxpool2 - conv2 5x5x32 - relu - maxpool2 - flatten
//   - fc1 256 - relu - fc2 128 - relu - fc3 num_classes.
// On 1x28x28 input with 10 classes: 416 + 12,832 + 131,328 + 32,896 + 1,290 = 178,762 parameters.
// The flatten size follows the input geometry: 32 * ((H - 4) / 2 - 4) / 2 * ((W - 4) / 2 - 4) / 2.
#include "nn/models/conv_pool_net.h"
#include "nn/models/models.h"

namespace geomx::nn {
namespace {

Result<std::unique_ptr<Module>> MakeGeomxCnn(const ModelConfig& c, Rng& rng) {
  static constexpr ConvPoolNetSpec kSpec = {.name = "geomx-cnn", .type_name = "GeomxCnn",
                                           .conv1_channels = 16, .conv1_padding = 0,
                                           .conv2_channels = 32, .fc1 = 256, .fc2 = 128};
  return MakeConvPoolNet(kSpec, c, rng);
}

GEOMX_REGISTER(ModelRegistry, "geomx-cnn", MakeGeomxCnn,
               "GeoMX's demo CNN: conv5x5x16-pool-conv5x5x32-pool-fc256-fc128-fc (178,762 params on 1x28x28)");

}  // namespace
}  // namespace geomx::nn
