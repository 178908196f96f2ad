// Table: a whole data set in memory as one matrix, for the classical estimators (algorithms/estimators/).
//
// Rows are examples, columns features. Features are dense (row-major floats) or CSR (LIBSVM files stay sparse).
// Each row carries what the task needs: an integer class label (classification), a float target (regression, and
// the graded relevance of ranking), a query id (ranking) and a weight. Built by OpenTable() from the readers of
// datasets/ (IDX, CIFAR-10, CSV, LIBSVM/SVMlight with qid:, synthetic) or by hand in tests.
//
// A Table is a value: immutable once built, so any number of threads may read it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/data_config.h"
#include "engine/base/status.h"

namespace geomx::data {

// What the labels of a table mean; decides how the label column of CSV/LIBSVM files is read.
enum class TableTask : uint8_t {
  kClassification,  // labels: class ids through LabelEncoder (num_classes >= 1)
  kRegression,      // targets: the label text as a float
  kRanking,         // targets: graded relevance (a float); qids required
  kClustering,      // labels kept when present (for purity / NMI), never used to fit
  kControl,         // reinforcement learning: rows are start states of an environment (datasets/cartpole.h); a
                    // prediction is the return of the policy's episode from the row's state
};
const char* TableTaskName(TableTask task);

// The generated tables OpenTable() knows: friedman1 (regression), letor-synthetic (ranking), ctr-synthetic
// (classification, sparse), ratings-synthetic (regression), cartpole (control: start states of the environment).
// True and the task for one of them; false for any other data.name.
bool GeneratedTableTask(const std::string& name, TableTask* task);
std::vector<std::string> GeneratedTableNames();
// Whether a generated table of task `generated` suits an algorithm of task `wanted` (the same task, or a labelled
// classification table for clustering).
bool TableTaskSuits(TableTask generated, TableTask wanted);

struct Table {
  int64_t rows = 0;
  int64_t cols = 0;
  bool sparse = false;
  // Dense: rows * cols values, row-major. Empty when sparse.
  std::vector<float> dense;
  // CSR (sparse only): row i's entries are [row_ptr[i], row_ptr[i+1]) of col_index / values; columns ascending.
  std::vector<int64_t> row_ptr;
  std::vector<int32_t> col_index;
  std::vector<float> values;

  std::vector<int32_t> labels;            // per row, classification/clustering (may be empty for clustering)
  int num_classes = 0;                    // classification: labels are in [0, num_classes)
  std::vector<std::string> class_names;   // text of each class id when the labels were not 0..K-1 integers
  std::vector<float> targets;             // per row, regression/ranking
  std::vector<int64_t> qids;              // per row, ranking (empty otherwise)
  std::vector<float> weights;             // per row; empty = every weight is 1
  std::string source;                     // where it came from ("train-images-idx3-ubyte.gz", "a.libsvm")

  bool has_labels() const { return !labels.empty(); }
  bool has_targets() const { return !targets.empty(); }
  float weight(int64_t i) const { return weights.empty() ? 1.0f : weights[static_cast<size_t>(i)]; }
  // Row i of a dense table.
  const float* Row(int64_t i) const { return dense.data() + i * cols; }

  // w . x_i  (w has `cols` entries).
  double Dot(int64_t i, const float* w) const;
  // y += a * x_i  (y has `cols` entries).
  void Axpy(int64_t i, double a, float* y) const;
  // ||x_i||^2.
  double SquaredNorm(int64_t i) const;
  // Writes row i densely into out[0..cols).
  void CopyRow(int64_t i, float* out) const;
  // The rows `index` (in that order) as a new table of the same kind, with their labels/targets/qids/weights.
  Table Select(const std::vector<int64_t>& index) const;
  // A dense copy (itself when already dense).
  Table ToDense() const;
  // A CSR copy holding the non-zero values (itself when already sparse).
  Table ToSparse() const;
  // Checks the invariants above (sizes, CSR order, label range); kInvalidArgument naming `source` and the row.
  Status Validate() const;
};

// Column scaling fitted on the training table and applied to every table the model later sees (it is saved with
// the model, so `geomx predict` scales raw input the same way).
enum class ScaleKind : uint8_t {
  kNone,
  kStandard,  // (x - mean) / std per column (std 0 -> 1); sparse tables: x / std, no centring (keeps sparsity)
  kMinMax,    // (x - min) / (max - min) into [0, 1]; sparse: rejected (would densify)
  kMaxAbs,    // x / max|x| into [-1, 1]; keeps sparsity
};
const char* ScaleKindName(ScaleKind kind);
// "none" | "standard" | "minmax" | "maxabs"; false for anything else.
bool ParseScaleKind(const std::string& text, ScaleKind* out);

struct Scaler {
  ScaleKind kind = ScaleKind::kNone;
  std::vector<float> offset;  // per column, subtracted first
  std::vector<float> scale;   // per column, then multiplied
  bool empty() const { return kind == ScaleKind::kNone; }
};
// Fits `kind` on `table`. kInvalidArgument for minmax on a sparse table.
Result<Scaler> FitScaler(const Table& table, ScaleKind kind);
// Applies the scaler in place. kInvalidArgument when the column counts differ.
Status ApplyScaler(const Scaler& scaler, Table* table);

struct TableOptions {
  TableTask task = TableTask::kClassification;
  ScaleKind scale = ScaleKind::kNone;
  // Keep at most this many training rows (0 = all): a fixed-seed random subsample, taken before scaling.
  int64_t max_train_rows = 0;
  uint64_t seed = 42;
};

struct TableSplits {
  Table train;
  Table test;
  Scaler scaler;  // fitted on train, already applied to both
};

// Opens the data set `config` names as two tables. csv/libsvm files are parsed here so that regression and ranking
// targets keep their float values (errors "file:line: ..." from the parsers, "file:line: label 'x' is not a number"
// for a regression target); a test split is cut off as DataConfig::test_fraction says when there is no test file
// (queries stay whole). Image formats (idx, cifar10, image-folder, synthetic) become dense tables of their
// normalised pixels, for classification and clustering only. Errors: kInvalidArgument (a task the format cannot
// serve, an empty table, a classifier given one class), plus whatever OpenDataset() reports.
Result<TableSplits> OpenTable(const DataConfig& config, const TableOptions& options);

// Reads one file for `geomx predict` / `geomx eval`: the whole file as one table in the layout of the training data
// (`config.name`: csv or libsvm; idx/cifar10 files are not accepted here). Classification labels are encoded with
// `class_names` (the model's; empty = the labels are the integers 0..K-1); a label the model never saw is kept as
// -1. `num_features` fixes the column count: a wider csv row, or a libsvm index above it, is an error naming the
// file and line (a narrower libsvm row is fine: the missing features are zero).
Result<Table> ReadTableFile(const std::string& path, const DataConfig& config, TableTask task, int64_t num_features,
                            const std::vector<std::string>& class_names);

}  // namespace geomx::data
