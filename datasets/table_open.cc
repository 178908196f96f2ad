// OpenTable and ReadTableFile (datasets/table.h): the readers of datasets/ as whole-table loaders, plus the table
// generators (friedman1 for regression, letor-synthetic for ranking, ctr-synthetic; ratings and ratings-synthetic
// live in ratings.cc, the cartpole start states in cartpole.cc).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <unordered_map>

#include "datasets/cartpole.h"
#include "datasets/csv_table.h"
#include "datasets/dataset.h"
#include "datasets/file_reader.h"
#include "datasets/label_encoder.h"
#include "datasets/libsvm.h"
#include "datasets/ratings.h"
#include "datasets/table.h"
#include "engine/base/rng.h"

namespace geomx::data {
namespace {

// What both text formats give: features plus label text and the source line of each row.
struct TextTable {
  Table table;  // features (and qids) only
  std::vector<std::string> labels;
  std::vector<int> lines;
  bool has_qid = false;
};

Result<TextTable> ReadCsvText(const std::string& path, const DataConfig& config) {
  GEOMX_ASSIGN_OR_RETURN(FileBytes file, ReadDataFile(path));
  const std::string_view text(reinterpret_cast<const char*>(file.bytes.data()), file.bytes.size());
  GEOMX_ASSIGN_OR_RETURN(CsvTable csv, ParseCsvTable(text, path,
                                                     {.label_column = config.label_column,
                                                      .header = config.header,
                                                      .allow_nan = config.allow_nan}));
  TextTable out;
  out.table.rows = csv.rows();
  out.table.cols = csv.num_features;
  out.table.dense = std::move(csv.features);
  out.table.source = path;
  out.labels = std::move(csv.labels);
  out.lines = std::move(csv.lines);
  return out;
}

Result<TextTable> ReadLibsvmText(const std::string& path, int64_t width, const LibsvmOptions& options) {
  GEOMX_RETURN_IF_ERROR(CheckLibsvmNumFeatures(width));
  GEOMX_ASSIGN_OR_RETURN(LibsvmTable t, ReadLibsvm(path, options));
  TextTable out;
  out.table.rows = t.rows();
  out.table.sparse = true;
  out.table.cols = width > 0 ? width : t.max_index;
  out.table.source = path;
  for (int64_t r = 0; r < t.rows(); ++r) {
    const size_t b = static_cast<size_t>(t.row_ptr[r]), e = static_cast<size_t>(t.row_ptr[r + 1]);
    // LIBSVM files should list indices ascending; accept any order (sorted here), reject repeats.
    std::vector<std::pair<int32_t, float>> row;
    for (size_t k = b; k < e; ++k) row.emplace_back(t.cols[k], t.values[k]);
    std::sort(row.begin(), row.end());
    for (size_t k = 0; k < row.size(); ++k) {
      if (width > 0 && row[k].first >= width) {
        return Status::InvalidArgument(path + ":" + std::to_string(t.lines[r]) + ": feature index " +
                                       std::to_string(row[k].first + 1) + " is above the " + std::to_string(width) +
                                       " features the model was trained on");
      }
      if (k > 0 && row[k].first == row[k - 1].first) {
        return Status::InvalidArgument(path + ":" + std::to_string(t.lines[r]) + ": feature index " +
                                       std::to_string(row[k].first + 1) + " appears twice");
      }
    }
    out.table.row_ptr.push_back(static_cast<int64_t>(out.table.values.size()));
    for (const auto& [c, v] : row) {
      out.table.col_index.push_back(c);
      out.table.values.push_back(v);
    }
  }
  out.table.row_ptr.push_back(static_cast<int64_t>(out.table.values.size()));
  out.has_qid = t.has_qid;
  out.table.qids = std::move(t.qids);
  out.labels = std::move(t.labels);
  out.lines = std::move(t.lines);
  return out;
}

Result<TextTable> ReadText(const std::string& path, const DataConfig& config, int64_t width) {
  if (config.name == "csv") return ReadCsvText(path, config);
  return ReadLibsvmText(path, width, {.allow_nan = config.allow_nan});
}

// Float targets from label text; errors name file:line.
Status ParseTargets(const TextTable& t, Table* out) {
  out->targets.resize(t.labels.size());
  for (size_t i = 0; i < t.labels.size(); ++i) {
    const std::string& s = t.labels[i];
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) {
      return Status::InvalidArgument(out->source + ":" + std::to_string(t.lines[i]) + ": label '" + s +
                                     "' is not a number (regression and ranking need numeric targets)");
    }
    out->targets[i] = static_cast<float>(v);
  }
  return Status::Ok();
}

// A fixed-seed shuffle of the rows (of whole queries when `qids` is given); the first round(fraction * groups)
// groups become the test split.
void SplitIndices(int64_t rows, const std::vector<int64_t>& qids, float fraction, std::vector<int64_t>* train,
                  std::vector<int64_t>* test) {
  std::vector<std::vector<int64_t>> groups;
  if (qids.empty()) {
    for (int64_t i = 0; i < rows; ++i) groups.push_back({i});
  } else {
    std::unordered_map<int64_t, size_t> at;
    for (int64_t i = 0; i < rows; ++i) {
      auto [it, fresh] = at.emplace(qids[static_cast<size_t>(i)], groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    }
  }
  Rng rng(0x7ab1e5);
  for (size_t i = groups.size(); i > 1; --i) std::swap(groups[i - 1], groups[rng.Below(i)]);
  const size_t n = groups.size();
  size_t n_test = static_cast<size_t>(std::llround(fraction * static_cast<double>(n)));
  n_test = std::clamp<size_t>(n_test, 1, n - 1);
  for (size_t g = 0; g < n; ++g) {
    for (int64_t i : groups[g]) (g < n_test ? test : train)->push_back(i);
  }
  std::sort(train->begin(), train->end());
  std::sort(test->begin(), test->end());
}

// Labels of both splits through one encoder (so ids agree).
void EncodeLabels(const std::vector<const TextTable*>& parts, const std::vector<Table*>& outs) {
  LabelEncoder encoder;
  for (const TextTable* p : parts) {
    for (const auto& l : p->labels) encoder.Add(l);
  }
  encoder.Finalize();
  for (size_t k = 0; k < parts.size(); ++k) {
    Table* t = outs[k];
    t->num_classes = encoder.num_classes();
    t->class_names = encoder.class_names();
    t->labels.resize(parts[k]->labels.size());
    for (size_t i = 0; i < t->labels.size(); ++i) t->labels[i] = static_cast<int32_t>(encoder.Encode(parts[k]->labels[i]));
  }
}

// A classifier given continuous targets: a label that is a number with a fractional part ("0.37") is refused,
// naming its line, instead of becoming one class per distinct value.
Status CheckClassLabels(const TextTable& t, const std::string& source) {
  for (size_t i = 0; i < t.labels.size(); ++i) {
    const std::string& s = t.labels[i];
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v) && v != std::floor(v)) {
      return Status::InvalidArgument(source + ":" + std::to_string(t.lines[i]) + ": label '" + s +
                                     "' is not a class: a classifier needs class labels (use a regression "
                                     "algorithm for numeric targets)");
    }
  }
  return Status::Ok();
}

Status FillTargets(TableTask task, const std::vector<const TextTable*>& parts, const std::vector<Table*>& outs) {
  if (task == TableTask::kClassification || task == TableTask::kClustering) {
    if (task == TableTask::kClassification) {
      for (size_t k = 0; k < parts.size(); ++k) GEOMX_RETURN_IF_ERROR(CheckClassLabels(*parts[k], outs[k]->source));
    }
    EncodeLabels(parts, outs);
    return Status::Ok();
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    GEOMX_RETURN_IF_ERROR(ParseTargets(*parts[k], outs[k]));
    if (task == TableTask::kRanking) {
      if (!parts[k]->has_qid) {
        return Status::InvalidArgument(outs[k]->source +
                                       ": ranking needs query ids (qid:N after the label of every line)");
      }
      for (size_t i = 0; i < parts[k]->lines.size(); ++i) {
        if (outs[k]->qids[i] < 0) {
          return Status::InvalidArgument(outs[k]->source + ":" + std::to_string(parts[k]->lines[i]) +
                                         ": this line has no qid (ranking needs one on every line)");
        }
      }
    } else {
      outs[k]->qids.clear();
    }
  }
  return Status::Ok();
}

Result<TableSplits> OpenTextTables(const DataConfig& config, TableTask task) {
  if (config.path.empty() || config.path == "auto") {
    return Status::InvalidArgument("data.path: " + config.name + " reads a file you name (got '" + config.path + "')");
  }
  const int64_t width = config.name == "libsvm" ? config.num_features : 0;
  GEOMX_ASSIGN_OR_RETURN(TextTable train, ReadText(config.path, config, width));
  TableSplits splits;
  if (!config.test_path.empty()) {
    GEOMX_ASSIGN_OR_RETURN(TextTable test, ReadText(config.test_path, config, width));
    const int64_t cols = std::max(train.table.cols, test.table.cols);
    if (config.name == "csv" && train.table.cols != test.table.cols) {
      return Status::InvalidArgument(config.test_path + ": " + std::to_string(test.table.cols) + " features, but " +
                                     config.path + " has " + std::to_string(train.table.cols));
    }
    train.table.cols = test.table.cols = cols;  // libsvm: the widest of the two
    splits.train = std::move(train.table);
    splits.test = std::move(test.table);
    GEOMX_RETURN_IF_ERROR(FillTargets(task, {&train, &test}, {&splits.train, &splits.test}));
    return splits;
  }
  if (train.table.rows < 2) {
    return Status::InvalidArgument(config.path + ": " + std::to_string(train.table.rows) +
                                   " examples; need at least 2 to split off a test set (or give data.test_path)");
  }
  Table all = std::move(train.table);
  GEOMX_RETURN_IF_ERROR(FillTargets(task, {&train}, {&all}));
  std::vector<int64_t> tr, te;
  SplitIndices(all.rows, task == TableTask::kRanking ? all.qids : std::vector<int64_t>{}, config.test_fraction, &tr,
               &te);
  splits.train = all.Select(tr);
  splits.test = all.Select(te);
  return splits;
}

// Image formats: the normalised pixels of each example as one dense row.
Table DenseFromDataset(const Dataset& ds) {
  Table t;
  t.rows = ds.size();
  int64_t cols = 1;
  for (int64_t d : ds.info().example_shape) cols *= d;
  t.cols = cols;
  t.dense.resize(static_cast<size_t>(t.rows * cols));
  t.labels.resize(static_cast<size_t>(t.rows));
  for (int64_t i = 0; i < t.rows; ++i) {
    ds.Get(i, t.dense.data() + i * cols, nullptr);
    t.labels[static_cast<size_t>(i)] = static_cast<int32_t>(ds.Label(i));
  }
  t.num_classes = ds.info().num_classes;
  t.class_names = ds.info().class_names;
  t.source = ds.info().source;
  return t;
}

// friedman1: Friedman (1991) #1, x ~ U[0,1]^10, y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + N(0, 1);
// the last five features are noise.
Table Friedman1(int64_t rows, Rng* rng) {
  Table t;
  t.rows = rows;
  t.cols = 10;
  t.dense.resize(static_cast<size_t>(rows * 10));
  t.targets.resize(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    float* x = t.dense.data() + i * 10;
    for (int j = 0; j < 10; ++j) x[j] = rng->UniformF();
    t.targets[static_cast<size_t>(i)] =
        static_cast<float>(10 * std::sin(M_PI * x[0] * x[1]) + 20 * (x[2] - 0.5) * (x[2] - 0.5) + 10 * x[3] +
                           5 * x[4] + rng->Normal());
  }
  t.source = "friedman1";
  return t;
}

// letor-synthetic: LETOR-style graded relevance. Each query has 20 documents of `features` features ~ N(0, 1) plus
// a query-level offset; relevance 0..4 is the quantised value of a hidden linear score (fixed by the seed) plus
// noise, so a linear ranker can learn it well but not perfectly.
Table LetorSynthetic(int64_t queries, int64_t features, uint64_t seed, int64_t first_qid, Rng* rng) {
  constexpr int64_t kDocs = 20;
  Rng hidden(seed ^ 0x1e7042);
  std::vector<double> w(static_cast<size_t>(features));
  for (auto& v : w) v = hidden.Normal();
  Table t;
  t.rows = queries * kDocs;
  t.cols = features;
  t.dense.resize(static_cast<size_t>(t.rows * features));
  for (int64_t q = 0; q < queries; ++q) {
    std::vector<double> offset(static_cast<size_t>(features));
    for (auto& v : offset) v = 0.5 * rng->Normal();
    for (int64_t d = 0; d < kDocs; ++d) {
      float* x = t.dense.data() + (q * kDocs + d) * features;
      double s = 0;
      for (int64_t j = 0; j < features; ++j) {
        x[j] = static_cast<float>(rng->Normal() + offset[static_cast<size_t>(j)]);
        s += w[static_cast<size_t>(j)] * (x[j] - offset[static_cast<size_t>(j)]);
      }
      s = s / std::sqrt(static_cast<double>(features)) + 0.5 * rng->Normal();
      t.targets.push_back(static_cast<float>(std::clamp(std::floor(s + 1.5), 0.0, 4.0)));
      t.qids.push_back(first_qid + q);
    }
  }
  t.source = "letor-synthetic";
  return t;
}

// ctr-synthetic: click-through-style sparse binary classification. Each row has one active value in each of
// `fields` categorical fields of `values` values (one-hot: column field * values + value, x = 1), values drawn
// log-uniformly (value v with probability about 1 / ((v + 1) ln values): a few frequent values, a long tail, as in
// ad logs); the label is a Bernoulli draw of sigmoid(sum of the active columns' hidden weights), the weights N(0, 1)
// * 2 / sqrt(fields) fixed by the seed. So most columns are rare, a linear model is the right model, and no model
// reaches 100% (the labels are noisy).
Table CtrSynthetic(int64_t rows, int64_t fields, int64_t values, uint64_t seed, Rng* rng) {
  Rng hidden(seed ^ 0xc7c7);
  const int64_t cols = fields * values;
  std::vector<float> w(static_cast<size_t>(cols));
  const double scale = 2.0 / std::sqrt(static_cast<double>(fields));
  for (auto& v : w) v = static_cast<float>(hidden.Normal() * scale);
  Table t;
  t.rows = rows;
  t.cols = cols;
  t.sparse = true;
  t.num_classes = 2;
  t.row_ptr.reserve(static_cast<size_t>(rows + 1));
  t.row_ptr.push_back(0);
  t.col_index.reserve(static_cast<size_t>(rows * fields));
  t.values.assign(static_cast<size_t>(rows * fields), 1.0f);
  t.labels.reserve(static_cast<size_t>(rows));
  const double log_values = std::log(static_cast<double>(values));
  for (int64_t i = 0; i < rows; ++i) {
    double margin = 0;
    for (int64_t f = 0; f < fields; ++f) {
      const int64_t v = std::min<int64_t>(values - 1, static_cast<int64_t>(std::exp(rng->Uniform() * log_values)) - 1);
      const int64_t col = f * values + std::max<int64_t>(0, v);
      t.col_index.push_back(static_cast<int32_t>(col));
      margin += w[static_cast<size_t>(col)];
    }
    t.row_ptr.push_back(static_cast<int64_t>(t.col_index.size()));
    t.labels.push_back(rng->Uniform() < 1.0 / (1.0 + std::exp(-margin)) ? 1 : 0);
  }
  t.source = "ctr-synthetic";
  return t;
}

Result<TableSplits> OpenGenerated(const DataConfig& config, TableTask task) {
  TableSplits s;
  Rng rng(config.synthetic_seed);
  TableTask generated = TableTask::kClassification;
  GeneratedTableTask(config.name, &generated);
  if (!TableTaskSuits(generated, task)) {
    return Status::InvalidArgument("data.name: " + config.name + " is a " + TableTaskName(generated) +
                                   " set; this algorithm does " + TableTaskName(task));
  }
  if (config.name == "ratings-synthetic") return OpenRatingsSynthetic(config);
  if (config.name == "cartpole") return OpenCartPole(config);
  if (config.name == "friedman1") {
    s.train = Friedman1(config.synthetic_train, &rng);
    s.test = Friedman1(config.synthetic_test, &rng);
    return s;
  }
  if (config.name == "ctr-synthetic") {
    // synthetic_shape [fields, values per field]; any other shape (the image default) means 24 x 40,000.
    int64_t fields = 24, values = 40000;
    if (config.synthetic_shape.size() == 2) {
      fields = config.synthetic_shape[0];
      values = config.synthetic_shape[1];
    }
    if (fields < 1 || values < 2 || fields > 1000 || values > (int64_t{1} << 24) || fields * values > INT32_MAX) {
      return Status::InvalidArgument("data.synthetic_shape: ctr-synthetic takes [fields, values per field] with 1..1000 "
                                     "fields, 2..2^24 values and at most 2^31 columns in all");
    }
    s.train = CtrSynthetic(config.synthetic_train, fields, values, config.synthetic_seed, &rng);
    s.test = CtrSynthetic(config.synthetic_test, fields, values, config.synthetic_seed, &rng);
    return s;
  }
  int64_t features = 1;
  for (int64_t d : config.synthetic_shape) features *= d;
  const int64_t train_q = std::max<int64_t>(1, config.synthetic_train / 20);
  s.train = LetorSynthetic(train_q, features, config.synthetic_seed, 0, &rng);
  s.test = LetorSynthetic(std::max<int64_t>(1, config.synthetic_test / 20), features, config.synthetic_seed, train_q,
                          &rng);
  return s;
}

// A csv file without a label column (`geomx predict` input): what was read as the label column is a feature; it is
// put back in its place.
Status LabelColumnAsFeature(const DataConfig& config, TextTable* text) {
  Table& t = text->table;
  const int64_t old_cols = t.cols, cols = old_cols + 1;
  const int64_t at = config.label_column < 0 || config.label_column > old_cols ? old_cols : config.label_column;
  std::vector<float> dense(static_cast<size_t>(t.rows * cols));
  for (int64_t i = 0; i < t.rows; ++i) {
    const std::string& s = text->labels[static_cast<size_t>(i)];
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) {
      return Status::InvalidArgument(t.source + ":" + std::to_string(text->lines[static_cast<size_t>(i)]) + ": '" + s +
                                     "' is not a number");
    }
    float* row = dense.data() + i * cols;
    const float* from = t.dense.data() + i * old_cols;
    std::copy(from, from + at, row);
    row[at] = static_cast<float>(v);
    std::copy(from + at, from + old_cols, row + at + 1);
  }
  t.dense = std::move(dense);
  t.cols = cols;
  text->labels.clear();
  return Status::Ok();
}

Status CheckForTask(const Table& t, TableTask task, const std::string& what) {
  if (t.rows == 0) return Status::InvalidArgument(what + " (" + t.source + ") is empty: no examples");
  if (t.cols == 0) return Status::InvalidArgument(what + " (" + t.source + ") has no features");
  if (task == TableTask::kClassification && what == "the training set") {
    std::vector<int64_t> count(static_cast<size_t>(std::max(t.num_classes, 1)), 0);
    int present = 0;
    for (int32_t l : t.labels) present += count[static_cast<size_t>(l)]++ == 0;
    if (present < 2) {
      return Status::InvalidArgument(what + " (" + t.source + ") has only one class; a classifier needs at least two");
    }
  }
  return t.Validate();
}

}  // namespace

Result<TableSplits> OpenTable(const DataConfig& config, const TableOptions& options) {
  TableSplits splits;
  TableTask generated = TableTask::kClassification;
  if (GeneratedTableTask(config.name, &generated)) {
    GEOMX_ASSIGN_OR_RETURN(splits, OpenGenerated(config, options.task));
  } else if (options.task == TableTask::kControl) {
    return Status::InvalidArgument("data.name: " + config.name + " is a data set; a control algorithm acts in an "
                                   "environment (cartpole)");
  } else if (config.name == "csv" || config.name == "libsvm") {
    GEOMX_ASSIGN_OR_RETURN(splits, OpenTextTables(config, options.task));
  } else if (config.name == "ratings") {
    if (options.task != TableTask::kRegression) {
      return Status::InvalidArgument("data.name: ratings is a regression set (user, item -> rating); this algorithm "
                                     "does " + std::string(TableTaskName(options.task)));
    }
    GEOMX_ASSIGN_OR_RETURN(splits, OpenRatings(config));
  } else {
    if (options.task == TableTask::kRegression || options.task == TableTask::kRanking) {
      return Status::InvalidArgument("data.name: " + config.name + " holds class labels; a " +
                                     TableTaskName(options.task) +
                                     " algorithm needs numeric targets (csv, libsvm, friedman1, letor-synthetic)");
    }
    GEOMX_ASSIGN_OR_RETURN(DatasetSplits ds, OpenDataset(config));
    splits.train = DenseFromDataset(*ds.train);
    splits.test = DenseFromDataset(*ds.test);
  }
  if (options.max_train_rows > 0 && splits.train.rows > options.max_train_rows) {
    std::vector<int64_t> index(static_cast<size_t>(splits.train.rows));
    std::iota(index.begin(), index.end(), 0);
    Rng rng(options.seed ^ 0x5ab5a3);
    for (size_t i = 0; i < static_cast<size_t>(options.max_train_rows); ++i) {
      std::swap(index[i], index[i + rng.Below(index.size() - i)]);
    }
    index.resize(static_cast<size_t>(options.max_train_rows));
    std::sort(index.begin(), index.end());
    splits.train = splits.train.Select(index);
  }
  GEOMX_RETURN_IF_ERROR(CheckForTask(splits.train, options.task, "the training set"));
  GEOMX_RETURN_IF_ERROR(CheckForTask(splits.test, options.task, "the test set"));
  GEOMX_ASSIGN_OR_RETURN(splits.scaler, FitScaler(splits.train, options.scale));
  GEOMX_RETURN_IF_ERROR(ApplyScaler(splits.scaler, &splits.train));
  GEOMX_RETURN_IF_ERROR(ApplyScaler(splits.scaler, &splits.test));
  return splits;
}

Result<Table> ReadTableFile(const std::string& path, const DataConfig& config, TableTask task, int64_t num_features,
                            const std::vector<std::string>& class_names) {
  if (config.name == "ratings" || config.name == "ratings-synthetic") {
    // Lines `user item` (no rating) are accepted; ids the model never saw are fine, ids above its largest are not.
    GEOMX_ASSIGN_OR_RETURN(Table t, ReadRatingsFile(path, {.allow_unrated = true}));
    if (t.cols > num_features) {
      return Status::InvalidArgument(path + ": a user or item id is above " + std::to_string(num_features / 2 - 1) +
                                     ", the largest id of the data the model was trained on");
    }
    t.cols = num_features;
    return t;
  }
  if (config.name != "csv" && config.name != "libsvm") {
    return Status::InvalidArgument(path + ": predict reads csv or libsvm files (the model was trained on " +
                                   config.name + "; give the rows as csv or libsvm)");
  }
  GEOMX_ASSIGN_OR_RETURN(TextTable text, ReadText(path, config, config.name == "libsvm" ? num_features : 0));
  bool unlabelled = false;
  if (config.name == "csv" && text.table.cols + 1 == num_features) {
    GEOMX_RETURN_IF_ERROR(LabelColumnAsFeature(config, &text));
    unlabelled = true;
  }
  Table t = std::move(text.table);
  if (t.rows == 0) return Status::InvalidArgument(path + ": no examples");
  if (t.cols != num_features) {
    return Status::InvalidArgument(path + ": " + std::to_string(t.cols) + " features per row, the model was trained on " +
                                   std::to_string(num_features));
  }
  if (unlabelled) return t;  // features only: nothing to score against
  if (task == TableTask::kRegression || task == TableTask::kRanking) {
    GEOMX_RETURN_IF_ERROR(ParseTargets(text, &t));
    if (task != TableTask::kRanking) t.qids.clear();
    return t;
  }
  t.qids.clear();
  t.labels.resize(text.labels.size());
  t.num_classes = static_cast<int>(class_names.size());
  for (size_t i = 0; i < text.labels.size(); ++i) {
    const std::string& l = text.labels[i];
    int32_t id = -1;
    if (class_names.empty()) {
      char* end = nullptr;
      const long v = std::strtol(l.c_str(), &end, 10);
      if (end == l.c_str() + l.size() && v >= 0 && v < 65536) id = static_cast<int32_t>(v);
    } else {
      for (size_t c = 0; c < class_names.size(); ++c) {
        if (class_names[c] == l) id = static_cast<int32_t>(c);
      }
    }
    t.labels[i] = id;
  }
  return t;
}

}  // namespace geomx::data
