#include "datasets/subset.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "engine/base/check.h"

namespace geomx::data {

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> parent, std::vector<int64_t> indices,
                             std::string source_suffix)
    : parent_(std::move(parent)), indices_(std::move(indices)), info_(parent_->info()) {
  for (int64_t i : indices_) GEOMX_CHECK(i >= 0 && i < parent_->size()) << "subset index " << i;
  info_.source += source_suffix;
}

Result<DatasetSplits> SplitTrainTest(std::shared_ptr<const Dataset> full, float test_fraction) {
  if (!(test_fraction > 0.0f && test_fraction < 1.0f)) {
    return Status::InvalidArgument("data.test_fraction: must be in (0, 1), got " + std::to_string(test_fraction));
  }
  const int64_t n = full->size();
  if (n < 2) {
    return Status::InvalidArgument(full->info().source + ": " + std::to_string(n) +
                                   " example(s) cannot be split into train and test; give data.test_path");
  }
  // Groups: one per query id (ranking data must not split a query), else one per example.
  std::map<int64_t, std::vector<int64_t>> by_query;
  std::vector<std::vector<int64_t>> groups;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t q = full->QueryId(i);
    if (q < 0) {
      groups.push_back({i});
    } else {
      by_query[q].push_back(i);
    }
  }
  for (auto& [q, members] : by_query) groups.push_back(std::move(members));

  // A fixed seed: the split is a property of the file, not of the run.
  Rng rng(0x5eed5917u);
  for (size_t i = groups.size(); i > 1; --i) std::swap(groups[i - 1], groups[rng.Below(i)]);
  const int64_t target = std::clamp<int64_t>(std::llround(test_fraction * static_cast<double>(n)), 1, n - 1);
  std::vector<int64_t> test, train;
  for (auto& g : groups) {
    auto& side = static_cast<int64_t>(test.size()) < target ? test : train;
    side.insert(side.end(), g.begin(), g.end());
  }
  if (train.empty()) return Status::InvalidArgument(full->info().source + ": too few queries to split off a test set");
  std::sort(train.begin(), train.end());
  std::sort(test.begin(), test.end());
  DatasetSplits splits;
  splits.train = std::make_shared<SubsetDataset>(full, std::move(train), " (train split)");
  splits.test = std::make_shared<SubsetDataset>(full, std::move(test), " (test split)");
  return splits;
}

Result<DatasetSplits> FilterClasses(const DatasetSplits& splits, const std::vector<int64_t>& classes) {
  const int num_classes = splits.train->info().num_classes;
  std::vector<bool> keep(static_cast<size_t>(std::max(num_classes, 0)), false);
  std::string list;
  for (int64_t c : classes) {
    if (c < 0 || c >= num_classes) {
      return Status::InvalidArgument("data.classes: " + std::to_string(c) + " is not a class of " +
                                     splits.train->info().source + " (0 to " + std::to_string(num_classes - 1) +
                                     ")");
    }
    if (keep[static_cast<size_t>(c)]) {
      return Status::InvalidArgument("data.classes: class " + std::to_string(c) + " is listed twice");
    }
    keep[static_cast<size_t>(c)] = true;
    if (!list.empty()) list += ',';
    list += std::to_string(c);
  }
  const auto filter = [&](const std::shared_ptr<const Dataset>& d) -> Result<std::shared_ptr<const Dataset>> {
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < d->size(); ++i) {
      const int64_t label = d->Label(i);
      if (label >= 0 && label < num_classes && keep[static_cast<size_t>(label)]) indices.push_back(i);
    }
    if (indices.empty()) {
      return Status::InvalidArgument("data.classes: " + d->info().source + " has no example of classes " + list);
    }
    std::string suffix = " (classes ";
    suffix += list;
    suffix += ")";
    return std::shared_ptr<const Dataset>(std::make_shared<SubsetDataset>(d, std::move(indices), std::move(suffix)));
  };
  DatasetSplits out;
  GEOMX_ASSIGN_OR_RETURN(out.train, filter(splits.train));
  GEOMX_ASSIGN_OR_RETURN(out.test, filter(splits.test));
  return out;
}

}  // namespace geomx::data
