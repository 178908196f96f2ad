// "rnn": a recurrent classifier that reads an image row by row: x [N, 1, H, W] is viewed as H steps of W values;
// one LSTM (model.cell: lstm) or GRU (gru) layer per model.hidden width (the lower ones pass every step up, the
// top one its last step), then a linear layer to the classes. Keys: lstm1.weight_ih, lstm1.weight_hh, lstm1.bias,
// ... (gru1.* for the GRU), fc.weight, fc.bias.
#include <memory>
#include <string>

#include "engine/autograd/functions.h"
#include "nn/init.h"
#include "nn/layers/linear.h"
#include "nn/layers/recurrent.h"
#include "nn/layers/sequential.h"
#include "nn/models/models.h"

namespace geomx::nn {
namespace {

// [N, 1, H, W] -> [N, H, W] (the same bytes): row r is step r. Multi-channel images are refused by MakeRnn.
class RowsAsSteps : public Module {
 public:
  autograd::Variable Forward(const autograd::Variable& x) override {
    RunForwardHook();
    const Shape& s = x.shape();
    GEOMX_CHECK(s.rank() == 4) << "rnn expects [N, C, H, W], got " << s.ToString();
    GEOMX_CHECK(s.dim(1) == 1) << "rnn reads one-channel images, got " << s.ToString();
    return autograd::Reshape(x, Shape{s.dim(0), s.dim(2), s.dim(3)});
  }
  std::string TypeName() const override { return "RowsAsSteps"; }
};

class Rnn : public Sequential {
 public:
  Rnn(const ModelConfig& c, RnnCell cell, InitKind init, Rng& rng) {
    Add("rows", std::make_unique<RowsAsSteps>());
    int64_t width = c.in_width;
    for (size_t k = 0; k < c.hidden.size(); ++k) {
      const bool top = k + 1 == c.hidden.size();
      Add(c.cell + std::to_string(k + 1),
          std::make_unique<Recurrent>(cell, width, c.hidden[k], /*sequences=*/!top, rng));
      width = c.hidden[k];
    }
    Add("fc", std::make_unique<Linear>(width, c.num_classes, rng, LinearOptions{.init = init}));
  }
  std::string TypeName() const override { return "Rnn"; }
};

Result<std::unique_ptr<Module>> MakeRnn(const ModelConfig& c, Rng& rng) {
  if (c.in_channels != 1) {
    return Status::InvalidArgument("model rnn reads one-channel images row by row; the data has " +
                                   std::to_string(c.in_channels) + " channels");
  }
  if (c.hidden.empty()) return Status::InvalidArgument("model.hidden: rnn needs at least one LSTM width");
  RnnCell cell;
  if (c.cell == "lstm") {
    cell = RnnCell::kLstm;
  } else if (c.cell == "gru") {
    cell = RnnCell::kGru;
  } else {
    return Status::InvalidArgument("model.cell: unknown '" + c.cell + "' (known: lstm, gru)");
  }
  GEOMX_ASSIGN_OR_RETURN(InitKind init, ParseInitKind(c.init));
  return std::unique_ptr<Module>(std::make_unique<Rnn>(c, cell, init, rng));
}

GEOMX_REGISTER(ModelRegistry, "rnn",
               MakeRnn, "LSTM or GRU classifier reading images row by row: model.cell, model.hidden = layer widths");

}  // namespace
}  // namespace geomx::nn
