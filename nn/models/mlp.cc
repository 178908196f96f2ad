// "mlp": flatten - [fc_i - activation - dropout] for each hidden width - fc_out.
// Keys: fc1 ... fc{k} for the hidden layers and fc{k+1} for the output layer (hidden {256, 128} gives fc1, fc2,
// fc3). Dropout layers are added only when model.dropout > 0; each owns an Rng seeded from the model rng.
#include <memory>
#include <string>

#include "engine/op_params.h"
#include "nn/init.h"
#include "nn/layers/activation.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/sequential.h"
#include "nn/models/models.h"

namespace geomx::nn {
namespace {

// A named Sequential: children sit directly under the model, so keys are "fc1.weight", not "0.fc1.weight".
class Mlp : public Sequential {
 public:
  Mlp(const ModelConfig& c, ActivationKind act, InitKind init, Rng& rng) {
    Add("flatten", std::make_unique<Flatten>());
    int64_t width = static_cast<int64_t>(c.in_channels) * c.in_height * c.in_width;
    int index = 1;
    for (int hidden : c.hidden) {
      const std::string n = std::to_string(index++);
      Add("fc" + n, std::make_unique<Linear>(width, hidden, rng, LinearOptions{.init = init}));
      Add("act" + n, std::make_unique<Activation>(act));
      if (c.dropout > 0.0f) Add("dropout" + n, std::make_unique<Dropout>(c.dropout, rng.NextU64()));
      width = hidden;
    }
    Add("fc" + std::to_string(index),
        std::make_unique<Linear>(width, c.num_classes, rng, LinearOptions{.init = init}));
  }

  std::string TypeName() const override { return "Mlp"; }
};

Result<std::unique_ptr<Module>> MakeMlp(const ModelConfig& c, Rng& rng) {
  ActivationKind act;
  if (!ParseActivation(c.activation, &act)) {
    return Status::InvalidArgument("model.activation: unknown '" + c.activation + "'");
  }
  GEOMX_ASSIGN_OR_RETURN(InitKind init, ParseInitKind(c.init));
  return std::unique_ptr<Module>(std::make_unique<Mlp>(c, act, init, rng));
}

GEOMX_REGISTER(ModelRegistry, "mlp", MakeMlp, "multi-layer perceptron: model.hidden widths, activation, dropout");

}  // namespace
}  // namespace geomx::nn
