#include "algorithms/estimators/trees/grower.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/base/rng.h"

namespace geomx::algorithms::trees {
namespace {

// Stream ids of the column-sampling generators: one per tree, per depth, per node.
constexpr uint64_t kTreeStream = 1;
constexpr uint64_t kLevelStream = 1000;
constexpr uint64_t kNodeStream = 1 << 20;

}  // namespace

std::vector<int32_t> SampleFeatures(const std::vector<int32_t>& from, double fraction, uint64_t key) {
  if (fraction >= 1 || from.size() <= 1) return from;
  const size_t k = std::clamp<size_t>(static_cast<size_t>(std::llround(fraction * static_cast<double>(from.size()))), 1,
                                      from.size());
  std::vector<int32_t> pool = from;
  Rng rng(key);
  for (size_t i = 0; i < k; ++i) {
    const size_t j = i + static_cast<size_t>(rng.Below(pool.size() - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(k);
  std::sort(pool.begin(), pool.end());
  return pool;
}

TreeGrower::TreeGrower(const BinMatrix* bins, const BinCuts* cuts, const GrowerOptions& options, Collective* collective,
                       int threads)
    : bins_(bins),
      cuts_(cuts),
      options_(options),
      collective_(collective != nullptr && collective->world() > 1 ? collective : nullptr),
      threads_(std::max(1, threads)),
      layout_(*cuts),
      builder_(&layout_, threads_) {
  voting_ = collective_ != nullptr && options_.learner == TreeLearner::kVoting && collective_->placement().centres > 1;
}

Status TreeGrower::Sum(const std::string& key, std::vector<double>* values) {
  if (collective_ == nullptr) return Status::Ok();
  std::vector<float> f(values->begin(), values->end());
  GEOMX_RETURN_IF_ERROR(collective_->AllReduceSum(key, f));
  summed_floats_ += static_cast<int64_t>(f.size());
  std::copy(f.begin(), f.end(), values->begin());
  return Status::Ok();
}

Status TreeGrower::CentreSum(const std::string& key, std::vector<double>* values) {
  std::vector<float> f(values->begin(), values->end());
  GEOMX_RETURN_IF_ERROR(collective_->DataCentreSum(key, f));
  std::copy(f.begin(), f.end(), values->begin());
  return Status::Ok();
}

std::vector<int32_t> TreeGrower::NodeFeatures(int32_t id, uint64_t seed) const {
  const Node& n = nodes_[static_cast<size_t>(id)];
  std::vector<int32_t> features =
      SampleFeatures(tree_features_, options_.colsample_bylevel, Rng(seed).Fork(kLevelStream + n.depth).NextU64());
  return SampleFeatures(features, options_.colsample_bynode,
                        Rng(seed).Fork(kNodeStream + static_cast<uint64_t>(id)).NextU64());
}

void TreeGrower::FindSplit(int32_t id, uint64_t seed) {
  Node& n = nodes_[static_cast<size_t>(id)];
  n.split = SplitCandidate{};
  if (!CanSplitAt(n.depth)) return;
  n.split = FindBestSplit(n.hist.data(), layout_, *cuts_, NodeFeatures(id, seed), n.g, n.h, options_.split);
}

Status TreeGrower::VoteSplits(const std::vector<int32_t>& ids, uint64_t seed) {
  const int64_t features = cuts_->features;
  const size_t m = ids.size();
  const bool leader = collective_->placement().centre_rank == 0;
  const size_t top_k = static_cast<size_t>(std::max(1, options_.top_k));
  // 1. Each data centre's top_k features per node, by the best gain on its own histogram; its leader votes.
  std::vector<float> votes(m * static_cast<size_t>(features), 0.0f);
  const int64_t count = static_cast<int64_t>(m);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) if (count > 1)
  for (int64_t j = 0; j < count; ++j) {
    Node& n = nodes_[static_cast<size_t>(ids[static_cast<size_t>(j)])];
    n.split = SplitCandidate{};
    if (!CanSplitAt(n.depth)) continue;
    double g = 0, h = 0;  // the data centre's totals
    for (int s = 0; s < cuts_->Slots(0); ++s) {
      g += n.centre_hist[static_cast<size_t>(2 * s)];
      h += n.centre_hist[static_cast<size_t>(2 * s + 1)];
    }
    std::vector<std::pair<double, int32_t>> ranked;  // (gain, feature)
    for (int32_t f : NodeFeatures(ids[static_cast<size_t>(j)], seed)) {
      const SplitCandidate c = FindBestSplit(n.centre_hist.data(), layout_, *cuts_, {f}, g, h, options_.split);
      if (c.valid()) ranked.emplace_back(c.gain, f);
    }
    const size_t keep = std::min(top_k, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first &&
                                                                                      a.second < b.second); });
    if (!leader) continue;
    for (size_t i = 0; i < keep; ++i) votes[static_cast<size_t>(j * features + ranked[i].second)] = 1.0f;
  }
  // 2. The votes of every data centre; each node keeps its 2 x top_k most voted features.
  GEOMX_RETURN_IF_ERROR(collective_->AllReduceSum("trees.votes", votes));
  summed_floats_ += static_cast<int64_t>(votes.size());
  std::vector<std::vector<int32_t>> chosen(m);
  size_t slots = 0;
  for (size_t j = 0; j < m; ++j) {
    std::vector<int32_t>& c = chosen[j];
    for (int64_t f = 0; f < features; ++f) {
      if (votes[j * static_cast<size_t>(features) + static_cast<size_t>(f)] > 0) c.push_back(static_cast<int32_t>(f));
    }
    const float* v = votes.data() + j * static_cast<size_t>(features);
    std::stable_sort(c.begin(), c.end(), [&](int32_t a, int32_t b) { return v[a] > v[b]; });
    if (c.size() > 2 * top_k) c.resize(2 * top_k);
    std::sort(c.begin(), c.end());
    for (int32_t f : c) slots += static_cast<size_t>(2 * cuts_->Slots(f));
  }
  if (slots == 0) return Status::Ok();  // nobody voted: every node stays a leaf (all workers see the same votes)
  // 3. The chosen features' histograms summed over the job: this worker's rows only, so the sum is exact.
  std::vector<float> sums(slots);
  size_t at = 0;
  for (size_t j = 0; j < m; ++j) {
    const std::vector<double>& own = nodes_[static_cast<size_t>(ids[j])].hist;
    for (int32_t f : chosen[j]) {
      const size_t begin = static_cast<size_t>(2 * layout_.Offset(f)), n = static_cast<size_t>(2 * cuts_->Slots(f));
      std::copy(own.begin() + static_cast<std::ptrdiff_t>(begin),
                own.begin() + static_cast<std::ptrdiff_t>(begin + n), sums.begin() + static_cast<std::ptrdiff_t>(at));
      at += n;
    }
  }
  GEOMX_RETURN_IF_ERROR(collective_->AllReduceSumCompressible("trees.hist", sums, 0));
  summed_floats_ += static_cast<int64_t>(sums.size());
  // 4. Each node's split: the best over its chosen features on the exact sums (and the exact totals).
  std::vector<size_t> first(m + 1, 0);
  for (size_t j = 0; j < m; ++j) {
    first[j + 1] = first[j];
    for (int32_t f : chosen[j]) first[j + 1] += static_cast<size_t>(2 * cuts_->Slots(f));
  }
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) if (count > 1)
  for (int64_t j = 0; j < count; ++j) {
    const size_t jj = static_cast<size_t>(j);
    Node& n = nodes_[static_cast<size_t>(ids[jj])];
    if (chosen[jj].empty() || !CanSplitAt(n.depth)) continue;
    std::vector<double> global(static_cast<size_t>(2 * layout_.Size()), 0.0);
    size_t from = first[jj];
    for (int32_t f : chosen[jj]) {
      const size_t begin = static_cast<size_t>(2 * layout_.Offset(f)), k = static_cast<size_t>(2 * cuts_->Slots(f));
      for (size_t i = 0; i < k; ++i) global[begin + i] = sums[from + i];
      from += k;
    }
    n.split = FindBestSplit(global.data(), layout_, *cuts_, chosen[jj], n.g, n.h, options_.split);
  }
  return Status::Ok();
}

Status TreeGrower::Grow(const std::vector<GradPair>& gpair, uint64_t seed, Tree* tree,
                        std::vector<int32_t>* leaf_of_row) {
  const int64_t n = bins_->rows;
  if (static_cast<int64_t>(gpair.size()) != n) return Status::Internal("grower: gradient count differs from rows");
  tree_ = tree;
  tree->nodes.clear();
  nodes_.clear();
  positions_.resize(static_cast<size_t>(n));
  std::iota(positions_.begin(), positions_.end(), 0);
  std::vector<int32_t> all(static_cast<size_t>(cuts_->features));
  std::iota(all.begin(), all.end(), 0);
  tree_features_ = SampleFeatures(all, options_.colsample_bytree, Rng(seed).Fork(kTreeStream).NextU64());

  Node root;
  root.begin = 0;
  root.end = n;
  root.hist.resize(static_cast<size_t>(2 * layout_.Size()));
  builder_.Build(*bins_, gpair.data(), positions_, root.hist.data());
  if (voting_) {
    root.centre_hist = root.hist;
    GEOMX_RETURN_IF_ERROR(CentreSum("trees.hist.root", &root.centre_hist));
  } else {
    GEOMX_RETURN_IF_ERROR(Sum("trees.hist.root", &root.hist));
  }
  // The node totals: the sums over feature 0's slots (every feature's slots add up to the same totals).
  for (int s = 0; s < cuts_->Slots(0); ++s) {
    root.g += root.hist[static_cast<size_t>(2 * s)];
    root.h += root.hist[static_cast<size_t>(2 * s + 1)];
  }
  if (voting_) {  // the job's totals from every worker's own
    std::vector<double> totals = {root.g, root.h};
    GEOMX_RETURN_IF_ERROR(Sum("trees.totals", &totals));
    root.g = totals[0];
    root.h = totals[1];
  }
  nodes_.push_back(std::move(root));
  tree->nodes.emplace_back();
  if (voting_) {
    GEOMX_RETURN_IF_ERROR(VoteSplits({0}, seed));
  } else {
    FindSplit(0, seed);
  }

  int32_t leaves = 1;
  auto room = [&] { return options_.max_leaves <= 0 || leaves < options_.max_leaves; };
  if (options_.policy == GrowPolicy::kDepthwise) {
    std::vector<int32_t> frontier = {0};
    while (!frontier.empty()) {
      std::vector<int32_t> expand;
      for (int32_t id : frontier) {
        Node& node = nodes_[static_cast<size_t>(id)];
        if (node.split.valid() && room()) {
          expand.push_back(id);
          ++leaves;
        } else {
          DropHistograms(&node);
        }
      }
      frontier.clear();
      if (expand.empty()) break;
      GEOMX_RETURN_IF_ERROR(Expand(expand, gpair, seed, &frontier));
    }
  } else {
    std::vector<int32_t> open = {0};
    auto better = [&](int32_t a, int32_t b) {  // a is a better candidate than b
      const double ga = nodes_[static_cast<size_t>(a)].split.gain, gb = nodes_[static_cast<size_t>(b)].split.gain;
      return ga > gb || (ga == gb && a < b);
    };
    while (room()) {
      std::erase_if(open, [&](int32_t id) {
        if (nodes_[static_cast<size_t>(id)].split.valid()) return false;
        DropHistograms(&nodes_[static_cast<size_t>(id)]);
        return true;
      });
      if (open.empty()) break;
      const auto best = std::min_element(open.begin(), open.end(), better);
      const int32_t id = *best;
      open.erase(best);
      ++leaves;
      GEOMX_RETURN_IF_ERROR(Expand({id}, gpair, seed, &open));
    }
    for (int32_t id : open) DropHistograms(&nodes_[static_cast<size_t>(id)]);
  }

  leaf_of_row->assign(static_cast<size_t>(n), 0);
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const Node& node = nodes_[id];
    TreeNode& t = tree->nodes[id];
    t.depth = node.depth;
    t.cover = static_cast<float>(node.h);
    if (!t.is_leaf()) continue;
    t.value = static_cast<float>(LeafWeight(options_.split, node.g, node.h));
    for (int64_t k = node.begin; k < node.end; ++k)
      (*leaf_of_row)[static_cast<size_t>(positions_[static_cast<size_t>(k)])] = static_cast<int32_t>(id);
  }
  nodes_.clear();
  tree_ = nullptr;
  return Status::Ok();
}

Status TreeGrower::Expand(const std::vector<int32_t>& ids, const std::vector<GradPair>& gpair, uint64_t seed,
                          std::vector<int32_t>* children) {
  const size_t m = ids.size();
  std::vector<double> counts(2 * m);
  std::vector<int32_t> made(2 * m);
  for (size_t p = 0; p < m; ++p) {
    const int32_t id = ids[p];
    const SplitCandidate split = nodes_[static_cast<size_t>(id)].split;
    const int32_t f = split.feature;
    const int missing = cuts_->MissingBin(f);
    const int64_t begin = nodes_[static_cast<size_t>(id)].begin, end = nodes_[static_cast<size_t>(id)].end;
    const auto mid = std::stable_partition(positions_.begin() + begin, positions_.begin() + end, [&](int32_t r) {
      const int b = bins_->Row(r)[f];
      return b == missing ? split.default_left : b <= split.bin;
    });
    const int64_t cut = mid - positions_.begin();
    TreeNode& t = tree_->nodes[static_cast<size_t>(id)];
    t.feature = f;
    t.bin = split.bin;
    t.threshold = cuts_->Threshold(f, split.bin);
    t.default_left = split.default_left;
    t.gain = static_cast<float>(split.gain);
    const int32_t depth = nodes_[static_cast<size_t>(id)].depth + 1;
    for (int side = 0; side < 2; ++side) {
      Node child;
      child.begin = side == 0 ? begin : cut;
      child.end = side == 0 ? cut : end;
      child.g = side == 0 ? split.left_g : split.right_g;
      child.h = side == 0 ? split.left_h : split.right_h;
      child.depth = depth;
      const int32_t cid = static_cast<int32_t>(nodes_.size());
      nodes_.push_back(std::move(child));
      tree_->nodes.emplace_back();
      made[2 * p + static_cast<size_t>(side)] = cid;
      counts[2 * p + static_cast<size_t>(side)] = static_cast<double>(side == 0 ? cut - begin : end - cut);
    }
    TreeNode& parent = tree_->nodes[static_cast<size_t>(id)];  // emplace_back may have moved it
    parent.left = made[2 * p];
    parent.right = made[2 * p + 1];
  }
  // The smaller child of each pair by rows over all workers (the same choice everywhere).
  GEOMX_RETURN_IF_ERROR(Sum("trees.counts", &counts));
  const int64_t size = 2 * layout_.Size();
  std::vector<int32_t> small(m);
  for (size_t p = 0; p < m; ++p) {
    small[p] = counts[2 * p] <= counts[2 * p + 1] ? made[2 * p] : made[2 * p + 1];
    Node& s = nodes_[static_cast<size_t>(small[p])];
    s.hist.resize(static_cast<size_t>(size));
    builder_.Build(*bins_, gpair.data(),
                   std::span<const int32_t>(positions_.data() + s.begin, static_cast<size_t>(s.end - s.begin)),
                   s.hist.data());
  }
  if (voting_) {  // the data centre's histograms of the built children, in one sum (LAN only)
    std::vector<double> built(m * static_cast<size_t>(size));
    for (size_t p = 0; p < m; ++p) {
      const std::vector<double>& h = nodes_[static_cast<size_t>(small[p])].hist;
      std::copy(h.begin(), h.end(), built.begin() + static_cast<int64_t>(p) * size);
    }
    GEOMX_RETURN_IF_ERROR(CentreSum("trees.hist", &built));
    for (size_t p = 0; p < m; ++p) {
      nodes_[static_cast<size_t>(small[p])].centre_hist.assign(
          built.begin() + static_cast<int64_t>(p) * size, built.begin() + static_cast<int64_t>(p + 1) * size);
    }
  } else if (collective_ != nullptr) {  // one sum for the whole step
    std::vector<float> built(m * static_cast<size_t>(size));
    for (size_t p = 0; p < m; ++p) {
      const std::vector<double>& h = nodes_[static_cast<size_t>(small[p])].hist;
      std::copy(h.begin(), h.end(), built.begin() + static_cast<int64_t>(p) * size);
    }
    // The histograms tolerate the recipe's compression (fp16: each entry within max |entry| * 2^-12).
    GEOMX_RETURN_IF_ERROR(collective_->AllReduceSumCompressible("trees.hist", built, 0));
    summed_floats_ += static_cast<int64_t>(built.size());
    for (size_t p = 0; p < m; ++p) {
      std::vector<double>& h = nodes_[static_cast<size_t>(small[p])].hist;
      std::copy(built.begin() + static_cast<int64_t>(p) * size, built.begin() + static_cast<int64_t>(p + 1) * size,
                h.begin());
    }
  }
  for (size_t p = 0; p < m; ++p) {
    const int32_t big = small[p] == made[2 * p] ? made[2 * p + 1] : made[2 * p];
    Node& parent = nodes_[static_cast<size_t>(ids[p])];
    Node& s = nodes_[static_cast<size_t>(small[p])];
    Node& b = nodes_[static_cast<size_t>(big)];
    b.hist = std::move(parent.hist);
    SubtractHistogram(b.hist.data(), s.hist.data(), b.hist.data(), size);
    if (voting_) {
      b.centre_hist = std::move(parent.centre_hist);
      SubtractHistogram(b.centre_hist.data(), s.centre_hist.data(), b.centre_hist.data(), size);
    }
    DropHistograms(&parent);
  }
  if (voting_) {
    GEOMX_RETURN_IF_ERROR(VoteSplits(made, seed));
  } else {
    // The children's splits, one node per thread (each reads only its own histogram).
    const int64_t count = static_cast<int64_t>(made.size());
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) if (count > 1)
    for (int64_t j = 0; j < count; ++j) FindSplit(made[static_cast<size_t>(j)], seed);
  }
  for (int32_t cid : made) {
    Node& c = nodes_[static_cast<size_t>(cid)];
    if (!c.split.valid()) DropHistograms(&c);
    children->push_back(cid);
  }
  return Status::Ok();
}

}  // namespace geomx::algorithms::trees
