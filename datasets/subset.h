// SubsetDataset: a view of some examples of another dataset (a train/test split of one CSV or LIBSVM file).
// Immutable: thread-safe to read. Shares ownership of the parent.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "datasets/dataset.h"

namespace geomx::data {

class SubsetDataset final : public Dataset {
 public:
  // Example i of the subset is example indices[i] of `parent` (each in [0, parent->size()); checked).
  SubsetDataset(std::shared_ptr<const Dataset> parent, std::vector<int64_t> indices, std::string source_suffix);

  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  int64_t Label(int64_t i) const override { return parent_->Label(At(i)); }
  void Get(int64_t i, float* out, Rng* rng) const override { parent_->Get(At(i), out, rng); }
  int64_t QueryId(int64_t i) const override { return parent_->QueryId(At(i)); }

 private:
  int64_t At(int64_t i) const { return indices_[static_cast<size_t>(i)]; }
  std::shared_ptr<const Dataset> parent_;
  std::vector<int64_t> indices_;
  DatasetInfo info_;
};

// Splits `full` into train and test: a fixed-seed shuffle (the same file always splits the same way), then the
// first round(test_fraction * n) examples (at least 1 and at most n-1 when n >= 2) become the test split.
// Examples sharing a query id stay on the same side. kInvalidArgument when test_fraction is not in (0, 1) or
// `full` has fewer than 2 examples.
Result<DatasetSplits> SplitTrainTest(std::shared_ptr<const Dataset> full, float test_fraction);

// The examples of `splits` whose label is one of `classes`, in both splits; labels and num_classes unchanged (a
// model keeps its num_classes-way output). The sources get " (classes 5,6,7)". kInvalidArgument naming
// data.classes for a class outside [0, num_classes), a repeated class, or a split left without examples.
Result<DatasetSplits> FilterClasses(const DatasetSplits& splits, const std::vector<int64_t>& classes);

}  // namespace geomx::data
