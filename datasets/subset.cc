#include "datasets/subset.h"

#include <algorithm>
#include <cmath>
#include <map>
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

}  // namespace geomx::data
