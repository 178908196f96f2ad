// Table: row access, selection and validation; column scalers. Reading files into tables is in table_open.cc.
#include "datasets/table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace geomx::data {

bool GeneratedTableTask(const std::string& name, TableTask* task) {
  if (name == "friedman1") {
    *task = TableTask::kRegression;
  } else if (name == "letor-synthetic") {
    *task = TableTask::kRanking;
  } else if (name == "ctr-synthetic") {
    *task = TableTask::kClassification;
  } else if (name == "ratings-synthetic") {
    *task = TableTask::kRegression;
  } else if (name == "cartpole") {
    *task = TableTask::kControl;
  } else {
    return false;
  }
  return true;
}

std::vector<std::string> GeneratedTableNames() {
  return {"friedman1", "letor-synthetic", "ctr-synthetic", "ratings-synthetic", "cartpole"};
}

bool TableTaskSuits(TableTask generated, TableTask wanted) {
  return generated == wanted || (generated == TableTask::kClassification && wanted == TableTask::kClustering);
}

const char* TableTaskName(TableTask task) {
  switch (task) {
    case TableTask::kClassification:
      return "classification";
    case TableTask::kRegression:
      return "regression";
    case TableTask::kRanking:
      return "ranking";
    case TableTask::kClustering:
      return "clustering";
    case TableTask::kControl:
      return "control";
  }
  return "?";
}

double Table::Dot(int64_t i, const float* w) const {
  double s = 0;
  if (sparse) {
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) s += static_cast<double>(values[p]) * w[col_index[p]];
  } else {
    const float* x = Row(i);
    for (int64_t j = 0; j < cols; ++j) s += static_cast<double>(x[j]) * w[j];
  }
  return s;
}

void Table::Axpy(int64_t i, double a, float* y) const {
  const float af = static_cast<float>(a);
  if (sparse) {
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) y[col_index[p]] += af * values[p];
  } else {
    const float* x = Row(i);
    for (int64_t j = 0; j < cols; ++j) y[j] += af * x[j];
  }
}

double Table::SquaredNorm(int64_t i) const {
  double s = 0;
  if (sparse) {
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) s += static_cast<double>(values[p]) * values[p];
  } else {
    const float* x = Row(i);
    for (int64_t j = 0; j < cols; ++j) s += static_cast<double>(x[j]) * x[j];
  }
  return s;
}

void Table::CopyRow(int64_t i, float* out) const {
  if (sparse) {
    std::fill(out, out + cols, 0.0f);
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) out[col_index[p]] = values[p];
  } else {
    std::copy(Row(i), Row(i) + cols, out);
  }
}

Table Table::Select(const std::vector<int64_t>& index) const {
  Table out;
  out.rows = static_cast<int64_t>(index.size());
  out.cols = cols;
  out.sparse = sparse;
  out.num_classes = num_classes;
  out.class_names = class_names;
  out.source = source;
  if (sparse) {
    out.row_ptr.reserve(index.size() + 1);
    out.row_ptr.push_back(0);
    for (int64_t i : index) {
      out.col_index.insert(out.col_index.end(), col_index.begin() + row_ptr[i], col_index.begin() + row_ptr[i + 1]);
      out.values.insert(out.values.end(), values.begin() + row_ptr[i], values.begin() + row_ptr[i + 1]);
      out.row_ptr.push_back(static_cast<int64_t>(out.values.size()));
    }
  } else {
    out.dense.resize(static_cast<size_t>(out.rows * cols));
    for (size_t r = 0; r < index.size(); ++r) std::copy(Row(index[r]), Row(index[r]) + cols, &out.dense[r * cols]);
  }
  auto pick = [&index](const auto& from, auto* to) {
    if (from.empty()) return;
    to->reserve(index.size());
    for (int64_t i : index) to->push_back(from[static_cast<size_t>(i)]);
  };
  pick(labels, &out.labels);
  pick(targets, &out.targets);
  pick(qids, &out.qids);
  pick(weights, &out.weights);
  return out;
}

Table Table::ToDense() const {
  if (!sparse) return *this;
  Table out = *this;
  out.sparse = false;
  out.row_ptr.clear();
  out.col_index.clear();
  out.values.clear();
  out.dense.assign(static_cast<size_t>(rows * cols), 0.0f);
  for (int64_t i = 0; i < rows; ++i) CopyRow(i, &out.dense[static_cast<size_t>(i * cols)]);
  return out;
}

Table Table::ToSparse() const {
  if (sparse) return *this;
  Table out = *this;
  out.sparse = true;
  out.dense.clear();
  out.row_ptr.assign(1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = Row(i);
    for (int64_t j = 0; j < cols; ++j) {
      if (x[j] != 0.0f) {
        out.col_index.push_back(static_cast<int32_t>(j));
        out.values.push_back(x[j]);
      }
    }
    out.row_ptr.push_back(static_cast<int64_t>(out.values.size()));
  }
  return out;
}

Status Table::Validate() const {
  const std::string where = source.empty() ? std::string("table") : source;
  if (rows < 0 || cols < 0) return Status::InvalidArgument(where + ": negative shape");
  if (sparse) {
    if (row_ptr.size() != static_cast<size_t>(rows + 1) || row_ptr.front() != 0 ||
        row_ptr.back() != static_cast<int64_t>(values.size()) || col_index.size() != values.size()) {
      return Status::InvalidArgument(where + ": inconsistent sparse layout");
    }
    for (int64_t i = 0; i < rows; ++i) {
      if (row_ptr[i + 1] < row_ptr[i]) return Status::InvalidArgument(where + ": row " + std::to_string(i) + " has negative length");
      for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        if (col_index[p] < 0 || col_index[p] >= cols || (p > row_ptr[i] && col_index[p] <= col_index[p - 1])) {
          return Status::InvalidArgument(where + ": row " + std::to_string(i) +
                                         ": feature indices must be ascending and below " + std::to_string(cols));
        }
      }
    }
  } else if (dense.size() != static_cast<size_t>(rows * cols)) {
    return Status::InvalidArgument(where + ": dense values do not match rows x cols");
  }
  auto sized = [this](size_t n) { return n == 0 || n == static_cast<size_t>(rows); };
  if (!sized(labels.size()) || !sized(targets.size()) || !sized(qids.size()) || !sized(weights.size())) {
    return Status::InvalidArgument(where + ": labels, targets, qids and weights need one entry per row");
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes) {
      return Status::InvalidArgument(where + ": row " + std::to_string(i) + ": label " + std::to_string(labels[i]) +
                                     " outside [0, " + std::to_string(num_classes) + ")");
    }
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] >= 0) || !std::isfinite(weights[i])) {
      return Status::InvalidArgument(where + ": row " + std::to_string(i) + ": weight must be finite and >= 0");
    }
  }
  return Status::Ok();
}

const char* ScaleKindName(ScaleKind kind) {
  switch (kind) {
    case ScaleKind::kNone:
      return "none";
    case ScaleKind::kStandard:
      return "standard";
    case ScaleKind::kMinMax:
      return "minmax";
    case ScaleKind::kMaxAbs:
      return "maxabs";
  }
  return "?";
}

bool ParseScaleKind(const std::string& text, ScaleKind* out) {
  for (ScaleKind k : {ScaleKind::kNone, ScaleKind::kStandard, ScaleKind::kMinMax, ScaleKind::kMaxAbs}) {
    if (text == ScaleKindName(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

Result<Scaler> FitScaler(const Table& table, ScaleKind kind) {
  Scaler s;
  s.kind = kind;
  if (kind == ScaleKind::kNone) return s;
  if (kind == ScaleKind::kMinMax && table.sparse) {
    return Status::InvalidArgument(table.source + ": data.scale minmax would make a sparse table dense; use maxabs "
                                   "or standard (sparse tables are scaled without centring)");
  }
  const size_t d = static_cast<size_t>(table.cols);
  s.offset.assign(d, 0.0f);
  s.scale.assign(d, 1.0f);
  // Per-column statistics; a sparse table's only for the columns that occur (its width, up to 2^26, is a number in
  // the file: a few bytes must not size six temporaries of that many doubles). A column that never occurs keeps
  // offset 0 and scale 1, what its implicit zeros give.
  struct Stats {
    double sum = 0, sq = 0, lo = std::numeric_limits<double>::infinity(),
           hi = -std::numeric_limits<double>::infinity(), amax = 0;
    int64_t nonzero = 0;
  };
  std::vector<Stats> dense_stats(table.sparse ? 0 : d);
  std::unordered_map<size_t, Stats> sparse_stats;
  auto visit = [&](size_t j, double v) {
    Stats& st = table.sparse ? sparse_stats[j] : dense_stats[j];
    st.sum += v;
    st.sq += v * v;
    st.lo = std::min(st.lo, v);
    st.hi = std::max(st.hi, v);
    st.amax = std::max(st.amax, std::fabs(v));
    ++st.nonzero;
  };
  for (int64_t i = 0; i < table.rows; ++i) {
    if (table.sparse) {
      for (int64_t p = table.row_ptr[i]; p < table.row_ptr[i + 1]; ++p) visit(table.col_index[p], table.values[p]);
    } else {
      const float* x = table.Row(i);
      for (size_t j = 0; j < d; ++j) visit(j, x[j]);
    }
  }
  const double n = std::max<int64_t>(table.rows, 1);
  auto fit = [&](size_t j, Stats& st) {
    if (table.sparse && st.nonzero < table.rows) {  // implicit zeros
      st.lo = std::min(st.lo, 0.0);
      st.hi = std::max(st.hi, 0.0);
    }
    switch (kind) {
      case ScaleKind::kStandard: {
        const double mean = st.sum / n;
        const double var = std::max(0.0, st.sq / n - mean * mean);
        const double sd = std::sqrt(var);
        s.offset[j] = table.sparse ? 0.0f : static_cast<float>(mean);
        s.scale[j] = sd > 1e-12 ? static_cast<float>(1.0 / sd) : 1.0f;
        break;
      }
      case ScaleKind::kMinMax: {
        const double range = st.hi - st.lo;
        s.offset[j] = std::isfinite(st.lo) ? static_cast<float>(st.lo) : 0.0f;
        s.scale[j] = range > 1e-12 ? static_cast<float>(1.0 / range) : 1.0f;
        break;
      }
      case ScaleKind::kMaxAbs:
        s.scale[j] = st.amax > 1e-12 ? static_cast<float>(1.0 / st.amax) : 1.0f;
        break;
      case ScaleKind::kNone:
        break;
    }
  };
  if (table.sparse) {
    for (auto& [j, st] : sparse_stats) fit(j, st);
  } else {
    for (size_t j = 0; j < d; ++j) fit(j, dense_stats[j]);
  }
  return s;
}

Status ApplyScaler(const Scaler& scaler, Table* table) {
  if (scaler.empty()) return Status::Ok();
  if (static_cast<int64_t>(scaler.scale.size()) != table->cols || scaler.offset.size() != scaler.scale.size()) {
    return Status::InvalidArgument(table->source + ": has " + std::to_string(table->cols) +
                                   " features, the model was trained on " + std::to_string(scaler.scale.size()));
  }
  if (table->sparse) {
    for (size_t p = 0; p < table->values.size(); ++p) {
      const int32_t j = table->col_index[p];
      table->values[p] = (table->values[p] - scaler.offset[j]) * scaler.scale[j];
    }
    return Status::Ok();
  }
  const int64_t d = table->cols;
  for (int64_t i = 0; i < table->rows; ++i) {
    float* x = table->dense.data() + i * d;
    for (int64_t j = 0; j < d; ++j) x[j] = (x[j] - scaler.offset[j]) * scaler.scale[j];
  }
  return Status::Ok();
}

}  // namespace geomx::data
