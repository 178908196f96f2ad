// The kernel SVM cascade through the parameter-server tiers (docs/algorithms.md#svm, "Cascade record"): the record
// format a worker sends its support vectors in, and the reducer `svm_cascade` that each server runs over its
// contributors' records (the union of their rows, retrained, its support vectors as one record).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/estimators/kernel_svm_train.h"
#include "datasets/table.h"
#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::algorithms::svm {

inline constexpr const char* kCascadeReducer = "svm_cascade";

// One cascade record, decoded.
struct CascadeRows {
  SvmConfig config;
  bool regression = false;
  int failure = 0;           // StatusCode of the first failure, 0 = none
  uint32_t failed_rank = 0;  // whose
  int classes = 0;
  data::Table table;         // dense rows: labels or targets, weights
  std::vector<uint32_t> origin_rank;
  std::vector<int64_t> origin_row;
};

// This worker's payload: the rows `rows` of its shard (its local support vectors), or its failure.
Bytes EncodeCascade(const SvmConfig& config, bool regression, const data::Table& train,
                    const std::vector<int64_t>& rows, const Status& failure, int rank);

// The reducer's result as every worker receives it: exactly one record (kDataLoss otherwise).
Result<CascadeRows> DecodeCascadeAnswer(const Bytes& payload);

}  // namespace geomx::algorithms::svm
