#include "algorithms/ps/server_state.h"

#include <cstdint>

#include "nn/checkpoint.h"

namespace geomx::ps {

Status CompositeState::SaveState(const std::string& prefix, StateTensors* out) const {
  for (const auto& [name, part] : parts_) GEOMX_RETURN_IF_ERROR(part->SaveState(prefix + name, out));
  return Status::Ok();
}

Status CompositeState::RestoreState(const std::string& prefix, const StateTensors& in) {
  // Validate every part before any changes: restore into copies is not possible generically, so each part
  // checks its own entries first and only then replaces its state (the contract of RestoreState).
  for (const auto& [name, part] : parts_) GEOMX_RETURN_IF_ERROR(part->RestoreState(prefix + name, in));
  return Status::Ok();
}

Status SaveServerState(const std::filesystem::path& path, const ServerState& state) {
  StateTensors tensors;
  GEOMX_RETURN_IF_ERROR(state.SaveState("", &tensors));
  nn::CheckpointMeta meta;
  meta.model_name = "server-state";
  return nn::WriteTensorFile(path, tensors, meta);
}

Status LoadServerState(const std::filesystem::path& path, ServerState* state) {
  StateTensors tensors;
  nn::CheckpointMeta meta;
  GEOMX_RETURN_IF_ERROR(nn::ReadTensorFile(path, &tensors, &meta));
  if (meta.model_name != "server-state") {
    return Status::InvalidArgument(path.string() + ": not a server state file (it holds '" + meta.model_name + "')");
  }
  return state->RestoreState("", tensors).WithContext(path.string());
}

Tensor StateVector(const std::vector<float>& values) {
  return Tensor::FromVector(values, Shape({static_cast<int64_t>(values.size())}));
}

Result<std::vector<float>> StateVectorOf(const StateTensors& in, const std::string& name) {
  auto it = in.find(name);
  if (it == in.end()) return Status::DataLoss("server state: missing entry " + name);
  if (it->second.dtype() != DType::kF32) return Status::DataLoss("server state: " + name + " is not f32");
  return it->second.ToFloatVector();
}

Tensor StateScalar(int64_t value) { return Tensor::FromVectorI64({value}, Shape({1})); }

Result<int64_t> StateScalarOf(const StateTensors& in, const std::string& name) {
  auto it = in.find(name);
  if (it == in.end()) return Status::DataLoss("server state: missing entry " + name);
  if (it->second.dtype() != DType::kI64 || it->second.numel() != 1) {
    return Status::DataLoss("server state: " + name + " is not one int64");
  }
  return it->second.ToI64Vector()[0];
}

std::optional<uint64_t> StateIndexAfter(const std::string& name, const std::string& head) {
  if (name.size() <= head.size() || name.compare(0, head.size(), head) != 0) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = head.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return v;
}

}  // namespace geomx::ps
