// KeySchema: the keys one job synchronises over the parameter server, whatever trains (docs/architecture.md,
// "Key schema"): a neural model's parameters (KeySchemaFromModule), a classical estimator's statistics,
// histograms or decisions (the estimator lists its KeyDefs), and the job-wide barrier key.
//
// The master worker sends the schema to the global servers inside the job description (ps/job.h); local servers
// fetch it from global server 0; workers build it themselves from what they train. So no server builds a model or
// opens a data set to learn the keys.
//
// Each key says:
//   name       for messages and checkpoints ("conv1.weight", "histogram")
//   elems      f32 elements (row-sparse: rows x row_width)
//   dtype      f32 (the only one the servers aggregate today)
//   reducer    how a round's pushes combine at every tier (comm/handlers/reducer.h): sum, row_sparse, concat,
//              topk_merge, weighted_average
//   layout     dense (one value) or row-sparse (a table of rows; pushes carry rows, pulls select rows)
//   role       parameter (synchronised by the job's sync mode), aggregate (combined every round and answered
//              as is, or through the job's global rule), decision (written by the global server's rule,
//              pulled by every worker), or local (combined over one data centre's workers and answered by its
//              local server: it never crosses the WAN; the voting tree learner's data-centre histograms)
//   init       where the first value comes from: the master worker's init push, zeros, or nothing
//
// Value type; thread-safe to share by const reference.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/key_layout.h"
#include "engine/base/status.h"
#include "engine/dtype.h"

namespace geomx::nn {
class Module;
}

namespace geomx::ps {

enum class KeyLayoutKind : uint8_t { kDense, kRowSparse };
enum class KeyRole : uint8_t { kParameter, kAggregate, kDecision, kLocal };
enum class KeyInit : uint8_t { kFromMaster, kZeros, kNone };

// "dense" | "row_sparse"; "parameter" | "aggregate" | "decision" | "local"; "master" | "zeros" | "none".
const char* KeyLayoutKindName(KeyLayoutKind k);
const char* KeyRoleName(KeyRole r);
const char* KeyInitName(KeyInit i);

struct KeyDef {
  uint64_t key = 0;
  std::string name;
  uint64_t elems = 0;
  DType dtype = DType::kF32;
  std::string reducer = "sum";
  KeyLayoutKind layout = KeyLayoutKind::kDense;
  uint64_t row_width = 0;  // row-sparse: floats per row (elems = rows x row_width)
  KeyRole role = KeyRole::kParameter;
  KeyInit init = KeyInit::kFromMaster;

  uint64_t rows() const { return row_width > 0 ? elems / row_width : 0; }
  // Parameters may be cut into slices over several servers (MultiGPS); every other key lives whole on one server
  // (so a global rule sees whole aggregates and publishes whole decisions).
  bool splittable() const { return role == KeyRole::kParameter; }
};

// The job-wide barrier (ps/ps_context.h): a one-float sum key every worker pushes per barrier.
inline constexpr uint64_t kBarrierKey = comm::kMaxKey;

class KeySchema {
 public:
  KeySchema() = default;
  explicit KeySchema(std::vector<KeyDef> keys) : keys_(std::move(keys)) {}

  // Everything a peer or a caller can get wrong, naming the key: duplicate keys or names, keys >= 2^48, empty or
  // whitespace names, zero or more than 2^40 elements, an unknown reducer, a non-f32 dtype, a row-sparse key
  // whose reducer is not row_sparse or whose row_width does not divide elems, a decision key with a reducer
  // other than sum. kInvalidArgument.
  Status Validate() const;

  const std::vector<KeyDef>& keys() const { return keys_; }
  const KeyDef* Find(uint64_t key) const;
  bool empty() const { return keys_.empty(); }
  // True when some key has `role`.
  bool Has(KeyRole role) const;
  // The keys with `role`, in schema order.
  std::vector<uint64_t> KeysWith(KeyRole role) const;

  // The same schema plus the barrier key (kBarrierKey, "barrier", 1 element, sum, aggregate, no init).
  KeySchema WithBarrier() const;

  // The comm view: one KeySpec per key (splittable as KeyDef::splittable), and the tier layout over
  // `num_servers` with `split_bytes` (comm/key_layout.h).
  std::vector<comm::KeySpec> KeySpecs() const;
  Result<comm::KeyLayout> Layout(int num_servers, int64_t split_bytes) const;

  // Text form carried in the job description (docs/wire_format.md, "Job description"): a version line
  // "geomx-keys 1", then one line per key "key name elems dtype reducer layout row_width role init" separated by
  // single spaces. Decode validates everything (a peer may send anything): kDataLoss for bad syntax, then
  // Validate(); at most kMaxKeys keys.
  std::string Encode() const;
  static Result<KeySchema> Decode(std::string_view text);
  static constexpr size_t kMaxKeys = 1 << 20;

 private:
  std::vector<KeyDef> keys_;
};

// Trainable parameter i (model.TrainableParameters(): frozen parameters never travel) is key i: role parameter,
// reducer sum, dense, init from the master worker.
KeySchema KeySchemaFromModule(nn::Module& model);

}  // namespace geomx::ps
