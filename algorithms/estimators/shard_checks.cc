#include "algorithms/estimators/shard_checks.h"

namespace geomx::algorithms {
namespace {

// 1: labels present (or no rows) and all in [0, num_classes); 0: no labels; 2: a label out of range.
float LabelState(const data::Table& t) {
  if (t.rows == 0) return 1.0f;
  if (static_cast<int64_t>(t.labels.size()) != t.rows) return 0.0f;
  for (int32_t y : t.labels) {
    if (y < 0 || y >= t.num_classes) return 2.0f;
  }
  return 1.0f;
}

}  // namespace

// Checks the shards agree on the layout (same column and class counts) and have labels; every worker reaches the
// same verdict because it is computed from the same gathered values.
Result<ShardShape> ExchangeShardShape(const std::string& name, const data::Table& train, Collective* collective) {
  double local_weight = 0;
  for (int64_t i = 0; i < train.rows; ++i) local_weight += train.weight(i);
  std::vector<float> mine = {static_cast<float>(train.num_classes), static_cast<float>(train.cols),
                             static_cast<float>(local_weight), static_cast<float>(train.rows),
                             LabelState(train)};
  std::vector<float> all = mine;
  if (collective != nullptr) {
    GEOMX_ASSIGN_OR_RETURN(all, collective->AllGather(name + ".shape", mine));
    if (all.size() != mine.size() * static_cast<size_t>(collective->world())) {
      return Status::Internal(name + ": shape exchange returned " + std::to_string(all.size()) + " values");
    }
  }
  ShardShape g;
  for (size_t r = 0; r < all.size(); r += mine.size()) {
    if (all[r] != all[0] || all[r + 1] != all[1]) {
      return Status::InvalidArgument(name + ": the workers' shards disagree on the number of classes or columns");
    }
    if (all[r + 4] == 0.0f) return Status::InvalidArgument(name + ": the training table has no class labels");
    if (all[r + 4] == 2.0f) {
      return Status::InvalidArgument(name + ": a training label lies outside [0, " + std::to_string(train.num_classes) +
                                     ")");
    }
    g.weight += all[r + 2];
    g.rows += static_cast<int64_t>(all[r + 3]);
    g.rows_per_worker.push_back(static_cast<int64_t>(all[r + 3]));
  }
  if (g.rows == 0) return Status::InvalidArgument(name + ": the training table is empty");
  if (train.cols <= 0) return Status::InvalidArgument(name + ": the training table has no feature columns");
  if (!(g.weight > 0)) return Status::InvalidArgument(name + ": the row weights sum to " + std::to_string(g.weight));
  return g;
}

// Class counts over all shards; kInvalidArgument unless at least two classes occur.
Status CheckClassesAcrossShards(const std::string& name, const data::Table& train, Collective* collective) {
  if (train.num_classes < 2) {
    return Status::InvalidArgument(name + ": a classifier needs at least two classes, the table has " +
                                   std::to_string(train.num_classes));
  }
  std::vector<float> counts(static_cast<size_t>(train.num_classes), 0.0f);
  for (int32_t y : train.labels) {
    if (y >= 0 && y < train.num_classes) counts[static_cast<size_t>(y)] += 1.0f;
  }
  if (collective != nullptr) GEOMX_RETURN_IF_ERROR(collective->AllReduceSum(name + ".classes", counts));
  int present = 0;
  for (float c : counts) present += c > 0 ? 1 : 0;
  if (present < 2) {
    return Status::InvalidArgument(name + ": a classifier needs at least two classes, the training labels hold " +
                                   std::to_string(present));
  }
  return Status::Ok();
}

Status CheckShardRows(const std::string& name, const data::Table& train, RowLabels labels) {
  const auto fail = [&](const std::string& msg) { return Status::InvalidArgument(name + ": " + msg); };
  if (train.rows > 0 && train.cols < 1) return fail("the training table has no feature columns");
  if (!train.weights.empty() && static_cast<int64_t>(train.weights.size()) != train.rows) {
    return fail("the training table has " + std::to_string(train.weights.size()) + " weights for " +
                std::to_string(train.rows) + " rows");
  }
  for (size_t i = 0; i < train.weights.size(); ++i) {
    if (!(train.weights[i] >= 0) || !std::isfinite(train.weights[i])) {
      return fail("row " + std::to_string(i) + " has a negative, NaN or infinite weight");
    }
  }
  if (labels == RowLabels::kClasses) {
    if (static_cast<int64_t>(train.labels.size()) != train.rows) return fail("the training table has no class labels");
    for (size_t i = 0; i < train.labels.size(); ++i) {
      if (train.labels[i] < 0 || train.labels[i] >= train.num_classes) {
        return fail("row " + std::to_string(i) + " has label " + std::to_string(train.labels[i]) + " outside [0, " +
                    std::to_string(train.num_classes) + ")");
      }
    }
  } else if (labels == RowLabels::kTargets) {
    if (static_cast<int64_t>(train.targets.size()) != train.rows) {
      return fail("the training table has no regression targets");
    }
    for (size_t i = 0; i < train.targets.size(); ++i) {
      if (!std::isfinite(train.targets[i])) return fail("row " + std::to_string(i) + " has a NaN or infinite target");
    }
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> ExchangeVerdicts(const std::string& name, const data::Table& train, const Status& local,
                                              Collective* collective) {
  const std::vector<float> mine = {local.ok() ? 1.0f : 0.0f, static_cast<float>(train.cols),
                                   static_cast<float>(train.num_classes), static_cast<float>(train.rows)};
  std::vector<float> all = mine;
  if (collective != nullptr) {
    GEOMX_ASSIGN_OR_RETURN(all, collective->AllGather(name + ".check", mine));
    if (all.size() != mine.size() * static_cast<size_t>(collective->world())) {
      return Status::Internal(name + ": shape exchange returned " + std::to_string(all.size()) + " values");
    }
  }
  GEOMX_RETURN_IF_ERROR(local);
  std::vector<int64_t> rows;
  for (size_t r = 0; r < all.size(); r += mine.size()) {
    if (all[r] == 0.0f) {
      return Status::FailedPrecondition(name + ": worker " + std::to_string(r / mine.size()) + " rejected its shard");
    }
    if (all[r + 1] != all[1] || all[r + 2] != all[2]) {
      return Status::InvalidArgument(name + ": the workers' shards disagree on the number of columns or classes");
    }
    rows.push_back(static_cast<int64_t>(all[r + 3]));
  }
  return rows;
}

}  // namespace geomx::algorithms
