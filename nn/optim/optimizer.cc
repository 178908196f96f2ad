// The nine built-in rules (sgd ... adamw, ftrl) share one class: they differ only in the engine UpdateRule and the
// names of their state slots. The update math itself lives once, in engine/kernels (ops::ApplyUpdate).
#include "nn/optim/optimizer.h"

#include <sstream>
#include <utility>

#include "engine/autograd/variable.h"
#include "engine/base/check.h"
#include "engine/ops.h"

namespace geomx::nn {
namespace {

std::string Num(float v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

class RuleOptimizer : public Optimizer {
 public:
  RuleOptimizer(std::string name, UpdateRule rule, std::vector<std::string> slots, const OptimizerConfig& c)
      : Optimizer(c.lr), name_(std::move(name)), rule_(rule), slots_(std::move(slots)) {
    GEOMX_CHECK_EQ(static_cast<int>(slots_.size()), UpdateRuleStateCount(rule)) << "optimizer " << name_;
    hyper_.weight_decay = c.weight_decay;
    hyper_.momentum = c.momentum;
    hyper_.beta1 = c.beta1;
    hyper_.beta2 = c.beta2;
    hyper_.rho = c.rho;
    hyper_.eps = c.eps;
    hyper_.l1 = c.l1;
    hyper_.ftrl_beta = c.ftrl_beta;
  }

  std::string_view name() const override { return name_; }

  void StepKey(const std::string& key, const Tensor& grad, Tensor* weight) override {
    GEOMX_CHECK(weight != nullptr && weight->defined() && grad.defined()) << "StepKey('" << key << "')";
    GEOMX_CHECK(grad.shape() == weight->shape()) << "StepKey('" << key << "'): grad " << grad.shape().ToString()
                                                 << " vs weight " << weight->shape().ToString();
    std::vector<Tensor>& slots = state_[key];
    if (slots.empty()) {
      for (size_t i = 0; i < slots_.size(); ++i) {
        slots.push_back(Tensor::Zeros(weight->shape(), weight->dtype(), weight->device()));
      }
    }
    std::vector<Tensor*> state;
    for (Tensor& s : slots) {
      GEOMX_CHECK(s.shape() == weight->shape()) << "StepKey('" << key << "'): weight shape changed from "
                                                << s.shape().ToString() << " to " << weight->shape().ToString();
      // State restored from a checkpoint (CPU) or a module moved after its first step follows the weight.
      if (s.device() != weight->device()) s = s.To(weight->device());
      state.push_back(&s);
    }
    UpdateHyper h = hyper_;
    h.lr = lr_;
    h.step = step_ + 1;
    ops::ApplyUpdate(rule_, h, grad, weight, state);
  }

  std::map<std::string, Tensor> StateDict() const override {
    std::map<std::string, Tensor> out;
    for (const auto& [key, slots] : state_) {
      for (size_t i = 0; i < slots.size(); ++i) out.emplace(key + "/" + slots_[i], slots[i]);
    }
    return out;
  }

  Status LoadState(const std::map<std::string, Tensor>& state, int64_t step) override {
    std::map<std::string, std::vector<Tensor>> loaded;
    for (const auto& [name, t] : state) {
      const size_t slash = name.rfind('/');
      const std::string slot = slash == std::string::npos ? "" : name.substr(slash + 1);
      size_t idx = 0;
      while (idx < slots_.size() && slots_[idx] != slot) ++idx;
      if (slash == std::string::npos || slash == 0 || idx == slots_.size()) {
        return Status::InvalidArgument("optimizer state '" + name + "' is not a slot of " + name_);
      }
      std::vector<Tensor>& slots = loaded[name.substr(0, slash)];
      slots.resize(slots_.size());
      slots[idx] = t.Clone();
    }
    for (const auto& [key, slots] : loaded) {
      for (size_t i = 0; i < slots.size(); ++i) {
        if (!slots[i].defined()) {
          return Status::InvalidArgument("optimizer state for '" + key + "' lacks slot '" + slots_[i] + "'");
        }
        if (slots[i].shape() != slots[0].shape()) {
          return Status::InvalidArgument("optimizer state '" + key + "/" + slots_[i] + "' has shape " +
                                         slots[i].shape().ToString() + ", other slots " +
                                         slots[0].shape().ToString());
        }
      }
    }
    if (step < 0) return Status::InvalidArgument("optimizer step must be >= 0, got " + std::to_string(step));
    state_ = std::move(loaded);
    step_ = step;
    return Status::Ok();
  }

 private:
  std::string name_;
  UpdateRule rule_;
  std::vector<std::string> slots_;  // state slot names, in ApplyUpdate's state order
  UpdateHyper hyper_;               // lr and step are filled per call
  std::map<std::string, std::vector<Tensor>> state_;
};

OptimizerRegistry::Factory RuleFactory(std::string name, UpdateRule rule, std::vector<std::string> slots) {
  return [name = std::move(name), rule,
          slots = std::move(slots)](const OptimizerConfig& c) -> Result<std::unique_ptr<Optimizer>> {
    return std::unique_ptr<Optimizer>(std::make_unique<RuleOptimizer>(name, rule, slots, c));
  };
}

GEOMX_REGISTER(OptimizerRegistry, "sgd", RuleFactory("sgd", UpdateRule::kSgd, {}), "plain SGD (+ L2)");
GEOMX_REGISTER(OptimizerRegistry, "momentum", RuleFactory("momentum", UpdateRule::kMomentum, {"v"}),
               "SGD with heavy-ball momentum");
GEOMX_REGISTER(OptimizerRegistry, "nesterov", RuleFactory("nesterov", UpdateRule::kNesterov, {"v"}),
               "SGD with Nesterov momentum");
GEOMX_REGISTER(OptimizerRegistry, "adagrad", RuleFactory("adagrad", UpdateRule::kAdaGrad, {"h"}), "AdaGrad");
GEOMX_REGISTER(OptimizerRegistry, "rmsprop", RuleFactory("rmsprop", UpdateRule::kRmsProp, {"s"}), "RMSProp");
GEOMX_REGISTER(OptimizerRegistry, "adadelta", RuleFactory("adadelta", UpdateRule::kAdaDelta, {"s", "u"}),
               "AdaDelta (lr scales the step; 1.0 is the paper's rule)");
GEOMX_REGISTER(OptimizerRegistry, "adam", RuleFactory("adam", UpdateRule::kAdam, {"m", "v"}), "Adam (L2 decay)");
GEOMX_REGISTER(OptimizerRegistry, "adamw", RuleFactory("adamw", UpdateRule::kAdamW, {"m", "v"}),
               "AdamW (decoupled weight decay)");
GEOMX_REGISTER(OptimizerRegistry, "ftrl", RuleFactory("ftrl", UpdateRule::kFtrl, {"z", "n"}),
               "FTRL-Proximal (per-coordinate rates, L1 sparsity; lr is alpha, weight_decay is l2), as MXNet's Ftrl");
GEOMX_REGISTER(OptimizerRegistry, "ftml", RuleFactory("ftml", UpdateRule::kFtml, {"d", "v", "z"}),
               "FTML, Follow the Moving Leader (beta1, beta2, eps; weight_decay is L2), as MXNet's FTML");

}  // namespace

void Optimizer::Step(const std::vector<Parameter*>& params) {
  autograd::NoGradGuard no_grad;
  for (Parameter* p : params) {
    GEOMX_CHECK(!p->var().row_sparse_grad().defined())
        << "Optimizer::Step: " << p->key() << " holds a row-sparse gradient (GradLayout::kRowSparse); Step reads "
        << "dense gradients only";
    if (!p->grad().defined()) continue;
    Tensor w = p->data();
    StepKey(p->key(), p->grad(), &w);
    // ApplyUpdate writes in place; should a backend ever return fresh storage, keep the parameter pointing at it.
    if (!w.SharesStorageWith(p->data())) p->var().set_data(w);
  }
  ++step_;
}

Result<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config) {
  const auto& registry = OptimizerRegistry::Global();
  if (!registry.Has(config.name)) {
    return Status::NotFound("optimizer.name: " + registry.Create(config.name, config).status().message());
  }
  GEOMX_RETURN_IF_ERROR(ValidateOptimizerConfig(config));
  return registry.Create(config.name, config);
}

std::vector<std::string> OptimizerNames() { return OptimizerRegistry::Global().Names(); }

Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  std::vector<std::string> errors;
  auto require = [&errors](bool ok, const char* field, const char* rule, float got) {
    if (!ok) errors.push_back(std::string("optimizer.") + field + ": must be " + rule + ", got " + Num(got));
  };
  if (!OptimizerRegistry::Global().Has(c.name)) {
    std::string known;
    for (const std::string& n : OptimizerNames()) known += (known.empty() ? "" : ", ") + n;
    errors.push_back("optimizer.name: unknown '" + c.name + "' (known: " + known + ")");
  }
  require(c.lr > 0.0f, "lr", "> 0", c.lr);
  require(c.weight_decay >= 0.0f, "weight_decay", ">= 0", c.weight_decay);
  require(c.momentum >= 0.0f && c.momentum < 1.0f, "momentum", "in [0, 1)", c.momentum);
  require(c.beta1 >= 0.0f && c.beta1 < 1.0f, "beta1", "in [0, 1)", c.beta1);
  require(c.beta2 >= 0.0f && c.beta2 < 1.0f, "beta2", "in [0, 1)", c.beta2);
  require(c.rho >= 0.0f && c.rho < 1.0f, "rho", "in [0, 1)", c.rho);
  require(c.eps > 0.0f, "eps", "> 0", c.eps);
  if (errors.empty()) return Status::Ok();
  std::string msg;
  for (const std::string& e : errors) msg += (msg.empty() ? "" : "; ") + e;
  return Status::InvalidArgument(msg);
}

}  // namespace geomx::nn
