// Reducer: how a server combines the payloads that workers push for one wire key in one round.
//
// A Reducer instance is one accumulator: it is created per (wire key, round), receives one payload per
// contributor, and produces the aggregate. Built-in reducers, by name (payload formats: handlers/payloads.h):
//   "sum"              dense f32, Meta.codec "": element-wise sum (the server divides by the number of
//                      contributions when it wants the mean: StoreSink)
//   "row_sparse"       codec "row_sparse": u64 row indices + f32 rows; rows with the same index are summed, the
//                      result is the union of rows, sorted by index
//   "concat"           codec "concat": record lists; the result is every record, ordered by contributor
//   "topk_merge"       codec "topk_merge": (distance, id, label) triples; keeps the k smallest by (distance, id)
//   "weighted_average" codec "weighted_average": a weight and a dense f32 vector; the result is the
//                      weight-summed average with the summed weight (so it composes across tiers)
//   "topk_rows"        codec "topk_rows": per-query neighbour lists (queries x k); per query, the k smallest by
//                      (distance, id) over every contribution
//   "sparse_sum"       codec "sparse_sum": the row_sparse payload with width 1 (element index, value); the
//                      result is the union, same indices summed, sorted
//   "half_sum"         codec "half_sum": an FP16 part (relative to its largest value) and an exact f32 part;
//                      both summed element-wise (in f32), the result re-encoded the same way
// Every aggregate is itself a valid payload of the same codec, so a local server can forward it upward unchanged.
//
// Results are deterministic: contributions are combined in contributor order (the pushing node's rank), whatever
// order they arrive in.
//
// Adding a reducer: one file with the class and a GEOMX_REGISTER(ReducerRegistry, ...) line, plus a reference
// from MakeReducer's translation unit so the static library keeps it (see reducer.cc).
// Not thread-safe (one accumulator is used under its SyncAggregator's lock).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/base/bytes.h"
#include "engine/base/registry.h"
#include "engine/base/status.h"

namespace geomx::comm {

struct ReducerConfig {
  uint64_t length = 0;  // elements of the slice for dense codecs ("sum", "weighted_average"); 0 when unknown
};

class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual std::string_view name() const = 0;
  // The Meta.codec of the payloads this reducer accepts ("" = dense f32).
  virtual std::string_view codec() const = 0;
  // Checks a payload before it is combined (size, format, consistency with earlier contributions): everything
  // a peer can get wrong is a kInvalidArgument/kDataLoss here, never a crash later.
  virtual Status Validate(const Bytes& payload) const = 0;
  // Adds a payload that passed Validate. `contributor` orders the combination (lower first).
  virtual void Combine(int contributor, Bytes payload) = 0;
  // The aggregate of everything combined so far (at least one contribution).
  virtual Result<Bytes> Finish() = 0;
};

using ReducerRegistry = Registry<Reducer, const ReducerConfig&>;

// A new accumulator of the reducer `name`; kNotFound (listing the known names) for an unknown name.
Result<std::unique_ptr<Reducer>> MakeReducer(const std::string& name, const ReducerConfig& config);

}  // namespace geomx::comm
