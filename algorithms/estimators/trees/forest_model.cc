// The Forest model of forest.h: prediction, importances, model-file sections and the workers' tree serialisation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "algorithms/estimators/trees/forest.h"

namespace geomx::algorithms::trees {
namespace {

constexpr int64_t kVersion = 1;
constexpr int64_t kMaxExactFloat = int64_t{1} << 24;
constexpr int64_t kMaxClasses = 1 << 20;
constexpr int64_t kParallelRows = 1024;  // fewer rows: predict on one thread
constexpr int64_t kBlockRows = 64;       // rows walked through one tree at a time
// Per node: left, right, feature, bin, default_left, depth, threshold, value, gain, cover.
constexpr int kNodeFloats = 10;

}  // namespace

void Forest::IndexLeaves() {
  leaf_slot.assign(trees.size(), {});
  for (size_t t = 0; t < trees.size(); ++t) {
    std::vector<int32_t>& slot = leaf_slot[t];
    slot.assign(trees[t].nodes.size(), -1);
    int32_t next = 0;
    for (size_t i = 0; i < slot.size(); ++i) {
      if (trees[t].nodes[i].is_leaf()) slot[i] = next++;
    }
  }
}

void Forest::AddTreeOutput(size_t t, const float* x, double* out) const {
  const int32_t leaf = trees[t].LeafOf(x);
  if (classes == 0) {
    out[0] += trees[t].nodes[static_cast<size_t>(leaf)].value;
    return;
  }
  const float* p = leaf_proba[t].data() + static_cast<size_t>(leaf_slot[t][static_cast<size_t>(leaf)]) * classes;
  for (int32_t c = 0; c < classes; ++c) out[c] += p[c];
}

std::vector<float> Forest::Predict(const data::Table& table, int threads) const {
  const int k = std::max(classes, 1);
  const int64_t d = table.cols;
  std::vector<float> out(static_cast<size_t>(table.rows * k));
  const double scale = trees.empty() ? 0.0 : 1.0 / static_cast<double>(trees.size());
  const int64_t blocks = (table.rows + kBlockRows - 1) / kBlockRows;
  // Blocks of rows, each walked through one tree after another: a tree's nodes stay in cache for the whole block.
#pragma omp parallel num_threads(std::max(1, threads)) if (table.rows >= kParallelRows)
  {
    std::vector<float> rows(table.sparse ? static_cast<size_t>(kBlockRows * d) : 0);
    std::vector<double> acc(static_cast<size_t>(kBlockRows * k));
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t begin = blk * kBlockRows, n = std::min<int64_t>(kBlockRows, table.rows - begin);
      if (table.sparse) {
        for (int64_t i = 0; i < n; ++i) table.CopyRow(begin + i, rows.data() + i * d);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t t = 0; t < trees.size(); ++t) {
        for (int64_t i = 0; i < n; ++i) {
          const float* x = table.sparse ? rows.data() + i * d : table.Row(begin + i);
          AddTreeOutput(t, x, acc.data() + i * k);
        }
      }
      for (int64_t j = 0; j < n * k; ++j) {
        out[static_cast<size_t>(begin * k + j)] = static_cast<float>(acc[static_cast<size_t>(j)] * scale);
      }
    }
  }
  return out;
}

std::vector<double> Forest::Importance() const {
  std::vector<double> total(static_cast<size_t>(features), 0.0), tree_sum(total.size());
  for (const Tree& t : trees) {
    std::fill(tree_sum.begin(), tree_sum.end(), 0.0);
    double s = 0;
    for (const TreeNode& n : t.nodes) {
      if (n.is_leaf()) continue;
      tree_sum[static_cast<size_t>(n.feature)] += n.gain;
      s += n.gain;
    }
    if (!(s > 0)) continue;  // a stump: scikit-learn leaves it out of the mean
    for (size_t f = 0; f < total.size(); ++f) total[f] += tree_sum[f] / s;
  }
  double s = 0;
  for (double v : total) s += v;
  if (s > 0) {
    for (double& v : total) v /= s;
  }
  return total;
}

void Forest::Save(const std::string& prefix, double oob, bool has_oob, ModelWriter* out) const {
  out->PutInts(prefix + ".forest.meta", std::vector<int64_t>{kVersion, features, classes,
                                                             static_cast<int64_t>(trees.size()), has_oob ? 1 : 0});
  Ensemble e;
  e.features = features;
  e.groups = 1;
  e.base_margin = {0.0f};
  e.trees = trees;
  e.Save(prefix + ".forest", out);
  if (classes > 0) {
    std::vector<float> all;
    for (const std::vector<float>& p : leaf_proba) all.insert(all.end(), p.begin(), p.end());
    out->PutFloats(prefix + ".forest.leaf_proba", all);
  }
  if (has_oob) out->PutNumber(prefix + ".forest.oob", oob);
}

Status Forest::Load(const std::string& prefix, const ModelReader& in, double* oob) {
  auto bad = [&](const std::string& section, const std::string& what) {
    return Status::DataLoss(in.source() + ": section '" + prefix + ".forest." + section + "' " + what);
  };
  std::vector<int64_t> meta;
  GEOMX_RETURN_IF_ERROR(in.GetInts(prefix + ".forest.meta", &meta, 5));
  if (meta[0] != kVersion) {
    return bad("meta", "has version " + std::to_string(meta[0]) + ", this build reads " + std::to_string(kVersion));
  }
  if (meta[1] < 1 || meta[2] < 0 || meta[2] == 1 || meta[2] > kMaxClasses || meta[3] < 0 ||
      (meta[4] != 0 && meta[4] != 1)) {
    return bad("meta", "holds impossible values");
  }
  Ensemble e;
  GEOMX_RETURN_IF_ERROR(e.Load(prefix + ".forest", in));
  if (e.features != meta[1] || static_cast<int64_t>(e.trees.size()) != meta[3] || e.groups != 1) {
    return bad("meta", "does not match the trees");
  }
  Forest f;
  f.features = meta[1];
  f.classes = static_cast<int32_t>(meta[2]);
  f.trees = std::move(e.trees);
  f.IndexLeaves();
  if (f.classes > 0) {
    int64_t leaves = 0;
    for (const Tree& t : f.trees) leaves += t.Leaves();
    std::vector<float> all;
    GEOMX_RETURN_IF_ERROR(in.GetFloats(prefix + ".forest.leaf_proba", &all, leaves * f.classes));
    int64_t pos = 0;
    for (const Tree& t : f.trees) {
      const int64_t n = static_cast<int64_t>(t.Leaves()) * f.classes;
      f.leaf_proba.emplace_back(all.begin() + pos, all.begin() + pos + n);
      pos += n;
    }
  }
  *oob = std::numeric_limits<double>::quiet_NaN();
  if (meta[4] == 1) GEOMX_RETURN_IF_ERROR(in.GetNumber(prefix + ".forest.oob", oob));
  *this = std::move(f);
  return Status::Ok();
}

Result<std::vector<float>> SerializeTrees(const std::vector<int64_t>& ids, const std::vector<Tree>& trees,
                                          const std::vector<std::vector<float>>& leaf_proba, int classes) {
  std::vector<float> out;
  for (size_t j = 0; j < trees.size(); ++j) {
    const Tree& t = trees[j];
    const int64_t nodes = static_cast<int64_t>(t.nodes.size()), leaves = t.Leaves();
    if (ids[j] >= kMaxExactFloat || nodes >= kMaxExactFloat) {
      return Status::InvalidArgument("random forest: tree " + std::to_string(ids[j]) + " has " +
                                     std::to_string(nodes) + " nodes, too many to send between workers (< 2^24)");
    }
    out.insert(out.end(), {static_cast<float>(ids[j]), static_cast<float>(nodes), static_cast<float>(leaves)});
    for (const TreeNode& n : t.nodes) {
      out.insert(out.end(), {static_cast<float>(n.left), static_cast<float>(n.right), static_cast<float>(n.feature),
                             static_cast<float>(n.bin), n.default_left ? 1.0f : 0.0f, static_cast<float>(n.depth),
                             n.threshold, n.value, n.gain, n.cover});
    }
    if (classes > 0) out.insert(out.end(), leaf_proba[j].begin(), leaf_proba[j].end());
  }
  return out;
}

Status DeserializeTrees(const std::vector<float>& data, int classes, int64_t features, std::vector<int64_t>* ids,
                        std::vector<Tree>* trees, std::vector<std::vector<float>>* leaf_proba) {
  size_t pos = 0;
  auto fail = [&](const std::string& what) {
    return Status::Internal("random forest: gathered trees are malformed at float " + std::to_string(pos) + ": " +
                            what);
  };
  const int64_t k = std::max(classes, 0);
  while (pos < data.size()) {
    if (data.size() - pos < 3) return fail("truncated header");
    const int64_t id = static_cast<int64_t>(data[pos]), nodes = static_cast<int64_t>(data[pos + 1]),
                  leaves = static_cast<int64_t>(data[pos + 2]);
    pos += 3;
    if (id < 0 || nodes < 1 || leaves < 1 || leaves > nodes ||
        static_cast<int64_t>(data.size() - pos) < nodes * kNodeFloats + leaves * k) {
      return fail("bad sizes");
    }
    Tree t;
    t.nodes.resize(static_cast<size_t>(nodes));
    for (int64_t i = 0; i < nodes; ++i, pos += kNodeFloats) {
      const float* v = data.data() + pos;
      TreeNode& n = t.nodes[static_cast<size_t>(i)];
      n.left = static_cast<int32_t>(v[0]);
      n.right = static_cast<int32_t>(v[1]);
      n.feature = static_cast<int32_t>(v[2]);
      const bool leaf = n.left == -1 && n.right == -1;
      if (!leaf && !(n.left > i && n.left < nodes && n.right > i && n.right < nodes && n.feature >= 0 &&
                     n.feature < features)) {
        return fail("bad links in node " + std::to_string(i));
      }
      n.bin = static_cast<int32_t>(v[3]);
      n.default_left = v[4] != 0;
      n.depth = static_cast<int32_t>(v[5]);
      n.threshold = v[6];
      n.value = v[7];
      n.gain = v[8];
      n.cover = v[9];
    }
    if (t.Leaves() != leaves) return fail("leaf count");
    ids->push_back(id);
    if (classes > 0) {
      leaf_proba->emplace_back(data.begin() + static_cast<int64_t>(pos),
                               data.begin() + static_cast<int64_t>(pos) + leaves * k);
      pos += static_cast<size_t>(leaves * k);
    }
    trees->push_back(std::move(t));
  }
  return Status::Ok();
}

}  // namespace geomx::algorithms::trees
