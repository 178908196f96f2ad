// Payload formats of the built-in reducers (handlers/reducer.h), with encoders for workers and bounds-checked
// decoders (kDataLoss on malformed input: payloads come from peers). One payload is one data frame; all integers
// and floats are little-endian, as in memory on the supported hosts.
//
//   row_sparse        [u64 num_rows][u64 width][num_rows x u64 row index][num_rows*width x f32]
//   concat            [u64 num_records] then per record [u64 bytes][bytes]
//   topk_merge        [u64 k][u64 n] then n x [f32 distance][u32 0][u64 id][i64 label]   (n <= k)
//   weighted_average  [f64 weight][length x f32 values]   (the values are already the average; weight > 0)
//   topk_rows         [u64 k][u64 queries] then queries x k x [f32 distance][u32 0][u64 id][i64 label]: each
//                     query's k entries sorted by (distance, id), padded with (+inf, UINT64_MAX, -1)
//   half_sum          [u64 n_lossy][u64 n_exact][f32 scale][n_exact x f32][n_lossy x f16 of value / scale]
//                     (scale = max |lossy value| / 32768, or 1 when all are 0: FP16 relative to the largest)
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::comm {

struct RowSparse {
  uint64_t width = 0;               // floats per row
  std::vector<uint64_t> rows;       // row indices
  std::vector<float> values;        // rows.size() * width floats, row-major
};
// Encodes `rows` (any order, duplicates allowed) with their values (rows.size() * width floats).
Bytes EncodeRowSparse(uint64_t width, std::span<const uint64_t> rows, std::span<const float> values);
Result<RowSparse> DecodeRowSparse(const Bytes& payload);

// Concat record lists. DecodeRecords returns zero-copy slices of `payload`.
Bytes EncodeRecords(std::span<const Bytes> records);
Result<std::vector<Bytes>> DecodeRecords(const Bytes& payload);

struct Neighbor {
  float distance = 0;
  uint64_t id = 0;
  int64_t label = 0;
};
// Keeps at most k neighbours (the k smallest by (distance, id)) when encoding.
Bytes EncodeTopK(uint64_t k, std::span<const Neighbor> neighbors);
struct TopK {
  uint64_t k = 0;
  std::vector<Neighbor> neighbors;  // sorted by (distance, id)
};
Result<TopK> DecodeTopK(const Bytes& payload);

// Per-query neighbour lists (KNN's query broadcast): queries x k entries, query-major.
inline constexpr uint64_t kNoNeighbor = ~uint64_t{0};  // the id of a padding entry (distance +inf, label -1)
struct TopKRows {
  uint64_t k = 0, queries = 0;
  std::vector<Neighbor> entries;  // queries x k, each query's k sorted by (distance, id), padding last
};
// Per query, the k smallest by (distance, id) among the queries x k entries of every part (NaN distances count as
// +inf); padded to k. Every part must hold queries x k entries (checked by the caller).
std::vector<Neighbor> MergeTopKRows(uint64_t k, uint64_t queries, std::span<const std::span<const Neighbor>> parts);
// `entries`: queries x k (each query's list in any order); kInvalidArgument when the count is not queries x k or
// k is 0 while queries is not.
Result<Bytes> EncodeTopKRows(uint64_t k, uint64_t queries, std::span<const Neighbor> entries);
Result<TopKRows> DecodeTopKRows(const Bytes& payload);

struct WeightedValues {
  double weight = 0;
  std::vector<float> values;
};
Bytes EncodeWeighted(double weight, std::span<const float> values);
Result<WeightedValues> DecodeWeighted(const Bytes& payload);

// A sum whose first part tolerates FP16 (gradients, model deltas: each value is carried to within
// max |value| * 2^-12) and whose second part is summed exactly (losses, weights, flags).
struct HalfSum {
  std::vector<float> lossy;
  std::vector<float> exact;
};
// kInvalidArgument when a lossy value is not finite (it has no FP16 form relative to a finite scale).
Result<Bytes> EncodeHalfSum(std::span<const float> lossy, std::span<const float> exact);
Result<HalfSum> DecodeHalfSum(const Bytes& payload);

}  // namespace geomx::comm
