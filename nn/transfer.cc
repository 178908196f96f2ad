#include "nn/transfer.h"

#include <map>
#include <utility>

#include "nn/checkpoint.h"

namespace geomx::nn {
namespace {

std::string LayerOf(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(0, dot);
}

}  // namespace

std::vector<std::string> ParameterLayers(Module& model) {
  std::vector<std::string> layers;
  for (Parameter* p : model.Parameters()) {
    const std::string layer = LayerOf(p->key());
    if (layers.empty() || layers.back() != layer) layers.push_back(layer);
  }
  return layers;
}

Status FreezeLayers(Module& model, int n) {
  const std::vector<std::string> layers = ParameterLayers(model);
  if (n < 0 || static_cast<size_t>(n) >= layers.size()) {
    return Status::InvalidArgument("model.freeze: " + std::to_string(n) + " must be in [0, " +
                                   std::to_string(layers.size()) + "): the model has " +
                                   std::to_string(layers.size()) + " parameterised layers and the last one trains");
  }
  size_t layer = 0;
  std::string current;
  for (Parameter* p : model.Parameters()) {
    const std::string name = LayerOf(p->key());
    if (name != current) {
      if (!current.empty()) ++layer;
      current = name;
    }
    p->set_trainable(layer >= static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<InitFromReport> InitFromCheckpoint(const std::filesystem::path& path, const std::string& model_name,
                                          Module& model) {
  std::map<std::string, Tensor> tensors;
  CheckpointMeta meta;
  GEOMX_RETURN_IF_ERROR(ReadTensorFile(path, &tensors, &meta));
  if (meta.model_name != model_name) {
    return Status::InvalidArgument(path.string() + " is a checkpoint of '" + meta.model_name +
                                   "', not of the recipe's model '" + model_name + "'");
  }
  // Every target, parameters then buffers; validated completely before anything is copied.
  std::vector<std::pair<std::string, Tensor>> targets;  // a destination shares the model's storage
  for (Parameter* p : model.Parameters()) targets.emplace_back(p->key(), p->data());
  for (const auto& [name, t] : model.Buffers()) targets.emplace_back(name, *t);
  InitFromReport report;
  std::vector<std::pair<Tensor, const Tensor*>> copies;
  for (const auto& [name, target] : targets) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      report.not_in_file.push_back(name);
    } else if (it->second.shape() != target.shape() || it->second.dtype() != target.dtype()) {
      report.kept_fresh.push_back(name);
    } else {
      report.loaded.push_back(name);
      copies.emplace_back(target, &it->second);
    }
  }
  if (copies.empty()) {
    return Status::InvalidArgument(path.string() + ": no tensor of the checkpoint matches the model by name and "
                                   "shape");
  }
  for (auto& [target, source] : copies) target.CopyFrom(*source);
  return report;
}

}  // namespace geomx::nn
