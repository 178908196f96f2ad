#include "nn/layers/sequential.h"

namespace geomx::nn {

Sequential& Sequential::Add(std::unique_ptr<Module> m) {
  return Add(std::to_string(layers_.size()), std::move(m));
}

Sequential& Sequential::Add(const std::string& name, std::unique_ptr<Module> m) {
  layers_.push_back(RegisterModule(name, std::move(m)));
  return *this;
}

autograd::Variable Sequential::Forward(const autograd::Variable& x) {
  autograd::Variable y = x;
  for (Module* m : layers_) y = m->Forward(y);
  return y;
}

}  // namespace geomx::nn
