#include "algorithms/estimators/trees/forest.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "algorithms/estimators/shard_checks.h"
#include "engine/base/rng.h"

namespace geomx::algorithms::trees {
namespace {

constexpr int64_t kMaxExactFloat = int64_t{1} << 24;  // integers exact in a float (tree serialisation)
constexpr int64_t kSortedRowsMax = 32768;               // the sorted path's keys hold a 16-bit row position
constexpr int64_t kCountingSortRows = 128;             // fewer rows: std::sort the keys
constexpr uint64_t kFeatureStream = 1;                  // Rng stream of a tree's feature draws

uint64_t Mix(uint64_t a, uint64_t b) {  // splitmix64 of a combined key
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double XLogX(double x) { return x > 0 ? x * std::log(x) : 0.0; }

}  // namespace

int64_t FeaturesPerSplit(const ForestOptions& options, int64_t features) {
  double k = static_cast<double>(features);
  switch (options.max_features_rule) {
    case MaxFeaturesRule::kSqrt:
      k = std::sqrt(k);
      break;
    case MaxFeaturesRule::kLog2:
      k = features > 0 ? std::log2(k) : 0;
      break;
    case MaxFeaturesRule::kFraction:
      k = options.max_features * k;
      break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(k), 1, std::max<int64_t>(features, 1));
}

uint64_t ForestTreeSeed(uint64_t seed, int64_t t) { return Mix(seed, static_cast<uint64_t>(t)); }

std::vector<uint32_t> BootstrapCounts(int64_t rows, double max_samples, uint64_t tree_seed) {
  std::vector<uint32_t> counts(static_cast<size_t>(std::max<int64_t>(rows, 0)), 0);
  if (rows <= 0) return counts;
  const int64_t draws = std::max<int64_t>(1, std::llround(max_samples * static_cast<double>(rows)));
  Rng rng(tree_seed);
  for (int64_t d = 0; d < draws; ++d) ++counts[static_cast<size_t>(rng.Below(static_cast<uint64_t>(rows)))];
  return counts;
}

// ---- growing one tree ----

struct ForestGrower::Workspace {
  std::vector<float> w;         // per row: draw count x table weight (0: out of the tree)
  std::vector<int32_t> pos;     // the tree's rows, each node a contiguous ascending range
  std::vector<int32_t> tmp;     // partition buffer
  std::vector<int32_t> order;   // feature permutation (draws without replacement per node)
  std::vector<double> hist;     // one feature's histogram: slots x stats
  std::vector<int32_t> cnt;     // distinct rows per slot
  std::vector<uint32_t> keys;   // sorted path: bin << 16 | position in the node
  std::vector<uint32_t> sorted; // the keys counting-sorted
  std::vector<double> left;     // running left-child stats
  Rng rng;
};

struct ForestGrower::Best {
  int32_t feature = -1;
  int32_t bin = -1;
  double proxy = -std::numeric_limits<double>::infinity();
};

ForestGrower::ForestGrower(const data::Table* table, const BinMatrix* bins, const BinCuts* cuts,
                           const ForestOptions& options, int classes)
    : table_(table),
      rows_(bins->rows),
      features_(bins->features),
      cuts_(cuts),
      o_(options),
      classes_(classes),
      stats_(classes > 0 ? classes : 2) {
  per_split_ = FeaturesPerSplit(o_, features_);
  const int64_t n = rows_, d = features_;
  columns_.resize(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = bins->Row(i);
    for (int64_t f = 0; f < d; ++f) columns_[static_cast<size_t>(f * n + i)] = row[f];
  }
}

double ForestGrower::Proxy(const double* left, const double* totals, double wl, double w) const {
  if (o_.criterion == ForestCriterion::kSquaredError) {
    const double sl = left[1], sr = totals[1] - left[1], wr = w - wl;
    return sl * sl / wl + sr * sr / wr;
  }
  double a = 0, b = 0, wr = 0;
  wl = 0;
  if (o_.criterion == ForestCriterion::kGini) {
    for (int c = 0; c < classes_; ++c) {
      const double l = left[c], r = totals[c] - left[c];
      a += l * l;
      b += r * r;
      wl += l;
      wr += r;
    }
    return a / wl + b / wr;
  }
  for (int c = 0; c < classes_; ++c) {
    const double l = left[c], r = totals[c] - left[c];
    a += XLogX(l) + XLogX(r);
    wl += l;
    wr += r;
  }
  return a - XLogX(wl) - XLogX(wr);
}

void ForestGrower::ScoreFeature(Workspace& ws, int32_t f, int64_t begin, int64_t end, const double* totals,
                                double weight, Best* best, bool* constant) const {
  const int64_t m = end - begin, n = rows_, min_leaf = o_.min_samples_leaf;
  const uint8_t* col = columns_.data() + static_cast<int64_t>(f) * n;
  const int slots = cuts_->Slots(f), k = stats_;
  const bool cls = classes_ > 0;
  const int32_t* rows = ws.pos.data() + begin;
  double* left = ws.left.data();
  std::fill(left, left + k, 0.0);
  auto add = [&](double* s, int32_t r) {
    const float w = ws.w[static_cast<size_t>(r)];
    if (cls) {
      s[table_->labels[static_cast<size_t>(r)]] += w;
    } else {
      s[0] += w;
      s[1] += static_cast<double>(w) * table_->targets[static_cast<size_t>(r)];
    }
  };
  auto left_weight = [&]() {
    if (!cls) return left[0];
    double s = 0;
    for (int c = 0; c < k; ++c) s += left[c];
    return s;
  };
  // After the rows of bin b joined the left child (left_rows of them in all): score "bin <= b".
  auto consider = [&](int b, int64_t left_rows) {
    if (left_rows < min_leaf || m - left_rows < min_leaf) return;
    const double proxy = Proxy(left, totals, left_weight(), weight);
    if (proxy > best->proxy) *best = Best{f, b, proxy};
  };
  const bool dense = m >= std::min<int64_t>(kSortedRowsMax, static_cast<int64_t>(slots) * (k + 1) / 4);
  if (dense) {
    double* hist = ws.hist.data();
    int32_t* cnt = ws.cnt.data();
    std::fill(hist, hist + static_cast<int64_t>(slots) * k, 0.0);
    std::fill(cnt, cnt + slots, 0);
    for (int64_t p = 0; p < m; ++p) {
      const int32_t r = rows[p];
      const int b = col[r];
      ++cnt[b];
      add(hist + static_cast<int64_t>(b) * k, r);
    }
    int occupied = 0;
    for (int b = 0; b < slots; ++b) occupied += cnt[b] > 0 ? 1 : 0;
    *constant = occupied <= 1;
    if (*constant) return;
    int64_t left_rows = 0;
    for (int b = 0; b < slots && left_rows < m; ++b) {
      if (cnt[b] == 0) continue;
      const double* h = hist + static_cast<int64_t>(b) * k;
      for (int c = 0; c < k; ++c) left[c] += h[c];
      left_rows += cnt[b];
      if (left_rows < m) consider(b, left_rows);
    }
    return;
  }
  // Keys bin << 16 | position, ordered by bin then position: a constant feature is found before any sorting.
  uint32_t* keys = ws.keys.data();
  uint32_t lo = 0xffffu, hi = 0;
  for (int64_t p = 0; p < m; ++p) {
    const uint32_t b = col[rows[p]];
    lo = std::min(lo, b);
    hi = std::max(hi, b);
    keys[p] = b << 16 | static_cast<uint32_t>(p);
  }
  *constant = lo == hi;
  if (*constant) return;
  if (m < kCountingSortRows) {
    std::sort(keys, keys + m);
  } else {  // a stable counting sort by bin: the same order
    int32_t* start = ws.cnt.data();
    std::fill(start, start + (hi - lo + 2), 0);
    for (int64_t p = 0; p < m; ++p) ++start[(keys[p] >> 16) - lo + 1];
    for (uint32_t b = 1; b <= hi - lo + 1; ++b) start[b] += start[b - 1];
    uint32_t* sorted = ws.sorted.data();
    for (int64_t p = 0; p < m; ++p) sorted[start[(keys[p] >> 16) - lo]++] = keys[p];
    keys = sorted;
  }
  for (int64_t p = 0; p < m; ++p) {
    add(left, rows[keys[p] & 0xffffu]);
    const uint32_t b = keys[p] >> 16;
    if (p + 1 < m && (keys[p + 1] >> 16) != b) consider(static_cast<int>(b), p + 1);
  }
}

void ForestGrower::FindSplit(Workspace& ws, int64_t begin, int64_t end, const double* totals, double weight,
                             Best* best) const {
  const int64_t d = features_;
  int64_t examined = 0;
  for (int64_t i = 0; i < d && examined < per_split_; ++i) {
    const int64_t j = i + static_cast<int64_t>(ws.rng.Below(static_cast<uint64_t>(d - i)));
    std::swap(ws.order[static_cast<size_t>(i)], ws.order[static_cast<size_t>(j)]);
    bool constant = false;
    ScoreFeature(ws, ws.order[static_cast<size_t>(i)], begin, end, totals, weight, best, &constant);
    if (!constant) ++examined;
  }
}

void ForestGrower::Grow(uint64_t tree_seed, Tree* tree, std::vector<float>* proba,
                        std::vector<uint32_t>* counts) const {
  const int64_t n = table_->rows, d = features_;
  const int k = stats_;
  const bool cls = classes_ > 0;
  *counts = o_.bootstrap ? BootstrapCounts(n, o_.max_samples, tree_seed) : std::vector<uint32_t>(n, 1u);
  Workspace ws;
  ws.rng = Rng(tree_seed).Fork(kFeatureStream);
  ws.w.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ws.w[static_cast<size_t>(i)] = static_cast<float>((*counts)[static_cast<size_t>(i)]) * table_->weight(i);
    if (ws.w[static_cast<size_t>(i)] > 0) ws.pos.push_back(static_cast<int32_t>(i));
  }
  ws.tmp.resize(ws.pos.size());
  ws.order.resize(static_cast<size_t>(d));
  for (int64_t f = 0; f < d; ++f) ws.order[static_cast<size_t>(f)] = static_cast<int32_t>(f);
  int max_slots = 1;
  for (int64_t f = 0; f < d; ++f) max_slots = std::max(max_slots, cuts_->Slots(f));
  ws.hist.resize(static_cast<size_t>(max_slots) * k);
  ws.cnt.resize(static_cast<size_t>(max_slots) + 1);
  ws.keys.resize(static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(ws.pos.size()), kSortedRowsMax)));
  ws.sorted.resize(ws.keys.size());
  ws.left.resize(static_cast<size_t>(k));

  tree->nodes.clear();
  tree->group = 0;
  tree->nodes.emplace_back();
  std::vector<float> node_proba;  // per node x classes (leaves only are kept)
  struct Open {
    int32_t id;
    int64_t begin, end;
  };
  std::vector<Open> stack = {{0, 0, static_cast<int64_t>(ws.pos.size())}};
  std::vector<double> totals(static_cast<size_t>(k));
  while (!stack.empty()) {
    const Open open = stack.back();
    stack.pop_back();
    const int64_t m = open.end - open.begin;
    std::fill(totals.begin(), totals.end(), 0.0);
    bool pure = true;
    const int32_t first = m > 0 ? ws.pos[static_cast<size_t>(open.begin)] : 0;
    for (int64_t p = open.begin; p < open.end; ++p) {
      const int32_t r = ws.pos[static_cast<size_t>(p)];
      const float w = ws.w[static_cast<size_t>(r)];
      if (cls) {
        totals[static_cast<size_t>(table_->labels[static_cast<size_t>(r)])] += w;
        pure = pure && table_->labels[static_cast<size_t>(r)] == table_->labels[static_cast<size_t>(first)];
      } else {
        totals[0] += w;
        totals[1] += static_cast<double>(w) * table_->targets[static_cast<size_t>(r)];
        pure = pure && table_->targets[static_cast<size_t>(r)] == table_->targets[static_cast<size_t>(first)];
      }
    }
    double weight = 0;
    for (int c = 0; c < (cls ? k : 1); ++c) weight += totals[static_cast<size_t>(c)];
    TreeNode& node = tree->nodes[static_cast<size_t>(open.id)];
    node.cover = static_cast<float>(weight);
    Best best;
    const bool may_split = !pure && (o_.max_depth <= 0 || node.depth < o_.max_depth) &&
                           m >= o_.min_samples_split && m >= 2 * o_.min_samples_leaf;
    if (may_split) FindSplit(ws, open.begin, open.end, totals.data(), weight, &best);
    if (best.feature < 0) {  // a leaf
      if (cls) {
        node_proba.resize(tree->nodes.size() * static_cast<size_t>(k), 0.0f);
        float* out = node_proba.data() + static_cast<size_t>(open.id) * k;
        for (int c = 0; c < k; ++c) {
          out[c] = weight > 0 ? static_cast<float>(totals[static_cast<size_t>(c)] / weight) : 1.0f / k;
        }
        node.value = static_cast<float>(std::max_element(out, out + k) - out);
      } else {
        node.value = weight > 0 ? static_cast<float>(totals[1] / weight) : 0.0f;
      }
      continue;
    }
    // Gain: the weighted impurity decrease (proxy minus the node's own term; entropy in bits).
    double own = 0;
    if (o_.criterion == ForestCriterion::kSquaredError) {
      own = totals[1] * totals[1] / weight;
    } else if (o_.criterion == ForestCriterion::kGini) {
      for (int c = 0; c < k; ++c) own += totals[static_cast<size_t>(c)] * totals[static_cast<size_t>(c)];
      own /= weight;
    } else {
      for (int c = 0; c < k; ++c) own += XLogX(totals[static_cast<size_t>(c)]);
      own -= XLogX(weight);
    }
    double gain = best.proxy - own;
    if (o_.criterion == ForestCriterion::kEntropy) gain /= std::log(2.0);
    // Partition the node's rows (stable: both children stay ascending).
    const uint8_t* col = columns_.data() + static_cast<int64_t>(best.feature) * n;
    int64_t nl = 0, nr = 0;
    for (int64_t p = open.begin; p < open.end; ++p) {
      const int32_t r = ws.pos[static_cast<size_t>(p)];
      if (col[r] <= best.bin)
        ws.pos[static_cast<size_t>(open.begin + nl++)] = r;
      else
        ws.tmp[static_cast<size_t>(nr++)] = r;
    }
    std::copy(ws.tmp.begin(), ws.tmp.begin() + nr, ws.pos.begin() + open.begin + nl);
    const int32_t depth = node.depth;
    const int32_t left_id = static_cast<int32_t>(tree->nodes.size());
    TreeNode& split = tree->nodes[static_cast<size_t>(open.id)];
    split.left = left_id;
    split.right = left_id + 1;
    split.feature = best.feature;
    split.bin = best.bin;
    split.threshold = best.bin < cuts_->ValueBins(best.feature) - 1 ? cuts_->Threshold(best.feature, best.bin)
                                                                     : std::numeric_limits<float>::infinity();
    split.default_left = false;
    split.gain = static_cast<float>(std::max(gain, 0.0));
    tree->nodes.resize(tree->nodes.size() + 2);
    tree->nodes[static_cast<size_t>(left_id)].depth = depth + 1;
    tree->nodes[static_cast<size_t>(left_id) + 1].depth = depth + 1;
    stack.push_back({left_id + 1, open.begin + nl, open.end});
    stack.push_back({left_id, open.begin, open.begin + nl});
  }
  proba->clear();
  if (cls) {
    node_proba.resize(tree->nodes.size() * static_cast<size_t>(k), 0.0f);
    for (size_t i = 0; i < tree->nodes.size(); ++i) {
      if (!tree->nodes[i].is_leaf()) continue;
      proba->insert(proba->end(), node_proba.begin() + static_cast<int64_t>(i) * k,
                    node_proba.begin() + static_cast<int64_t>(i + 1) * k);
    }
  }
}

// ---- fitting ----

namespace {

// Every worker learns every verdict and shape, so all return the same error or go on together.
Status CheckTable(const ForestOptions& o, const data::Table& train, Collective* coll) {
  Status local;
  if (o.oob_score && !o.bootstrap) {
    local = Status::InvalidArgument(o.name + ": oob_score needs bootstrap: true (no row is out of bag otherwise)");
  } else if (train.rows >= kMaxExactFloat / 2 || train.cols >= kMaxExactFloat) {
    local = Status::InvalidArgument(o.name +
                                    ": the table has too many rows or columns for a forest (rows < 2^23, columns "
                                    "< 2^24)");
  } else {
    local = CheckShardRows(o.name, train, o.classification() ? RowLabels::kClasses : RowLabels::kTargets);
  }
  GEOMX_ASSIGN_OR_RETURN(std::vector<int64_t> shards, ExchangeVerdicts(o.name, train, local, coll));
  for (size_t w = 0; w < shards.size(); ++w) {
    if (shards[w] == 0) {
      const std::string who = coll != nullptr ? "worker " + std::to_string(w) + "'s shard" : "the table";
      return Status::InvalidArgument(o.name + ": " + who + " is empty (each worker grows trees)");
    }
  }
  if (o.classification()) GEOMX_RETURN_IF_ERROR(CheckClassesAcrossShards(o.name, train, coll));
  double weight = 0;
  for (int64_t i = 0; i < train.rows; ++i) weight += train.weight(i);
  if (!(weight > 0)) return Status::InvalidArgument(o.name + ": the row weights sum to " + std::to_string(weight));
  return Status::Ok();
}

// The out-of-bag score over this worker's rows. A row is out of bag for every tree this worker did not grow from
// it: its own trees whose bootstrap missed it and every other worker's tree. Sums (or, for R^2, per-worker moments)
// are combined across the workers.
Status OutOfBag(const ForestOptions& o, const data::Table& train, const Forest& forest,
                const std::vector<int64_t>& local_ids, const std::vector<std::vector<uint8_t>>& inbag, int threads,
                Collective* coll, ForestFit* fit) {
  const int out_k = std::max(forest.classes, 1);
  std::vector<int32_t> local_of(forest.trees.size(), -1);
  for (size_t j = 0; j < local_ids.size(); ++j) local_of[static_cast<size_t>(local_ids[j])] = static_cast<int32_t>(j);
  const int64_t n = train.rows;
  std::vector<double> pred(static_cast<size_t>(n), 0.0);
  std::vector<uint8_t> has(static_cast<size_t>(n), 0);
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> row(static_cast<size_t>(train.cols));
    std::vector<double> acc(static_cast<size_t>(out_k));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const float* x = train.sparse ? row.data() : train.Row(i);
      if (train.sparse) train.CopyRow(i, row.data());
      std::fill(acc.begin(), acc.end(), 0.0);
      int64_t used = 0;
      for (size_t t = 0; t < forest.trees.size(); ++t) {
        const int32_t j = local_of[t];
        if (j >= 0 && inbag[static_cast<size_t>(j)][static_cast<size_t>(i)]) continue;
        forest.AddTreeOutput(t, x, acc.data());
        ++used;
      }
      if (used == 0) continue;
      has[static_cast<size_t>(i)] = 1;
      pred[static_cast<size_t>(i)] = forest.classes > 0
                                         ? static_cast<double>(std::max_element(acc.begin(), acc.end()) - acc.begin())
                                         : acc[0] / static_cast<double>(used);
    }
  }
  if (o.classification()) {
    std::vector<float> sums = {0, 0};  // correct, rows
    for (int64_t i = 0; i < n; ++i) {
      if (!has[static_cast<size_t>(i)]) continue;
      sums[1] += 1;
      sums[0] += pred[static_cast<size_t>(i)] == train.labels[static_cast<size_t>(i)] ? 1 : 0;
    }
    if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSum(o.name + ".oob", sums));
    fit->oob_rows = static_cast<int64_t>(sums[1]);
    fit->oob = sums[1] > 0 ? sums[0] / sums[1] : std::numeric_limits<double>::quiet_NaN();
  } else {
    // Per worker: rows, mean target, sum of squared deviations, sum of squared residuals; merged (Chan et al.).
    double rows = 0, mean = 0, m2 = 0, ss_res = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!has[static_cast<size_t>(i)]) continue;
      const double y = train.targets[static_cast<size_t>(i)];
      rows += 1;
      const double delta = y - mean;
      mean += delta / rows;
      m2 += delta * (y - mean);
      ss_res += (y - pred[static_cast<size_t>(i)]) * (y - pred[static_cast<size_t>(i)]);
    }
    std::vector<float> all = {static_cast<float>(rows), static_cast<float>(mean), static_cast<float>(m2),
                              static_cast<float>(ss_res)};
    if (coll != nullptr) {
      GEOMX_ASSIGN_OR_RETURN(all, coll->AllGather(o.name + ".oob", all));
    }
    double r_all = 0, mean_all = 0, m2_all = 0, res_all = 0;
    for (size_t w = 0; w + 3 < all.size(); w += 4) {
      const double rb = all[w], mb = all[w + 1];
      if (rb == 0) continue;
      const double total = r_all + rb, delta = mb - mean_all;
      m2_all += all[w + 2] + delta * delta * r_all * rb / total;
      mean_all += delta * rb / total;
      r_all = total;
      res_all += all[w + 3];
    }
    fit->oob_rows = static_cast<int64_t>(r_all);
    fit->oob = r_all > 0 && m2_all > 0 ? 1 - res_all / m2_all : std::numeric_limits<double>::quiet_NaN();
  }
  fit->has_oob = true;
  return Status::Ok();
}

}  // namespace

Result<ForestFit> FitForest(const ForestOptions& options, const data::Table& train, const FitContext& context) {
  Collective* coll = context.collective != nullptr && context.collective->world() > 1 ? context.collective : nullptr;
  const int threads = std::max(1, context.threads);
  GEOMX_RETURN_IF_ERROR(CheckTable(options, train, coll));
  const int classes = options.classification() ? train.num_classes : 0;
  const int rank = coll != nullptr ? coll->rank() : 0, world = coll != nullptr ? coll->world() : 1;

  // Every worker bins its own shard: its trees see only its rows, and their thresholds are raw values.
  SketchOptions sketch;
  sketch.max_bin = options.max_bin;
  GEOMX_ASSIGN_OR_RETURN(const BinCuts cuts, ComputeCuts(train, {}, sketch, nullptr, threads));
  std::unique_ptr<ForestGrower> grower;
  {
    const BinMatrix bins = BinTable(train, cuts, threads);  // the grower keeps a feature-major copy
    grower = std::make_unique<ForestGrower>(&train, &bins, &cuts, options, classes);
  }

  std::vector<int64_t> ids;
  for (int64_t t = rank; t < options.trees; t += world) ids.push_back(t);
  const size_t local = ids.size();
  std::vector<Tree> grown(local);
  std::vector<std::vector<float>> proba(local);
  std::vector<std::vector<uint8_t>> inbag(options.oob_score ? local : 0);
  // Chunks of trees between progress reports and interruption checks; inside, one tree per thread at a time.
  const int64_t chunk = std::max<int64_t>(16, 8 * threads);
  bool interrupted = false;
  for (int64_t begin = 0; begin < static_cast<int64_t>(local) && !interrupted; begin += chunk) {
    const int64_t end = std::min<int64_t>(begin + chunk, static_cast<int64_t>(local));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t j = begin; j < end; ++j) {
      std::vector<uint32_t> counts;
      const size_t s = static_cast<size_t>(j);
      grower->Grow(ForestTreeSeed(context.seed, ids[s]), &grown[s], &proba[s], &counts);
      if (options.oob_score) {
        inbag[s].resize(counts.size());
        for (size_t i = 0; i < counts.size(); ++i) inbag[s][i] = counts[i] > 0 ? 1 : 0;
      }
    }
    interrupted = context.Interrupted();
    if (context.observer != nullptr) context.observer->OnStep(end, {{"trees", static_cast<double>(end)}});
  }

  ForestFit fit;
  Forest& forest = fit.forest;
  forest.features = train.cols;
  forest.classes = classes;
  std::vector<float> flag = {interrupted ? 1.0f : 0.0f};
  if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSum(options.name + ".interrupted", flag));
  if (flag[0] > 0) return Status::Cancelled(options.name + ": interrupted");
  if (coll == nullptr) {
    forest.trees = std::move(grown);
    forest.leaf_proba = std::move(proba);
  } else {
    GEOMX_ASSIGN_OR_RETURN(const std::vector<float> mine, SerializeTrees(ids, grown, proba, classes));
    GEOMX_ASSIGN_OR_RETURN(const std::vector<float> all, coll->AllGather(options.name + ".trees", mine));
    std::vector<int64_t> all_ids;
    std::vector<Tree> all_trees;
    std::vector<std::vector<float>> all_proba;
    GEOMX_RETURN_IF_ERROR(DeserializeTrees(all, classes, train.cols, &all_ids, &all_trees, &all_proba));
    if (static_cast<int64_t>(all_ids.size()) != options.trees)
      return Status::Internal(options.name + ": gathered " + std::to_string(all_ids.size()) + " trees");
    forest.trees.resize(all_ids.size());
    forest.leaf_proba.resize(classes > 0 ? all_ids.size() : 0);
    for (size_t j = 0; j < all_ids.size(); ++j) {
      const int64_t t = all_ids[j];
      if (t < 0 || t >= options.trees || !forest.trees[static_cast<size_t>(t)].nodes.empty())
        return Status::Internal(options.name + ": gathered tree id " + std::to_string(t) + " is out of place");
      forest.trees[static_cast<size_t>(t)] = std::move(all_trees[j]);
      if (classes > 0) forest.leaf_proba[static_cast<size_t>(t)] = std::move(all_proba[j]);
    }
  }
  if (classes == 0) forest.leaf_proba.clear();
  forest.IndexLeaves();
  if (options.oob_score) {
    GEOMX_RETURN_IF_ERROR(OutOfBag(options, train, forest, ids, inbag, threads, coll, &fit));
  }
  return fit;
}

}  // namespace geomx::algorithms::trees
