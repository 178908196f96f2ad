// "lenet5": classic LeNet-5 (LeCun et al. 1998) in its common modern form:
//   conv1 5x5x6 (pad 2) - relu - maxpool2 - conv2 5x5x16 - relu - maxpool2 - flatten
//   - fc1 120 - relu - fc2 84 - relu - fc3 num_classes.
// Choices, documented: ReLU instead of the paper's scaled tanh; max pooling instead of trainable subsampling;
// a full conv2 (every input map connected) instead of the paper's partial connection table; padding 2 on conv1
// so a 28x28 MNIST image behaves like the paper's 32x32 input (16x5x5 = 400 features before fc1). Other input
// sizes keep the same layers and derive the flatten size from the geometry (at least 12x12).
// On 1x28x28 with 10 classes: 156 + 2,416 + 48,120 + 10,164 + 850 = 61,706 parameters.
#include "nn/models/conv_pool_net.h"
#include "nn/models/models.h"

namespace geomx::nn {
namespace {

Result<std::unique_ptr<Module>> MakeLeNet5(const ModelConfig& c, Rng& rng) {
  static constexpr ConvPoolNetSpec kSpec = {.name = "lenet5", .type_name = "LeNet5",
                                           .conv1_channels = 6, .conv1_padding = 2,
                                           .conv2_channels = 16, .fc1 = 120, .fc2 = 84};
  return MakeConvPoolNet(kSpec, c, rng);
}

GEOMX_REGISTER(ModelRegistry, "lenet5", MakeLeNet5,
               "LeNet-5 (ReLU, max pooling, conv1 padded): conv5x5x6-pool-conv5x5x16-pool-fc120-fc84-fc");

}  // namespace
}  // namespace geomx::nn
