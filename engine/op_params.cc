#include "engine/op_params.h"

namespace geomx {

const char* ActivationName(ActivationKind k) {
  switch (k) {
    case ActivationKind::kRelu: return "relu";
    case ActivationKind::kTanh: return "tanh";
    case ActivationKind::kSigmoid: return "sigmoid";
    case ActivationKind::kGelu: return "gelu";
  }
  return "unknown";
}

bool ParseActivation(const std::string& name, ActivationKind* out) {
  for (ActivationKind k :
       {ActivationKind::kRelu, ActivationKind::kTanh, ActivationKind::kSigmoid, ActivationKind::kGelu}) {
    if (name == ActivationName(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

int UpdateRuleStateCount(UpdateRule rule) {
  switch (rule) {
    case UpdateRule::kSgd: return 0;
    case UpdateRule::kMomentum:
    case UpdateRule::kNesterov:
    case UpdateRule::kAdaGrad:
    case UpdateRule::kRmsProp: return 1;
    case UpdateRule::kAdaDelta:
    case UpdateRule::kAdam:
    case UpdateRule::kAdamW:
    case UpdateRule::kFtrl: return 2;
    case UpdateRule::kFtml: return 3;
  }
  return 0;
}

}  // namespace geomx
