#include "nn/module.h"

#include <sstream>
#include <utility>

#include "engine/base/check.h"

namespace geomx::nn {
namespace {

// Local registration names must be non-empty and contain no '.', so full keys split unambiguously.
void CheckLocalName(const std::string& name) {
  GEOMX_CHECK(!name.empty()) << "Module: empty registration name";
  GEOMX_CHECK(name.find('.') == std::string::npos) << "Module: name '" << name << "' contains '.'";
}

}  // namespace

std::vector<Parameter*> Module::Parameters() {
  std::vector<Parameter*> params;
  Collect("", &params, nullptr);
  return params;
}

std::vector<Parameter*> Module::TrainableParameters() {
  std::vector<Parameter*> params;
  for (Parameter* p : Parameters()) {
    if (p->trainable()) params.push_back(p);
  }
  return params;
}

std::vector<std::pair<std::string, Tensor*>> Module::Buffers() {
  std::vector<std::pair<std::string, Tensor*>> buffers;
  Collect("", nullptr, &buffers);
  return buffers;
}

int64_t Module::NumParameters() {
  int64_t n = 0;
  for (Parameter* p : Parameters()) n += p->numel();
  return n;
}

void Module::Train(bool on) {
  const bool changed = training_ != on;
  training_ = on;
  if (changed) OnTrainModeChanged();
  for (auto& [name, child] : children_) child->Train(on);
}

void Module::To(Device device) {
  for (auto& p : params_) {
    autograd::Variable& v = p->var();
    v.set_data(v.data().To(device));
    if (v.grad().defined()) v.set_grad(v.grad().To(device));
    if (v.row_sparse_grad().defined()) {
      RowSparseTensor g = v.row_sparse_grad();
      g.values = g.values.To(device);
      v.set_row_sparse_grad(std::move(g));
    }
  }
  for (auto& [name, t] : buffers_) *t = t->To(device);
  for (auto& [name, child] : children_) child->To(device);
}

void Module::ZeroGrad() {
  for (Parameter* p : Parameters()) p->var().ZeroGrad();
}

void Module::SetForwardHook(const ForwardHook& hook) {
  forward_hook_ = hook;
  for (auto& [name, child] : children_) child->SetForwardHook(hook);
}

std::vector<Parameter*> Module::OwnParameters() {
  std::vector<Parameter*> params;
  for (auto& p : params_) params.push_back(p.get());
  return params;
}

std::string Module::Summary() {
  std::string out;
  SummaryLines("", 0, &out);
  return out;
}

Parameter* Module::RegisterParameter(const std::string& name, Tensor init) {
  CheckLocalName(name);
  for (const auto& p : params_) GEOMX_CHECK(p->key() != name) << "Module: duplicate parameter '" << name << "'";
  params_.push_back(std::make_unique<Parameter>(name, std::move(init)));
  return params_.back().get();
}

Tensor* Module::RegisterBuffer(const std::string& name, Tensor init) {
  CheckLocalName(name);
  for (const auto& [n, t] : buffers_) GEOMX_CHECK(n != name) << "Module: duplicate buffer '" << name << "'";
  buffers_.emplace_back(name, std::make_unique<Tensor>(std::move(init)));
  return buffers_.back().second.get();
}

void Module::AddChild(const std::string& name, std::unique_ptr<Module> m) {
  CheckLocalName(name);
  GEOMX_CHECK(m != nullptr) << "Module: null child '" << name << "'";
  for (const auto& [n, c] : children_) GEOMX_CHECK(n != name) << "Module: duplicate child '" << name << "'";
  m->PrefixKeys(name);
  children_.emplace_back(name, std::move(m));
}

void Module::PrefixKeys(const std::string& prefix) {
  for (auto& p : params_) p->key_ = prefix + "." + p->key_;
  for (auto& [n, t] : buffers_) n = prefix + "." + n;
  for (auto& [n, child] : children_) child->PrefixKeys(prefix);
}

// Keys are already full (PrefixKeys), so the walk needs no prefix; the parameter is kept for the declared
// signature.
void Module::Collect(const std::string& /*prefix*/, std::vector<Parameter*>* params,
                     std::vector<std::pair<std::string, Tensor*>>* buffers) {
  if (params != nullptr) {
    for (auto& p : params_) params->push_back(p.get());
  }
  if (buffers != nullptr) {
    for (auto& [n, t] : buffers_) buffers->emplace_back(n, t.get());
  }
  for (auto& [n, child] : children_) child->Collect("", params, buffers);
}

void Module::SummaryLines(const std::string& prefix, int depth, std::string* out) {
  std::ostringstream line;
  line << std::string(static_cast<size_t>(depth) * 2, ' ') << (prefix.empty() ? "(root)" : prefix) << ": "
       << TypeName() << " (" << NumParameters() << " params)\n";
  *out += line.str();
  for (auto& [n, child] : children_) {
    child->SummaryLines(prefix.empty() ? n : prefix + "." + n, depth + 1, out);
  }
}

}  // namespace geomx::nn
