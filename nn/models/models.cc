#include "nn/models/models.h"

#include <sstream>

#include "engine/op_params.h"
#include "nn/init.h"

namespace geomx::nn {
namespace {

std::string Num(float v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

Result<std::unique_ptr<Module>> CreateModel(const ModelConfig& config, Rng& rng) {
  const auto& registry = ModelRegistry::Global();
  if (!registry.Has(config.name)) {
    return Status::NotFound("model.name: " + registry.Create(config.name, config, rng).status().message());
  }
  GEOMX_RETURN_IF_ERROR(ValidateModelConfig(config));
  Result<std::unique_ptr<Module>> model = registry.Create(config.name, config, rng);
  if (!model.ok()) return model.status().WithContext("model '" + config.name + "'");
  return model;
}

std::vector<std::string> ModelNames() { return ModelRegistry::Global().Names(); }

Status ValidateModelConfig(const ModelConfig& c) {
  std::vector<std::string> errors;
  if (!ModelRegistry::Global().Has(c.name)) {
    std::string known;
    for (const std::string& n : ModelNames()) known += (known.empty() ? "" : ", ") + n;
    errors.push_back("model.name: unknown '" + c.name + "' (known: " + known + ")");
  }
  for (size_t i = 0; i < c.hidden.size(); ++i) {
    if (c.hidden[i] <= 0) {
      errors.push_back("model.hidden[" + std::to_string(i) + "]: must be > 0, got " + std::to_string(c.hidden[i]));
    }
  }
  ActivationKind act;
  if (!ParseActivation(c.activation, &act)) {
    errors.push_back("model.activation: unknown '" + c.activation + "' (known: relu, tanh, sigmoid, gelu)");
  }
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) {
    errors.push_back("model.dropout: must be in [0, 1), got " + Num(c.dropout));
  }
  if (Result<InitKind> init = ParseInitKind(c.init); !init.ok()) {
    errors.push_back("model.init: " + init.status().message());
  }
  auto positive = [&errors](const char* field, int v) {
    if (v < 1) errors.push_back(std::string("model.") + field + ": must be >= 1, got " + std::to_string(v));
  };
  positive("in_channels", c.in_channels);
  positive("in_height", c.in_height);
  positive("in_width", c.in_width);
  positive("num_classes", c.num_classes);
  if (errors.empty()) return Status::Ok();
  std::string msg;
  for (const std::string& e : errors) msg += (msg.empty() ? "" : "; ") + e;
  return Status::InvalidArgument(msg);
}

}  // namespace geomx::nn
