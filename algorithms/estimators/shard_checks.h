// What the estimators that fit across workers check first, together, so every worker reaches the same verdict: for
// the classifiers (logreg, ftrl, ftml) the shards agree on columns and classes and carry valid labels, at least two
// classes occur in the union, the row weights add up to something; for the tree ensembles each shard's rows are
// valid and the shards agree on their shape. Plus the logistic function logreg and the online learners use.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms {

// What every worker knows about the whole training set after the first exchange.
struct ShardShape {
  int64_t rows = 0;   // all shards
  double weight = 0;  // sum of row weights over all shards
  std::vector<int64_t> rows_per_worker;
};

// Gathers (classes, columns, row weight, rows, label state) of every shard (`collective` may be null: one shard).
// kInvalidArgument naming `name` when the shards disagree on classes or columns, a shard has no labels or a label out
// of range, the union is empty or has no columns, or the weights do not sum to a positive number.
Result<ShardShape> ExchangeShardShape(const std::string& name, const data::Table& train, Collective* collective);

// Class counts summed over the shards; kInvalidArgument unless at least two classes occur.
Status CheckClassesAcrossShards(const std::string& name, const data::Table& train, Collective* collective);

// What CheckShardRows requires of each row besides its weight.
enum class RowLabels : uint8_t {
  kClasses,  // a label in [0, num_classes)
  kTargets,  // a finite regression target
  kNone,     // nothing (the caller checks, as ranking does its relevance)
};

// The checks of one shard that need no other worker: feature columns (when it has rows), at most one finite,
// non-negative weight per row, and per `labels`. kInvalidArgument naming `name` and the first bad row.
Status CheckShardRows(const std::string& name, const data::Table& train, RowLabels labels);

// Every worker's verdict `local` and shape (columns, classes, rows) gathered (`collective` may be null: one shard),
// so that all return the same error or go on together. Returns the rows of each worker's shard; else this worker's
// own verdict, kFailedPrecondition naming a worker that rejected its shard, or kInvalidArgument when the shards
// disagree on the number of columns or classes.
Result<std::vector<int64_t>> ExchangeVerdicts(const std::string& name, const data::Table& train, const Status& local,
                                              Collective* collective);

inline double Sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

// log(1 + exp(z)) without overflow.
inline double Softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }

}  // namespace geomx::algorithms
