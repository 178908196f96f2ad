#include "algorithms/estimators/trees/tree.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace geomx::algorithms::trees {
namespace {

constexpr int64_t kNodeInts = 6;    // left, right, feature, bin, default_left, depth
constexpr int64_t kNodeFloats = 4;  // threshold, value, gain, cover
constexpr int64_t kMaxGroups = 1 << 20;
constexpr int64_t kParallelRows = 4096;  // fewer rows: predict on one thread

// A JSON number that round-trips a float; non-finite values (JSON has none) become +-FLT_MAX.
void AppendNumber(std::string* out, double v) {
  if (!std::isfinite(v)) v = std::isnan(v) ? 0.0 : std::copysign(static_cast<double>(FLT_MAX), v);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  out->append(buf);
}

}  // namespace

int32_t Tree::Leaves() const {
  int32_t n = 0;
  for (const TreeNode& node : nodes) n += node.is_leaf() ? 1 : 0;
  return n;
}

void Ensemble::AddTree(const data::Table& table, const Tree& t, int threads, std::vector<float>* margins) const {
  const int64_t d = table.cols;
#pragma omp parallel num_threads(std::max(1, threads)) if (table.rows >= kParallelRows)
  {
    std::vector<float> row(table.sparse ? static_cast<size_t>(d) : 0);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < table.rows; ++i) {
      const float* x = table.sparse ? row.data() : table.Row(i);
      if (table.sparse) table.CopyRow(i, row.data());
      (*margins)[static_cast<size_t>(i * groups + t.group)] += t.nodes[static_cast<size_t>(t.LeafOf(x))].value;
    }
  }
}

std::vector<float> Ensemble::PredictMargins(const data::Table& table, int threads, int64_t max_trees) const {
  const int64_t d = table.cols;
  const int64_t n_trees = max_trees < 0 ? static_cast<int64_t>(trees.size())
                                        : std::min<int64_t>(max_trees, static_cast<int64_t>(trees.size()));
  std::vector<float> out(static_cast<size_t>(table.rows * groups));
#pragma omp parallel num_threads(std::max(1, threads)) if (table.rows >= kParallelRows)
  {
    std::vector<float> row(table.sparse ? static_cast<size_t>(d) : 0);
    std::vector<double> acc(static_cast<size_t>(groups));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < table.rows; ++i) {
      const float* x = table.sparse ? row.data() : table.Row(i);
      if (table.sparse) table.CopyRow(i, row.data());
      for (int32_t k = 0; k < groups; ++k) acc[static_cast<size_t>(k)] = base_margin[static_cast<size_t>(k)];
      for (int64_t t = 0; t < n_trees; ++t) {
        const Tree& tree = trees[static_cast<size_t>(t)];
        acc[static_cast<size_t>(tree.group)] += tree.nodes[static_cast<size_t>(tree.LeafOf(x))].value;
      }
      for (int32_t k = 0; k < groups; ++k)
        out[static_cast<size_t>(i * groups + k)] = static_cast<float>(acc[static_cast<size_t>(k)]);
    }
  }
  return out;
}

std::vector<double> Ensemble::Importance(ImportanceKind kind) const {
  std::vector<double> count(static_cast<size_t>(features), 0.0), gain(count), cover(count);
  for (const Tree& t : trees) {
    for (const TreeNode& n : t.nodes) {
      if (n.is_leaf()) continue;
      const size_t f = static_cast<size_t>(n.feature);
      count[f] += 1;
      gain[f] += n.gain;
      cover[f] += n.cover;
    }
  }
  switch (kind) {
    case ImportanceKind::kWeight:
      return count;
    case ImportanceKind::kTotalGain:
      return gain;
    case ImportanceKind::kTotalCover:
      return cover;
    case ImportanceKind::kGain:
    case ImportanceKind::kCover: {
      std::vector<double>& v = kind == ImportanceKind::kGain ? gain : cover;
      for (size_t f = 0; f < v.size(); ++f) v[f] = count[f] > 0 ? v[f] / count[f] : 0.0;
      return v;
    }
  }
  return count;
}

std::string Ensemble::ImportanceCsv() const {
  const ImportanceKind kinds[] = {ImportanceKind::kWeight, ImportanceKind::kGain, ImportanceKind::kCover,
                                  ImportanceKind::kTotalGain, ImportanceKind::kTotalCover};
  std::vector<std::vector<double>> columns;
  for (ImportanceKind k : kinds) columns.push_back(Importance(k));
  std::string out = "feature,weight,gain,cover,total_gain,total_cover\n";
  char buf[64];
  for (int64_t f = 0; f < features; ++f) {
    out += std::to_string(f);
    for (const std::vector<double>& c : columns) {
      std::snprintf(buf, sizeof(buf), ",%.9g", c[static_cast<size_t>(f)]);
      out += buf;
    }
    out += '\n';
  }
  return out;
}

std::string Ensemble::DumpJson() const {
  std::string s = "{\"format\": \"geomx-trees\", \"version\": 1, \"num_feature\": ";
  s.append(std::to_string(features)).append(", \"num_group\": ").append(std::to_string(groups));
  s.append(", \"base_margin\": [");
  for (size_t k = 0; k < base_margin.size(); ++k) {
    if (k > 0) s.append(", ");
    AppendNumber(&s, base_margin[k]);
  }
  s.append("],\n \"trees\": [");
  for (size_t t = 0; t < trees.size(); ++t) {
    s.append(t > 0 ? ",\n  " : "\n  ").append("{\"group\": ").append(std::to_string(trees[t].group));
    s.append(", \"nodes\": [");
    const std::vector<TreeNode>& nodes = trees[t].nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const TreeNode& n = nodes[i];
      s.append(i > 0 ? ",\n    " : "\n    ").append("{\"id\": ").append(std::to_string(i));
      s.append(", \"depth\": ").append(std::to_string(n.depth));
      if (n.is_leaf()) {
        s.append(", \"leaf\": ");
        AppendNumber(&s, n.value);
      } else {
        s.append(", \"feature\": ").append(std::to_string(n.feature)).append(", \"threshold\": ");
        AppendNumber(&s, n.threshold);
        s.append(", \"default_left\": ").append(n.default_left ? "true" : "false");
        s.append(", \"left\": ").append(std::to_string(n.left)).append(", \"right\": ").append(std::to_string(n.right));
        s.append(", \"gain\": ");
        AppendNumber(&s, n.gain);
      }
      s.append(", \"cover\": ");
      AppendNumber(&s, n.cover);
      s.append("}");
    }
    s.append("]}");
  }
  s.append("]}\n");
  return s;
}

void Ensemble::Save(const std::string& prefix, ModelWriter* out) const {
  int64_t total = 0;
  std::vector<int64_t> per_tree;
  for (const Tree& t : trees) {
    per_tree.push_back(t.group);
    per_tree.push_back(static_cast<int64_t>(t.nodes.size()));
    total += static_cast<int64_t>(t.nodes.size());
  }
  std::vector<int64_t> ints;
  std::vector<float> floats;
  ints.reserve(static_cast<size_t>(total * kNodeInts));
  floats.reserve(static_cast<size_t>(total * kNodeFloats));
  for (const Tree& t : trees) {
    for (const TreeNode& n : t.nodes) {
      ints.insert(ints.end(), {n.left, n.right, n.feature, n.bin, n.default_left ? 1 : 0, n.depth});
      floats.insert(floats.end(), {n.threshold, n.value, n.gain, n.cover});
    }
  }
  const std::vector<int64_t> meta = {1, features, groups, static_cast<int64_t>(trees.size()), total};
  out->PutInts(prefix + ".trees.meta", meta);
  out->PutFloats(prefix + ".trees.base_margin", base_margin);
  out->PutInts(prefix + ".trees.tree", per_tree);
  out->PutInts(prefix + ".trees.node_ints", ints);
  out->PutFloats(prefix + ".trees.node_floats", floats);
}

Status Ensemble::Load(const std::string& prefix, const ModelReader& in) {
  auto bad = [&](const std::string& section, const std::string& what) {
    return Status::DataLoss(in.source() + ": section '" + prefix + ".trees." + section + "' " + what);
  };
  std::vector<int64_t> meta;
  GEOMX_RETURN_IF_ERROR(in.GetInts(prefix + ".trees.meta", &meta, 5));
  if (meta[0] != 1) return bad("meta", "has version " + std::to_string(meta[0]) + ", this build reads 1");
  const int64_t d = meta[1], k = meta[2], n_trees = meta[3], total = meta[4];
  if (d < 1 || k < 1 || k > kMaxGroups || n_trees < 0 || n_trees > (int64_t{1} << 32) || total < n_trees ||
      total > (int64_t{1} << 40)) {
    return bad("meta", "holds impossible sizes");
  }
  Ensemble e;
  e.features = d;
  e.groups = static_cast<int32_t>(k);
  std::vector<int64_t> per_tree, ints;
  std::vector<float> floats;
  GEOMX_RETURN_IF_ERROR(in.GetFloats(prefix + ".trees.base_margin", &e.base_margin, k));
  GEOMX_RETURN_IF_ERROR(in.GetInts(prefix + ".trees.tree", &per_tree, 2 * n_trees));
  GEOMX_RETURN_IF_ERROR(in.GetInts(prefix + ".trees.node_ints", &ints, kNodeInts * total));
  GEOMX_RETURN_IF_ERROR(in.GetFloats(prefix + ".trees.node_floats", &floats, kNodeFloats * total));
  int64_t pos = 0;
  for (int64_t t = 0; t < n_trees; ++t) {
    const int64_t group = per_tree[static_cast<size_t>(2 * t)], count = per_tree[static_cast<size_t>(2 * t + 1)];
    if (group < 0 || group >= k || count < 1 || count > total - pos) {
      return bad("tree", "entry " + std::to_string(t) + " is out of range");
    }
    Tree tree;
    tree.group = static_cast<int32_t>(group);
    tree.nodes.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i, ++pos) {
      const int64_t* v = ints.data() + pos * kNodeInts;
      const float* f = floats.data() + pos * kNodeFloats;
      TreeNode& n = tree.nodes[static_cast<size_t>(i)];
      const bool leaf = v[0] == -1 && v[1] == -1;
      if (!leaf && !(v[0] > i && v[0] < count && v[1] > i && v[1] < count && v[2] >= 0 && v[2] < d)) {
        return bad("node_ints", "tree " + std::to_string(t) + " node " + std::to_string(i) + " has bad links");
      }
      n.left = static_cast<int32_t>(v[0]);
      n.right = static_cast<int32_t>(v[1]);
      n.feature = leaf ? -1 : static_cast<int32_t>(v[2]);
      n.bin = static_cast<int32_t>(std::clamp<int64_t>(v[3], -1, 255));
      n.default_left = v[4] != 0;
      n.depth = static_cast<int32_t>(std::clamp<int64_t>(v[5], 0, 1 << 20));
      n.threshold = f[0];
      n.value = f[1];
      n.gain = f[2];
      n.cover = f[3];
    }
    e.trees.push_back(std::move(tree));
  }
  *this = std::move(e);
  return Status::Ok();
}

}  // namespace geomx::algorithms::trees
