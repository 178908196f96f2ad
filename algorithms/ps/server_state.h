// ServerState: the state a parameter server keeps between rounds (weights, optimizer state, DC-ASGD backups,
// HFA/DiLoCo milestones and global models, decisions, row tables) behind one save/restore interface, so fault
// tolerance can checkpoint a server and start a replacement from the checkpoint (docs/architecture.md).
//
// State is a set of named f32/i64 tensors: a component adds its entries under a prefix ("opt/", "dcasgd/") and
// reads them back from the same names. SaveServerState / LoadServerState put the set in a file in the tensor
// file format of nn/checkpoint.h (docs/checkpoint_format.md).
// Thread-safety: implementations serialise Save/Restore with their own updates (they take their mutex).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "engine/base/status.h"
#include "engine/tensor.h"

namespace geomx::ps {

using StateTensors = std::map<std::string, Tensor>;

class ServerState {
 public:
  virtual ~ServerState() = default;
  // Adds this component's state to `out`, every name starting with `prefix`.
  virtual Status SaveState(const std::string& prefix, StateTensors* out) const = 0;
  // Replaces this component's state with the entries of `in` under `prefix`. kDataLoss naming the entry for
  // anything missing or malformed; the state is unchanged then.
  virtual Status RestoreState(const std::string& prefix, const StateTensors& in) = 0;
};

// The state of several components, each under its own prefix.
class CompositeState final : public ServerState {
 public:
  void Add(std::string prefix, ServerState* part) { parts_.emplace(std::move(prefix), part); }  // borrowed
  Status SaveState(const std::string& prefix, StateTensors* out) const override;
  Status RestoreState(const std::string& prefix, const StateTensors& in) override;

 private:
  std::map<std::string, ServerState*> parts_;
};

// Writes `state` to `path` (atomically: tmp + rename); reads it back. Errors name the file.
Status SaveServerState(const std::filesystem::path& path, const ServerState& state);
Status LoadServerState(const std::filesystem::path& path, ServerState* state);

// Helpers for implementations: a float vector as a 1-D f32 tensor and back; an int64 scalar.
Tensor StateVector(const std::vector<float>& values);
Result<std::vector<float>> StateVectorOf(const StateTensors& in, const std::string& name);
Tensor StateScalar(int64_t value);
Result<int64_t> StateScalarOf(const StateTensors& in, const std::string& name);
// The decimal number that ends `name` right after `head` ("opt/w/17" with head "opt/w/" -> 17); nullopt for a
// name that does not start with `head` or does not end in digits only.
std::optional<uint64_t> StateIndexAfter(const std::string& name, const std::string& head);

}  // namespace geomx::ps
